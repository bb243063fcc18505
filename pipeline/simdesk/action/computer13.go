package action

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/cualake/cualake/schemas"
)

// ParseComputer13 translates an action of OSWorld's computer_13 action
// space ({"action_type": "CLICK", "parameters": {...}}, or with the
// parameters inline) into the action a trajectory records, as
// ParsePyAutoGUISteps does for a pyautogui script: pixel coordinates map to
// the grid through the screen size, key names are canonical (CanonicalKey)
// and scroll amounts are at most MaxRepeat. MOUSE_DOWN, MOUSE_UP, KEY_DOWN
// and KEY_UP, which are halves of an action, are errors.
func ParseComputer13(raw []byte, screen Screen) (schemas.Action, error) {
	if screen.Width <= 0 || screen.Height <= 0 {
		return schemas.Action{}, fmt.Errorf("computer_13: screen size %dx%d", screen.Width, screen.Height)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return schemas.Action{}, fmt.Errorf("computer_13: %w", err)
	}
	typ, _ := m["action_type"].(string)
	if p, ok := m["parameters"].(map[string]any); ok {
		for k, v := range p {
			m[k] = v
		}
	}
	num := func(k string) (float64, bool) {
		v, ok := m[k].(float64)
		return v, ok && !math.IsNaN(v) && math.Abs(v) < 1e9
	}
	str := func(k string) string { s, _ := m[k].(string); return s }
	grid := func(x, y float64) (*int32, *int32) {
		return i32(ToGrid(int(math.Round(x)), screen.Width)), i32(ToGrid(int(math.Round(y)), screen.Height))
	}
	pt := func(a *schemas.Action) {
		x, okx := num("x")
		y, oky := num("y")
		if okx && oky {
			a.X, a.Y = grid(x, y)
		}
	}
	var a schemas.Action
	switch strings.ToUpper(typ) {
	case "CLICK":
		a.Kind = Click
		switch n, _ := num("num_clicks"); {
		case str("button") == "right":
			a.Kind = RightClick
		case str("button") == "middle":
			a.Kind = MiddleClick
		case n == 2:
			a.Kind = DoubleClick
		case n == 3:
			a.Kind = TripleClick
		}
		pt(&a)
	case "RIGHT_CLICK":
		a.Kind = RightClick
		pt(&a)
	case "DOUBLE_CLICK":
		a.Kind = DoubleClick
		pt(&a)
	case "MOVE_TO":
		a.Kind = Move
		pt(&a)
	case "DRAG_TO":
		a.Kind = Drag
		x, okx := num("x")
		y, oky := num("y")
		if !okx || !oky {
			return a, fmt.Errorf("computer_13: DRAG_TO needs x and y")
		}
		a.X2, a.Y2 = grid(x, y)
	case "SCROLL":
		a.Kind = Scroll
		dy, _ := num("dy")
		dx, _ := num("dx")
		n := func(v float64) int32 { return int32(min(math.Abs(v), MaxRepeat)) }
		switch {
		case dy > 0:
			a.Direction, a.Amount = "up", n(dy)
		case dy < 0:
			a.Direction, a.Amount = "down", n(dy)
		case dx > 0:
			a.Direction, a.Amount = "right", n(dx)
		case dx < 0:
			a.Direction, a.Amount = "left", n(dx)
		default:
			return a, fmt.Errorf("computer_13: SCROLL without dx or dy")
		}
	case "TYPING":
		a.Kind, a.Text = Type, str("text")
	case "PRESS":
		a.Kind, a.Keys = Key, []string{CanonicalKey(str("key"))}
	case "HOTKEY":
		a.Kind = Hotkey
		keys, _ := m["keys"].([]any)
		for _, k := range keys {
			s, ok := k.(string)
			if !ok {
				return a, fmt.Errorf("computer_13: HOTKEY key is not a string")
			}
			a.Keys = append(a.Keys, CanonicalKey(s))
		}
		if len(a.Keys) == 0 {
			return a, fmt.Errorf("computer_13: HOTKEY without keys")
		}
	case "WAIT":
		a.Kind = Wait
	case "DONE":
		a.Kind = Done
	case "FAIL":
		a.Kind = Fail
	default:
		return a, fmt.Errorf("computer_13: unsupported action_type %q", typ)
	}
	return a, nil
}
