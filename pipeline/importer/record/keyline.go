package record

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// KeyLine returns the 1-based line of the deepest key of raw that lies on
// path (object keys, or decimal indexes into arrays), so that an error about
// evaluator.result[1] points at the line holding it. It returns 1 when not
// even the first element of path is found.
func KeyLine(raw []byte, path ...string) int {
	type frame struct {
		obj     bool
		wantKey bool
		key     string
		idx     int
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var stack []frame
	best, bestDepth := 1, 0
	afterValue := func() {
		if len(stack) == 0 {
			return
		}
		top := &stack[len(stack)-1]
		if top.obj {
			top.wantKey = true
		} else {
			top.idx++
		}
	}
	matched := func() int {
		n := 0
		for i, f := range stack {
			if i >= len(path) {
				break
			}
			name := f.key
			if !f.obj {
				name = strconv.Itoa(f.idx)
			}
			if name != path[i] {
				break
			}
			n++
		}
		return n
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return best
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{':
				stack = append(stack, frame{obj: true, wantKey: true})
			case '[':
				stack = append(stack, frame{})
			default:
				if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
				afterValue()
			}
			continue
		}
		if len(stack) == 0 {
			return best
		}
		top := &stack[len(stack)-1]
		if top.obj && top.wantKey {
			top.key, top.wantKey = tok.(string), false
			if n := matched(); n == len(stack) && n > bestDepth {
				best, bestDepth = LineAt(raw, dec.InputOffset()), n
			}
			continue
		}
		afterValue()
	}
}
