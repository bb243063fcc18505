package action

import (
	"strings"

	"github.com/cualake/cualake/schemas"
)

// CanonicalKey returns NormalizeKey's name for k, or, for a key it does not
// know, k lower-cased when it is a name of several characters (pyautogui
// folds those) and k itself otherwise. Recorded actions keep keys the
// simulator refuses, so that the environment, not the parser, says why.
func CanonicalKey(k string) string {
	if c, err := NormalizeKey(k); err == nil {
		return c
	}
	if len([]rune(k)) > 1 {
		return strings.ToLower(k)
	}
	return k
}

// fold reduces the actions of one script to the fewest with the same effect
// on the desktop (see ParsePyAutoGUISteps).
func fold(acts []schemas.Action) []schemas.Action {
	var out []schemas.Action
	for _, a := range acts {
		if a.Kind == Wait {
			continue
		}
		if a.Kind == Key || a.Kind == Hotkey {
			keys := make([]string, len(a.Keys))
			for i, k := range a.Keys {
				keys[i] = CanonicalKey(k)
			}
			a.Keys = keys
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		if len(acts) > 0 {
			return []schemas.Action{Simple(Wait)}
		}
		return nil
	}
	var res []schemas.Action
	for i, a := range out {
		if a.Kind == Move && a.X != nil && a.Y != nil && i+1 < len(out) {
			n := &out[i+1]
			atMouse := (pointer(n.Kind) || n.Kind == Scroll) && n.X == nil && n.Y == nil
			switch {
			case atMouse:
				n.X, n.Y = a.X, a.Y // the next action happens where this one moved to
				continue
			case n.Kind == Move || pointer(n.Kind) || n.Kind == Scroll && n.X != nil:
				continue // the next action moves the mouse first
			}
		}
		if len(res) > 0 {
			last := &res[len(res)-1]
			switch {
			case a.Kind == Key && last.Kind == Key && len(a.Keys) == 1 && len(last.Keys) == 1 && a.Keys[0] == last.Keys[0] &&
				presses(*last)+presses(a) <= MaxRepeat:
				last.Amount = int32(presses(*last) + presses(a))
				continue
			case a.Kind == Type && last.Kind == Type && len(last.Text)+len(a.Text) <= MaxText:
				last.Text += a.Text
				continue
			}
		}
		res = append(res, a)
	}
	return res
}

// presses is how many times a key action presses its key.
func presses(a schemas.Action) int { return max(int(a.Amount), 1) }
