package verify

import (
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/schemas"
)

// The read-only guard classifies a Probe action against the screen it was
// aimed at, before it runs, the way a guard in front of a real desktop
// would: navigation, opening, selecting, scrolling and reading pass;
// anything that would save, delete, rename, move, paste, type into a
// document, toggle or pick a setting, send or discard mail is refused.
// Live.Act adds a simulator-level safety net behind it.

// allowedKeys are the keys and combinations that only move around.
var allowedKeys = map[string]bool{
	"escape": true, "up": true, "down": true, "left": true, "right": true, "pageup": true, "pagedown": true,
	"home": true, "end": true, "tab": true, "shift+tab": true, "alt+up": true, "alt+home": true,
	"ctrl+home": true, "ctrl+end": true, "alt+tab": true,
}

// allowedPop are the menu commands that only navigate or open.
var allowedPop = map[string]bool{"open": true, "up": true, "home": true}

// hit returns the path from the root to the deepest uncovered node at a
// grid point, upper siblings first as they are drawn on top.
func (s *Screen) hit(gx, gy int) []*Node {
	w, h := s.Root.Bounds[2], s.Root.Bounds[3]
	x, y := action.ToPixel(gx, w), action.ToPixel(gy, h)
	var walk func(n *Node) []*Node
	walk = func(n *Node) []*Node {
		for i := len(n.Children) - 1; i >= 0; i-- {
			if p := walk(n.Children[i]); p != nil {
				return append([]*Node{n}, p...)
			}
		}
		if n.contains(x, y) {
			return []*Node{n}
		}
		return nil
	}
	return walk(s.Root)
}

// target is the nearest node with an id on the path to a point.
func (s *Screen) target(gx, gy int) *Node {
	p := s.hit(gx, gy)
	for i := len(p) - 1; i >= 0; i-- {
		if p[i].ID != "" {
			return p[i]
		}
	}
	return nil
}

// focusedEditable is the focused editable node, or nil.
func (s *Screen) focusedEditable() *Node {
	for _, n := range s.nodes {
		if n.Has("focused") && (n.Has("editable") || n.Role == "slider") {
			return n
		}
	}
	return nil
}

// dialogOf returns the dialog node of an app's window, or nil.
func (s *Screen) dialogOf(app string) *Node {
	for _, n := range s.nodes {
		if n.ID == app+"/dlg:bg" {
			return n
		}
	}
	return nil
}

// refuse returns why the guard refuses an action on a screen, "" to let it
// run.
func refuse(s *Screen, a schemas.Action) string {
	switch a.Kind {
	case action.Move, action.Scroll, action.Wait:
		return ""
	case action.Done, action.Fail:
		return "the probe cannot end the episode"
	case action.Drag:
		return "drag could move a file, a window's content or a slider"
	case action.Type:
		if f := s.focusedEditable(); f != nil && f.ID == "files/location" {
			return ""
		}
		return "typing would edit"
	case action.Key, action.Hotkey:
		combo := strings.ToLower(strings.Join(a.Keys, "+"))
		if allowedKeys[combo] {
			if f := s.focusedEditable(); f != nil && f.Role == "slider" {
				return "keys on a focused slider change its setting"
			}
			return ""
		}
		if combo == "enter" {
			if f := s.focusedEditable(); f == nil || f.ID == "files/location" {
				if d := s.dialogOf(s.Top()); d == nil || d.Name == "Open File" {
					return ""
				}
			}
			return "enter would confirm an edit or a dialog"
		}
		return "key " + combo + " could save, delete or edit"
	case action.Click, action.DoubleClick, action.TripleClick, action.RightClick, action.MiddleClick:
		if a.X == nil || a.Y == nil {
			return ""
		}
		n := s.target(int(*a.X), int(*a.Y))
		if n == nil {
			return "" // the desktop background
		}
		return refuseWidget(s, n, a.Kind)
	}
	return "unknown action kind " + a.Kind
}

func refuseWidget(s *Screen, n *Node, kind string) string {
	app, local, _ := strings.Cut(n.ID, "/")
	switch {
	case app == "dock", local == "title", local == "window":
		return ""
	case local == "close":
		return "closing a window can drop unsaved work"
	case strings.HasPrefix(local, "menu:"):
		return ""
	case strings.HasPrefix(local, "pop:"):
		cmd := strings.TrimPrefix(local, "pop:")
		if allowedPop[cmd] || strings.HasPrefix(cmd, "go:") {
			return ""
		}
		return "menu command " + cmd + " could change state"
	case strings.HasPrefix(local, "dlg:"):
		d := s.dialogOf(app)
		switch {
		case local == "dlg:btn:cancel", strings.HasPrefix(local, "dlg:item:"), local == "dlg:scroll", local == "dlg:list", local == "dlg:bg":
			return ""
		case local == "dlg:btn:ok" && d != nil && d.Name == "Open File":
			return ""
		}
		return "dialog button " + strings.TrimPrefix(local, "dlg:") + " could save, discard or overwrite"
	}
	switch app {
	case "files":
		switch {
		case strings.HasPrefix(local, "place:"), strings.HasPrefix(local, "item:"), local == "list", local == "scroll",
			local == "up", local == "location":
			return ""
		}
	case "settings":
		switch {
		case strings.HasPrefix(local, "page:"), local == "area", local == "scroll":
			return ""
		case strings.HasPrefix(local, "set:") && n.Role == "combo_box":
			return "" // opens the option list; picking an option is refused
		}
		return "clicking a setting's control changes it"
	case "mail":
		composing := false
		if t := s.FindAny("mail/title"); t != nil && strings.HasPrefix(t.Name, "New Message") {
			composing = true
		}
		switch {
		case strings.HasPrefix(local, "msg:"), local == "list", local == "scroll":
			return ""
		case strings.HasPrefix(local, "folder:") && !composing:
			return ""
		case strings.HasPrefix(local, "folder:"):
			return "leaving the draft would discard it"
		}
		return "mail control " + local + " could compose, send or discard"
	case "sheet":
		switch {
		case strings.HasPrefix(local, "cell:"), strings.HasPrefix(local, "col:"), strings.HasPrefix(local, "row:"),
			local == "grid", local == "scroll":
			if kind == action.Click || kind == action.RightClick {
				return ""
			}
			return "double-clicking a cell starts editing it"
		}
	case "editor":
		if (local == "text" || local == "scroll") && kind == action.Click {
			return ""
		}
	}
	return "control " + n.ID + " could change state"
}
