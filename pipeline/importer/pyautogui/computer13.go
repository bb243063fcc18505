package pyautogui

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/cualake/cualake/schemas"
)

// ParseComputer13 translates an action of OSWorld's computer_13 action space
// ({"action_type": "CLICK", "parameters": {...}}, or with the parameters
// inline) on a screen of width x height pixels.
func ParseComputer13(raw []byte, width, height int) (schemas.Action, error) {
	if width <= 0 || height <= 0 {
		width, height = DefaultWidth, DefaultHeight
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return schemas.Action{}, err
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
	pt := func(a *schemas.Action) {
		x, okx := num("x")
		y, oky := num("y")
		if okx && oky {
			gx, gy := ToGrid(x, width), ToGrid(y, height)
			a.X, a.Y = &gx, &gy
		}
	}
	var a schemas.Action
	switch strings.ToUpper(typ) {
	case "CLICK":
		a.Kind = "click"
		switch str("button") {
		case "right":
			a.Kind = "right_click"
		case "middle":
			a.Kind = "middle_click"
		}
		if n, ok := num("num_clicks"); ok && n == 2 {
			a.Kind = "double_click"
		} else if ok && n == 3 {
			a.Kind = "triple_click"
		}
		pt(&a)
	case "RIGHT_CLICK":
		a.Kind = "right_click"
		pt(&a)
	case "DOUBLE_CLICK":
		a.Kind = "double_click"
		pt(&a)
	case "MOVE_TO":
		a.Kind = "move"
		pt(&a)
	case "DRAG_TO":
		a.Kind = "drag"
		x, okx := num("x")
		y, oky := num("y")
		if !okx || !oky {
			return a, fmt.Errorf("DRAG_TO needs x and y")
		}
		gx, gy := ToGrid(x, width), ToGrid(y, height)
		a.X2, a.Y2 = &gx, &gy
	case "SCROLL":
		a.Kind = "scroll"
		dy, _ := num("dy")
		dx, _ := num("dx")
		switch {
		case dy > 0:
			a.Direction, a.Amount = "up", int32(dy)
		case dy < 0:
			a.Direction, a.Amount = "down", int32(-dy)
		case dx > 0:
			a.Direction, a.Amount = "right", int32(dx)
		case dx < 0:
			a.Direction, a.Amount = "left", int32(-dx)
		default:
			return a, fmt.Errorf("SCROLL without dx or dy")
		}
	case "TYPING":
		a.Kind, a.Text = "type", str("text")
	case "PRESS":
		a.Kind, a.Keys = "key", []string{normKey(str("key"))}
	case "HOTKEY":
		a.Kind = "hotkey"
		keys, _ := m["keys"].([]any)
		for _, k := range keys {
			s, ok := k.(string)
			if !ok {
				return a, fmt.Errorf("HOTKEY key is not a string")
			}
			a.Keys = append(a.Keys, normKey(s))
		}
		if len(a.Keys) == 0 {
			return a, fmt.Errorf("HOTKEY without keys")
		}
	case "WAIT":
		a.Kind = "wait"
	case "DONE":
		a.Kind = "done"
	case "FAIL":
		a.Kind = "fail"
	default:
		return a, fmt.Errorf("unsupported action_type %q", typ)
	}
	return a, nil
}
