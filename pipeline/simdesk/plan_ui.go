package simdesk

import (
	"fmt"
	"image"

	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/schemas"
)

// UI moves the planner's goals share. Each returns the next action toward a
// small sub-goal and whether one is needed, so goals read as closed loops:
// "if not there yet, take one step toward it".

func gridPoint(d *Desktop, p image.Point) (int, int) {
	return action.ToGrid(p.X, d.S.Width), action.ToGrid(p.Y, d.S.Height)
}

func pointAction(d *Desktop, kind string, p image.Point) schemas.Action {
	x, y := gridPoint(d, p)
	return action.At(kind, x, y)
}

// clickID clicks the centre of the widget with that id (kind: click,
// double_click, right_click...).
func clickID(d *Desktop, kind, id string) (schemas.Action, error) {
	n := d.View().Find(id)
	if n == nil {
		return schemas.Action{}, fmt.Errorf("widget %s is not on screen", id)
	}
	return pointAction(d, kind, n.Center()), nil
}

func key(name string) schemas.Action       { return action.KeyAction(name, 1) }
func hotkey(keys ...string) schemas.Action { return action.HotkeyAction(keys...) }
func typeText(s string) schemas.Action     { return action.TypeAction(s) }

// focusApp makes an app's window the focused one. Open menus are left
// alone: a goal that needs one keeps it, and a click elsewhere closes it.
func focusApp(d *Desktop, id string) (schemas.Action, bool, error) {
	if d.S.Focused() != id {
		a, err := clickID(d, "click", "dock/"+id)
		return a, true, err
	}
	return schemas.Action{}, false, nil
}

// fillField types want into a focused field: select what is there, then
// type over it; submit adds Enter.
func fillField(f *Field, want string, submit bool) schemas.Action {
	switch {
	case f.Text == want && !f.All:
		if submit {
			return key("enter")
		}
		return key("end")
	case f.All || f.Text == "":
		if want == "" {
			return key("backspace")
		}
		if submit {
			return typeText(want + "\n")
		}
		return typeText(want)
	}
	return hotkey("ctrl", "a")
}

// menuCommand opens a menu of the menu bar and picks an item.
func menuCommand(d *Desktop, appID, menu, cmd string) (schemas.Action, error) {
	if *appByID(appID).openMenu(&d.S) != menu {
		return clickID(d, "click", appID+"/menu:"+menu)
	}
	return clickID(d, "click", appID+"/pop:"+cmd)
}

// scrollToward scrolls a list at a widget so that row idx comes into a view
// of visible rows starting at top; notch is rows per scroll notch.
func scrollToward(d *Desktop, id string, idx, top, visible, notch int) (schemas.Action, error) {
	n := d.View().Find(id)
	if n == nil {
		return schemas.Action{}, fmt.Errorf("widget %s is not on screen", id)
	}
	x, y := gridPoint(d, n.Center())
	if idx < top {
		return action.ScrollAt("up", min((top-idx+notch-1)/notch, action.MaxRepeat), x, y), nil
	}
	return action.ScrollAt("down", min((idx-(top+visible-1)+notch-1)/notch, action.MaxRepeat), x, y), nil
}
