package simdesk

import (
	"image"
	"strings"
)

// Node is one widget of the view tree the simulator builds from its state.
// The same tree is drawn into the screenshot, serialised as the
// accessibility tree and hit-tested by clicks, so what an agent sees, reads
// and clicks always agree.
type Node struct {
	ID       string // "<app>/<widget>" for widgets that react to input, "" otherwise
	Role     string
	Name     string
	Value    string
	Rect     image.Rectangle // screen pixels
	States   uint32
	Style    uint8 // drawing variant, see the style constants
	Children []*Node
}

// Roles of view nodes.
const (
	RoleDesktop   = "desktop"
	RoleTaskbar   = "taskbar"
	RoleButton    = "button"
	RoleWindow    = "window"
	RoleTitleBar  = "title_bar"
	RoleMenuBar   = "menu_bar"
	RoleMenu      = "menu"
	RolePopup     = "popup_menu"
	RoleMenuItem  = "menu_item"
	RoleSeparator = "separator"
	RoleTextField = "text_field"
	RoleTextArea  = "text_area"
	RoleParagraph = "paragraph"
	RoleLabel     = "label"
	RoleList      = "list"
	RoleListItem  = "list_item"
	RoleTable     = "table"
	RoleCell      = "cell"
	RoleColHeader = "column_header"
	RoleRowHeader = "row_header"
	RoleSwitch    = "switch"
	RoleCombo     = "combo_box"
	RoleOption    = "option"
	RoleSlider    = "slider"
	RoleDialog    = "dialog"
	RoleScrollBar = "scroll_bar"
	RoleStatusBar = "status_bar"
	RolePanel     = "panel"
	RolePageTab   = "page_tab"
	RoleCaret     = "caret"
)

// Node states; the accessibility tree lists them by name.
const (
	StFocused uint32 = 1 << iota
	StSelected
	StChecked
	StExpanded
	StEditable
	StDisabled
	StModified
	StActive
	StModal
	StMultiline
	stDrawOnly // drawn but left out of the accessibility tree (text runs, carets)
)

var stateNames = []struct {
	bit  uint32
	name string
}{
	{StFocused, "focused"}, {StSelected, "selected"}, {StChecked, "checked"}, {StExpanded, "expanded"},
	{StEditable, "editable"}, {StDisabled, "disabled"}, {StModified, "modified"}, {StActive, "active"},
	{StModal, "modal"}, {StMultiline, "multiline"},
}

// Styles: for labels the low nibble is the palette colour, plus flags; for
// buttons and list items a variant.
const (
	styBold   uint8 = 0x10
	styCenter uint8 = 0x20
	styRight  uint8 = 0x40

	btnNormal  uint8 = 0
	btnPrimary uint8 = 1
	btnDock    uint8 = 2
	btnFlat    uint8 = 3

	iconNone   uint8 = 0
	iconFolder uint8 = 1
	iconFile   uint8 = 2
	iconSheet  uint8 = 3
	iconMail   uint8 = 4
)

func (n *Node) add(c *Node) *Node {
	n.Children = append(n.Children, c)
	return c
}

func rect(x, y, w, h int) image.Rectangle { return image.Rect(x, y, x+w, y+h) }

// text adds a drawn-only text run (its parent carries the accessible name).
func (n *Node) text(r image.Rectangle, s string, style uint8) {
	n.add(&Node{Role: RoleLabel, Name: s, Rect: r, Style: style, States: stDrawOnly})
}

// label adds an accessible static text.
func (n *Node) label(r image.Rectangle, s string, style uint8) *Node {
	return n.add(&Node{Role: RoleLabel, Name: s, Rect: r, Style: style})
}

// Find returns the first node (pre-order) whose ID is id, or nil.
func (n *Node) Find(id string) *Node {
	if n == nil {
		return nil
	}
	if n.ID == id {
		return n
	}
	for _, c := range n.Children {
		if f := c.Find(id); f != nil {
			return f
		}
	}
	return nil
}

// FindPrefix returns the nodes (pre-order) whose ID starts with prefix.
func (n *Node) FindPrefix(prefix string) []*Node {
	var out []*Node
	var walk func(*Node)
	walk = func(m *Node) {
		if m.ID != "" && strings.HasPrefix(m.ID, prefix) {
			out = append(out, m)
		}
		for _, c := range m.Children {
			walk(c)
		}
	}
	walk(n)
	return out
}

// hit returns the path from n to the deepest node containing p, trying
// later (upper) children first, as they are drawn on top.
func (n *Node) hit(p image.Point) []*Node {
	for i := len(n.Children) - 1; i >= 0; i-- {
		if path := n.Children[i].hit(p); path != nil {
			return append([]*Node{n}, path...)
		}
	}
	if p.In(n.Rect) && n.States&stDrawOnly == 0 {
		return []*Node{n}
	}
	return nil
}

// Center returns the middle pixel of the node.
func (n *Node) Center() image.Point {
	return image.Pt((n.Rect.Min.X+n.Rect.Max.X)/2, (n.Rect.Min.Y+n.Rect.Max.Y)/2)
}
