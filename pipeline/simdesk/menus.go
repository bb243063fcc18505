package simdesk

import (
	"image"
	"unicode/utf8"
)

// menuItem is one entry of a menu; an empty label is a separator.
type menuItem struct {
	label, shortcut, cmd string
}

// menuDef is one menu of a window's menu bar.
type menuDef struct {
	title string
	items []menuItem
}

func sep() menuItem { return menuItem{} }

// menuTitleRects lays out the menu bar titles from x.
func menuTitleRects(menus []menuDef, x, y int) []image.Rectangle {
	out := make([]image.Rectangle, len(menus))
	for i, m := range menus {
		w := utf8.RuneCountInString(m.title)*charW + 16
		out[i] = rect(x, y, w, menuH)
		x += w
	}
	return out
}

// buildMenuBar adds the menu bar at the top of content and returns the rest
// of the content area.
func buildMenuBar(win *Node, a app, s *State, content image.Rectangle) image.Rectangle {
	menus := a.menus()
	if len(menus) == 0 {
		return content
	}
	bar := win.add(&Node{Role: RoleMenuBar, Name: "Menu bar", Rect: image.Rect(content.Min.X, content.Min.Y, content.Max.X, content.Min.Y+menuH)})
	open := *a.openMenu(s)
	for i, r := range menuTitleRects(menus, content.Min.X+4, content.Min.Y) {
		n := bar.add(&Node{ID: a.id() + "/menu:" + menus[i].title, Role: RoleMenu, Name: menus[i].title, Rect: r})
		if open == menus[i].title {
			n.States |= StExpanded
		}
	}
	return image.Rect(content.Min.X, content.Min.Y+menuH, content.Max.X, content.Max.Y)
}

// buildMenuPopup appends the open menu's popup to the window (last, so it is
// drawn on top and hit first).
func buildMenuPopup(win *Node, a app, s *State, content image.Rectangle) {
	open := *a.openMenu(s)
	if open == "" {
		return
	}
	menus := a.menus()
	rects := menuTitleRects(menus, content.Min.X+4, content.Min.Y)
	for i, m := range menus {
		if m.title == open {
			popup(win, a.id(), m.title, m.items, rects[i].Min.X, rects[i].Max.Y)
			return
		}
	}
}

// popup adds a popup menu with items at (x, y); item ids are
// "<app>/pop:<cmd>".
func popup(win *Node, appID, name string, items []menuItem, x, y int) *Node {
	w := 120
	for _, it := range items {
		w = max(w, (utf8.RuneCountInString(it.label)+utf8.RuneCountInString(it.shortcut))*charW+48)
	}
	h := 4
	for _, it := range items {
		if it.label == "" {
			h += 8
		} else {
			h += rowH
		}
	}
	p := win.add(&Node{Role: RolePopup, Name: name, Rect: rect(x, y, w, h)})
	cy := y + 2
	for _, it := range items {
		if it.label == "" {
			p.add(&Node{Role: RoleSeparator, Rect: rect(x+4, cy+3, w-8, 1)})
			cy += 8
			continue
		}
		p.add(&Node{ID: appID + "/pop:" + it.cmd, Role: RoleMenuItem, Name: it.label, Value: it.shortcut, Rect: rect(x+2, cy, w-4, rowH)})
		cy += rowH
	}
	return p
}
