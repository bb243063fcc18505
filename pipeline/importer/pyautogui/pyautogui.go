// Package pyautogui turns the actions computer-use agents log into typed
// schemas.Action values: pyautogui scripts (OSWorld's pyautogui action
// space), the special answers DONE, FAIL and WAIT, and OSWorld's computer_13
// action dictionaries. Pixel coordinates map to the 1000x1000 action grid
// through the screen size. A script that does not reduce to one action is an
// error; importers then keep it as kind "unknown" with the raw text.
package pyautogui

import (
	"fmt"
	"math"
	"strings"

	"github.com/cualake/cualake/schemas"
)

// Grid is the side of the action grid (see simdesk/action, whose ToGrid this
// mirrors so imported and simulated coordinates agree).
const Grid = 1000

// DefaultWidth and DefaultHeight are OSWorld's screen size, used when no
// screenshot tells the real one.
const (
	DefaultWidth  = 1920
	DefaultHeight = 1080
)

// ToGrid maps pixel p on a screen side of size pixels to the grid.
func ToGrid(p float64, size int) int32 {
	if size <= 0 || math.IsNaN(p) {
		return 0
	}
	px := int64(math.Round(math.Max(math.Min(p, 1e9), -1e9)))
	g := (px*Grid + int64(size) - 1) / int64(size)
	return int32(min(max(g, 0), Grid))
}

// Parse translates one action as logged: "DONE", "FAIL", "WAIT", or a
// pyautogui script, on a screen of width x height pixels.
func Parse(src string, width, height int) (schemas.Action, error) {
	if width <= 0 || height <= 0 {
		width, height = DefaultWidth, DefaultHeight
	}
	switch strings.TrimSpace(src) {
	case "DONE":
		return schemas.Action{Kind: "done"}, nil
	case "FAIL":
		return schemas.Action{Kind: "fail"}, nil
	case "WAIT":
		return schemas.Action{Kind: "wait"}, nil
	case "":
		return schemas.Action{}, fmt.Errorf("empty action")
	}
	toks, err := lex(src)
	if err != nil {
		return schemas.Action{}, err
	}
	calls, err := (&parser{toks: toks}).statements()
	if err != nil {
		return schemas.Action{}, err
	}
	t := &translator{w: width, h: height}
	for i := range calls {
		if err := t.call(&calls[i]); err != nil {
			return schemas.Action{}, fmt.Errorf("%s: %w", calls[i].name, err)
		}
	}
	if len(t.held) > 0 && len(t.out) == 0 {
		return schemas.Action{}, fmt.Errorf("keys held but nothing pressed")
	}
	switch len(t.out) {
	case 0:
		if t.slept {
			return schemas.Action{Kind: "wait"}, nil
		}
		return schemas.Action{}, fmt.Errorf("no action in script")
	case 1:
		return t.out[0], nil
	}
	// A move followed by a drag from there is one drag.
	if len(t.out) == 2 && t.out[0].Kind == "move" && t.out[1].Kind == "drag" && t.out[1].X != nil {
		return t.out[1], nil
	}
	return schemas.Action{}, fmt.Errorf("script makes %d actions", len(t.out))
}

type point struct{ x, y float64 }

type translator struct {
	w, h  int
	pos   *point // mouse position in pixels, when the script set it
	down  *point // where the left button went down
	held  []string
	slept bool
	out   []schemas.Action
}

func (t *translator) at(kind string, p *point) schemas.Action {
	a := schemas.Action{Kind: kind}
	if p != nil {
		x, y := ToGrid(p.x, t.w), ToGrid(p.y, t.h)
		a.X, a.Y = &x, &y
	}
	return a
}

// point reads a position from positional arguments i, i+1 (or a tuple at
// i) or keywords x, y; nil when absent.
func (t *translator) point(c *call, i int) (*point, error) {
	xv, okx := c.arg(i, "x")
	if !okx || xv.kind == vNone {
		return nil, nil
	}
	if xv.kind == vList {
		if len(xv.list) != 2 || xv.list[0].kind != vNum || xv.list[1].kind != vNum {
			return nil, fmt.Errorf("want an (x, y) pair")
		}
		return &point{xv.list[0].num, xv.list[1].num}, nil
	}
	yv, oky := c.arg(i+1, "y")
	if xv.kind != vNum || !oky || yv.kind != vNum {
		return nil, fmt.Errorf("want numeric x and y")
	}
	return &point{xv.num, yv.num}, nil
}

func intArg(c *call, i int, name string, def int) (int, error) {
	v, ok := c.arg(i, name)
	if !ok || v.kind == vNone {
		return def, nil
	}
	if v.kind != vNum || math.Abs(v.num) > 1e6 {
		return 0, fmt.Errorf("%s is not a number", name)
	}
	return int(math.Round(v.num)), nil
}

func strArg(c *call, i int, name, def string) (string, error) {
	v, ok := c.arg(i, name)
	if !ok || v.kind == vNone {
		return def, nil
	}
	if v.kind != vStr {
		return "", fmt.Errorf("%s is not a string", name)
	}
	return v.str, nil
}

// normKey folds key names the way pyautogui does: names of several letters
// are case-insensitive, single characters keep their case.
func normKey(k string) string {
	switch k {
	case "\n", "\r":
		return "enter"
	case "\t":
		return "tab"
	case " ":
		return "space"
	}
	if len([]rune(k)) > 1 {
		return strings.ToLower(k)
	}
	return k
}

func keyList(v value) ([]string, error) {
	switch v.kind {
	case vStr:
		return []string{normKey(v.str)}, nil
	case vList:
		var out []string
		for _, e := range v.list {
			if e.kind != vStr {
				return nil, fmt.Errorf("key is not a string")
			}
			out = append(out, normKey(e.str))
		}
		return out, nil
	}
	return nil, fmt.Errorf("keys are not strings")
}

func (t *translator) call(c *call) error {
	name := strings.TrimPrefix(c.name, "pyautogui.")
	switch name {
	case "time.sleep", "sleep":
		t.slept = true
		return nil
	case "position", "size", "screenshot", "onScreen", "print":
		return nil
	case "click", "leftClick", "doubleClick", "tripleClick", "rightClick", "middleClick":
		p, err := t.point(c, 0)
		if err != nil {
			return err
		}
		kind := map[string]string{"click": "click", "leftClick": "click", "doubleClick": "double_click",
			"tripleClick": "triple_click", "rightClick": "right_click", "middleClick": "middle_click"}[name]
		if name == "click" {
			clicks, err := intArg(c, 2, "clicks", 1)
			if err != nil {
				return err
			}
			button, err := strArg(c, 4, "button", "left")
			if err != nil {
				return err
			}
			switch {
			case button == "right" || button == "secondary":
				kind = "right_click"
			case button == "middle":
				kind = "middle_click"
			case clicks == 2:
				kind = "double_click"
			case clicks == 3:
				kind = "triple_click"
			case clicks != 1:
				return fmt.Errorf("%d clicks", clicks)
			}
		}
		if p == nil {
			p = t.pos
		}
		t.pos = p
		t.out = append(t.out, t.at(kind, p))
	case "moveTo":
		p, err := t.point(c, 0)
		if err != nil || p == nil {
			return fmt.Errorf("moveTo needs x and y")
		}
		t.pos = p
		if t.down != nil {
			return nil // part of a mouseDown ... mouseUp drag
		}
		t.out = append(t.out, t.at("move", p))
	case "dragTo":
		p, err := t.point(c, 0)
		if err != nil || p == nil {
			return fmt.Errorf("dragTo needs x and y")
		}
		a := t.at("drag", t.pos)
		if len(t.out) > 0 && t.out[len(t.out)-1].Kind == "move" {
			t.out = t.out[:len(t.out)-1]
		}
		x2, y2 := ToGrid(p.x, t.w), ToGrid(p.y, t.h)
		a.X2, a.Y2 = &x2, &y2
		t.pos = p
		t.out = append(t.out, a)
	case "mouseDown":
		p, err := t.point(c, 0)
		if err != nil {
			return err
		}
		if p == nil {
			p = t.pos
		}
		if p == nil {
			return fmt.Errorf("mouseDown at an unknown position")
		}
		if len(t.out) > 0 && t.out[len(t.out)-1].Kind == "move" {
			t.out = t.out[:len(t.out)-1] // the move is the drag's start
		}
		t.down, t.pos = p, p
	case "mouseUp":
		p, err := t.point(c, 0)
		if err != nil {
			return err
		}
		if p == nil {
			p = t.pos
		}
		if t.down == nil || p == nil {
			return fmt.Errorf("mouseUp without mouseDown")
		}
		a := t.at("drag", t.down)
		x2, y2 := ToGrid(p.x, t.w), ToGrid(p.y, t.h)
		a.X2, a.Y2 = &x2, &y2
		t.down, t.pos = nil, p
		t.out = append(t.out, a)
	case "scroll", "vscroll", "hscroll":
		n, err := intArg(c, 0, "clicks", 0)
		if err != nil {
			return err
		}
		p, err := t.point(c, 1)
		if err != nil {
			return err
		}
		dir := "up"
		if n < 0 {
			dir, n = "down", -n
		}
		if name == "hscroll" {
			dir = map[string]string{"up": "right", "down": "left"}[dir]
		}
		a := t.at("scroll", p)
		a.Direction, a.Amount = dir, int32(n)
		t.out = append(t.out, a)
	case "typewrite", "write":
		v, ok := c.arg(0, "message")
		if !ok {
			return fmt.Errorf("nothing to type")
		}
		if v.kind == vStr {
			t.out = append(t.out, schemas.Action{Kind: "type", Text: v.str})
			return nil
		}
		keys, err := keyList(v)
		if err != nil {
			return err
		}
		return t.press(keys, 1)
	case "press":
		v, ok := c.arg(0, "keys")
		if !ok {
			return fmt.Errorf("no key")
		}
		keys, err := keyList(v)
		if err != nil {
			return err
		}
		n, err := intArg(c, 1, "presses", 1)
		if err != nil {
			return err
		}
		return t.press(keys, n)
	case "hotkey":
		var keys []string
		for _, a := range c.args {
			k, err := keyList(a)
			if err != nil {
				return err
			}
			keys = append(keys, k...)
		}
		if len(keys) == 0 {
			return fmt.Errorf("no keys")
		}
		t.out = append(t.out, schemas.Action{Kind: "hotkey", Keys: append(append([]string(nil), t.held...), keys...)})
	case "keyDown":
		k, err := strArg(c, 0, "key", "")
		if err != nil || k == "" {
			return fmt.Errorf("no key")
		}
		t.held = append(t.held, normKey(k))
	case "keyUp":
		k, err := strArg(c, 0, "key", "")
		if err != nil || k == "" {
			return fmt.Errorf("no key")
		}
		k = normKey(k)
		for i, h := range t.held {
			if h == k {
				t.held = append(t.held[:i], t.held[i+1:]...)
				return nil
			}
		}
		if len(t.out) == 0 {
			return fmt.Errorf("keyUp of a key not held")
		}
	default:
		return fmt.Errorf("unsupported call")
	}
	return nil
}

// press adds key presses; with modifiers held by keyDown they form a hotkey.
func (t *translator) press(keys []string, n int) error {
	if len(keys) == 0 || n < 1 {
		return fmt.Errorf("no key pressed")
	}
	if len(t.held) > 0 {
		if len(keys) != 1 || n != 1 {
			return fmt.Errorf("several keys pressed while holding %v", t.held)
		}
		t.out = append(t.out, schemas.Action{Kind: "hotkey", Keys: append(append([]string(nil), t.held...), keys[0])})
		return nil
	}
	for _, k := range keys[1:] {
		if k != keys[0] {
			return fmt.Errorf("several different keys pressed")
		}
	}
	a := schemas.Action{Kind: "key", Keys: []string{keys[0]}}
	if total := n * len(keys); total > 1 {
		a.Amount = int32(total)
	}
	t.out = append(t.out, a)
	return nil
}
