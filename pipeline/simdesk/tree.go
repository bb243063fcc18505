package simdesk

import (
	"strconv"
	"unicode/utf8"

	"github.com/cualake/cualake/pipeline/simdesk/action"
)

// Tree returns the accessibility tree of the current state as JSON, without
// rendering pixels. Each node has role, name, value (when set), bounds
// [x, y, w, h] in screen pixels, center [x, y] on the 1000x1000 action grid,
// states and children; nodes that react to input also have an id. The
// encoding is written by hand: it is on the hot path of tree-only rollouts
// and its bytes must be identical for identical states.
func (d *Desktop) Tree() []byte {
	buf := make([]byte, 0, 32<<10)
	return d.appendNode(buf, d.View())
}

func (d *Desktop) appendNode(b []byte, n *Node) []byte {
	b = append(b, '{')
	if n.ID != "" {
		b = append(b, `"id":`...)
		b = appendJSONString(b, n.ID)
		b = append(b, ',')
	}
	b = append(b, `"role":`...)
	b = appendJSONString(b, n.Role)
	if n.Name != "" {
		b = append(b, `,"name":`...)
		b = appendJSONString(b, n.Name)
	}
	if n.Value != "" {
		b = append(b, `,"value":`...)
		b = appendJSONString(b, n.Value)
	}
	r := n.Rect
	b = append(b, `,"bounds":[`...)
	b = strconv.AppendInt(b, int64(r.Min.X), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.Min.Y), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.Dx()), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.Dy()), 10)
	b = append(b, `],"center":[`...)
	c := n.Center()
	b = strconv.AppendInt(b, int64(action.ToGrid(min(max(c.X, 0), d.S.Width-1), d.S.Width)), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(action.ToGrid(min(max(c.Y, 0), d.S.Height-1), d.S.Height)), 10)
	b = append(b, ']')
	if n.States&^stDrawOnly != 0 {
		b = append(b, `,"states":[`...)
		first := true
		for _, s := range stateNames {
			if n.States&s.bit != 0 {
				if !first {
					b = append(b, ',')
				}
				first = false
				b = appendJSONString(b, s.name)
			}
		}
		b = append(b, ']')
	}
	first := true
	for _, ch := range n.Children {
		if ch.States&stDrawOnly != 0 {
			continue
		}
		if first {
			b = append(b, `,"children":[`...)
			first = false
		} else {
			b = append(b, ',')
		}
		b = d.appendNode(b, ch)
	}
	if !first {
		b = append(b, ']')
	}
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string, escaping like encoding/json
// (minus its HTML escaping, which a tree never needs).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else if r == '\u2028' || r == '\u2029' {
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&15])
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
