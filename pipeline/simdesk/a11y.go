package simdesk

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"image"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The accessibility tree in the XML form of OSWorld's desktop server
// (GET /accessibility on Ubuntu: the pyatspi tree of every application,
// serialised by desktop_env/server/main.py), and the linearisation its
// agents give models (mm_agents: heuristic_retrieve.filter_nodes and
// linearize_accessibility_tree).
//
// What is matched: the root element desktop-frame declaring the prefixes
// st, attr, cp, doc, docattr, txt, val and act with the URIs below; one
// application element per program (gnome-shell holds the dock) with the
// window as a frame inside; element names are AT-SPI role names with
// spaces as "-" (push-button, toggle-button, menu-item, list-item, text,
// table-cell, combo-box, document-spreadsheet...); attribute name first,
// then a "true" st: attribute per state (enabled, sensitive, visible,
// showing, focusable, focused, selectable, selected, checkable, checked,
// expandable, expanded, editable, active, modal, single_line, multi_line),
// attr:id with the simulator's widget id, cp:screencoord="(x, y)" and
// cp:size="(w, h)" in screen pixels, val:value for sliders; the element's
// text is what AT-SPI's Text interface would give (a field's content, a
// label's text). What is not: action (act:) attributes and the order in
// which applications are listed (OSWorld's threads make it vary).

// Namespaces of OSWorld's Ubuntu accessibility tree.
const (
	NSState         = "https://accessibility.ubuntu.example.org/ns/state"
	NSAttributes    = "https://accessibility.ubuntu.example.org/ns/attributes"
	NSComponent     = "https://accessibility.ubuntu.example.org/ns/component"
	NSDocument      = "https://accessibility.ubuntu.example.org/ns/document"
	NSDocAttributes = "https://accessibility.ubuntu.example.org/ns/document/attributes"
	NSText          = "https://accessibility.ubuntu.example.org/ns/text"
	NSValue         = "https://accessibility.ubuntu.example.org/ns/value"
	NSAction        = "https://accessibility.ubuntu.example.org/ns/action"
)

var xmlNamespaces = [][2]string{{"st", NSState}, {"attr", NSAttributes}, {"cp", NSComponent}, {"doc", NSDocument},
	{"docattr", NSDocAttributes}, {"txt", NSText}, {"val", NSValue}, {"act", NSAction}}

// atspiRoles maps view roles to AT-SPI role names, as the programs the apps
// stand in for report them.
var atspiRoles = map[string]string{
	RoleTaskbar: "panel", RoleButton: "push-button", RoleWindow: "frame", RoleTitleBar: "panel",
	RoleMenuBar: "menu-bar", RoleMenu: "menu", RolePopup: "popup-menu", RoleMenuItem: "menu-item",
	RoleSeparator: "separator", RoleTextField: "text", RoleTextArea: "text", RoleParagraph: "paragraph",
	RoleLabel: "label", RoleList: "list", RoleListItem: "list-item", RoleTable: "table", RoleCell: "table-cell",
	RoleColHeader: "table-column-header", RoleRowHeader: "table-row-header", RoleSwitch: "toggle-button",
	RoleCombo: "combo-box", RoleOption: "menu-item", RoleSlider: "slider", RoleDialog: "dialog",
	RoleScrollBar: "scroll-bar", RoleStatusBar: "status-bar", RolePanel: "panel", RolePageTab: "page-tab",
}

// atspiApps are the application names AT-SPI reports for the programs.
var atspiApps = map[string]string{"files": "org.gnome.Nautilus", "editor": "gnome-text-editor", "sheet": "soffice",
	"settings": "gnome-control-center", "mail": "Thunderbird"}

// atNode is a node of the accessibility tree, from the live view or from
// its JSON form.
type atNode struct {
	id, role, name, value string
	rect                  image.Rectangle
	states                []string
	children              []*atNode
}

func fromView(n *Node) *atNode {
	a := &atNode{id: n.ID, role: n.Role, name: n.Name, value: n.Value, rect: n.Rect}
	for _, s := range stateNames {
		if n.States&s.bit != 0 {
			a.states = append(a.states, s.name)
		}
	}
	for _, c := range n.Children {
		if c.States&stDrawOnly == 0 {
			a.children = append(a.children, fromView(c))
		}
	}
	return a
}

// jsonNode is a node of Tree's JSON.
type jsonNode struct {
	ID       string      `json:"id"`
	Role     string      `json:"role"`
	Name     string      `json:"name"`
	Value    string      `json:"value"`
	Bounds   [4]int      `json:"bounds"`
	Center   [2]int      `json:"center"`
	States   []string    `json:"states"`
	Children []*jsonNode `json:"children"`
}

func (j *jsonNode) at() *atNode {
	a := &atNode{id: j.ID, role: j.Role, name: j.Name, value: j.Value, states: j.States,
		rect: rect(j.Bounds[0], j.Bounds[1], j.Bounds[2], j.Bounds[3])}
	for _, c := range j.Children {
		a.children = append(a.children, c.at())
	}
	return a
}

// TreeXML returns the accessibility tree in OSWorld's XML form (see the
// comment at the top of a11y.go), what GET /accessibility answers.
func (d *Desktop) TreeXML() []byte {
	return appendDesktopXML(make([]byte, 0, 48<<10), fromView(d.View()))
}

// TreeJSONToXML converts Tree's JSON to the XML form.
func TreeJSONToXML(tree []byte) ([]byte, error) {
	var root jsonNode
	if err := json.Unmarshal(tree, &root); err != nil {
		return nil, fmt.Errorf("simdesk: accessibility tree JSON: %w", err)
	}
	return appendDesktopXML(nil, root.at()), nil
}

func appendDesktopXML(b []byte, root *atNode) []byte {
	b = append(b, "<desktop-frame"...)
	for _, ns := range xmlNamespaces {
		b = append(b, ` xmlns:`+ns[0]+`="`+ns[1]+`"`...)
	}
	b = append(b, '>')
	for _, c := range root.children {
		app := "gnome-shell"
		if c.role == RoleWindow {
			app = atspiApps[strings.SplitN(c.id, "/", 2)[0]]
		}
		b = append(b, `<application name="`...)
		b = appendXMLText(b, app, true)
		b = append(b, `" st:enabled="true" st:sensitive="true" st:visible="true" st:showing="true">`...)
		b = appendNodeXML(b, c)
		b = append(b, "</application>"...)
	}
	return append(b, "</desktop-frame>"...)
}

func appendNodeXML(b []byte, n *atNode) []byte {
	tag := atspiRoles[n.role]
	if tag == "" {
		tag = "unknown"
	}
	has := func(s string) bool {
		for _, x := range n.states {
			if x == s {
				return true
			}
		}
		return false
	}
	if n.role == RoleTable && strings.HasPrefix(n.id, "sheet/") {
		tag = "document-spreadsheet"
	}
	b = append(b, '<')
	b = append(b, tag...)
	b = append(b, ` name="`...)
	b = appendXMLText(b, n.name, true)
	b = append(b, '"')
	st := func(name string) { b = append(b, ` st:`+name+`="true"`...) }
	if !has("disabled") {
		st("enabled")
		st("sensitive")
	}
	st("visible")
	st("showing")
	if n.id != "" {
		st("focusable")
	}
	if has("focused") {
		st("focused")
	}
	switch n.role {
	case RoleListItem, RoleCell, RoleOption, RolePageTab:
		st("selectable")
	}
	if has("selected") {
		st("selected")
	}
	if n.role == RoleSwitch {
		st("checkable")
	}
	if has("checked") {
		st("checked")
	}
	if n.role == RoleCombo || n.role == RoleMenu {
		st("expandable")
	}
	if has("expanded") {
		st("expanded")
	}
	if has("editable") {
		st("editable")
	}
	if has("active") {
		st("active")
	}
	if has("modal") {
		st("modal")
	}
	switch {
	case has("multiline"):
		st("multi_line")
	case n.role == RoleTextField:
		st("single_line")
	}
	if n.id != "" {
		b = append(b, ` attr:id="`...)
		b = appendXMLText(b, n.id, true)
		b = append(b, '"')
	}
	r := n.rect
	b = append(b, ` cp:screencoord="(`...)
	b = strconv.AppendInt(b, int64(r.Min.X), 10)
	b = append(b, ", "...)
	b = strconv.AppendInt(b, int64(r.Min.Y), 10)
	b = append(b, `)" cp:size="(`...)
	b = strconv.AppendInt(b, int64(r.Dx()), 10)
	b = append(b, ", "...)
	b = strconv.AppendInt(b, int64(r.Dy()), 10)
	b = append(b, `)"`...)
	if n.role == RoleSlider {
		if f, err := strconv.ParseFloat(n.value, 64); err == nil {
			b = append(b, ` val:value="`...)
			b = strconv.AppendFloat(b, f, 'f', -1, 64)
			if !strings.ContainsAny(n.value, ".e") {
				b = append(b, ".0"...)
			}
			b = append(b, '"')
		}
	}
	b = append(b, '>')
	// The Text interface: a field's content, a label's text.
	switch {
	case n.role == RoleLabel || n.role == RoleParagraph:
		b = appendXMLText(b, n.name, false)
	case n.role != RoleSlider && n.role != RoleListItem:
		b = appendXMLText(b, n.value, false)
	}
	for _, c := range n.children {
		b = appendNodeXML(b, c)
	}
	b = append(b, "</"...)
	b = append(b, tag...)
	return append(b, '>')
}

// appendXMLText escapes s for XML (as lxml does); characters XML cannot
// hold become U+FFFD.
func appendXMLText(b []byte, s string, attr bool) []byte {
	for _, r := range s {
		switch {
		case r == '&':
			b = append(b, "&amp;"...)
		case r == '<':
			b = append(b, "&lt;"...)
		case r == '>':
			b = append(b, "&gt;"...)
		case r == '"' && attr:
			b = append(b, "&quot;"...)
		case r == '\n' && attr:
			b = append(b, "&#10;"...)
		case r == '\t' && attr:
			b = append(b, "&#9;"...)
		case r == '\r':
			b = append(b, "&#13;"...)
		case r == '\n' || r == '\t':
			b = append(b, byte(r))
		case r < 0x20 || r == 0xfffe || r == 0xffff || r == utf8.RuneError || (r >= 0xd800 && r <= 0xdfff):
			b = append(b, "\ufffd"...)
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return b
}

// The namespaces OSWorld's agents read: attributes through the Windows
// URI on every platform (in mm_agents, attributes_ns_ubuntu is the
// windows one), so the class and description columns of an Ubuntu tree
// are empty. LinearizeAT keeps that, for prompts identical to theirs.
const (
	linearAttrNS  = "https://accessibility.windows.example.org/ns/attributes"
	linearClassNS = "https://accessibility.windows.example.org/ns/class"
	linearValueNS = NSValue
)

// atElem is a parsed element, as Python's ElementTree sees it.
type atElem struct {
	tag   string            // "name", or "{uri}name"
	attrs map[string]string // keys "name" or "{uri}name"
	text  string            // text before the first child
	kids  int
}

// LinearizeAT turns an accessibility tree into the table OSWorld's agents
// give models: the header "tag\tname\ttext\tclass\tdescription\tposition
// (top-left x&y)\tsize (w&h)" and one line per node that
// heuristic_retrieve.filter_nodes keeps on Ubuntu (a widget-like tag,
// showing and visible, enabled or editable or expandable or checkable, a
// name or text, and a position and size on screen), in document order. It
// reads OSWorld's XML (from a VM, or TreeXML) and the simulator's JSON
// tree.
func LinearizeAT(tree []byte) (string, error) {
	tree = bytes.TrimSpace(tree)
	if len(tree) > 0 && tree[0] == '{' {
		x, err := TreeJSONToXML(tree)
		if err != nil {
			return "", err
		}
		tree = x
	}
	dec := xml.NewDecoder(bytes.NewReader(tree))
	var order []*atElem
	var stack []*atElem
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("simdesk: accessibility tree XML: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			e := &atElem{tag: etName(t.Name), attrs: map[string]string{}}
			for _, a := range t.Attr {
				if a.Name.Space == "xmlns" || (a.Name.Space == "" && a.Name.Local == "xmlns") {
					continue
				}
				e.attrs[etName(a.Name)] = a.Value
			}
			if len(stack) > 0 {
				stack[len(stack)-1].kids++
			}
			stack = append(stack, e)
			order = append(order, e)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if n := len(stack); n > 0 && stack[n-1].kids == 0 {
				stack[n-1].text += string(t)
			}
		}
	}
	if len(order) == 0 {
		return "", fmt.Errorf("simdesk: accessibility tree XML: no elements")
	}
	lines := []string{"tag\tname\ttext\tclass\tdescription\tposition (top-left x&y)\tsize (w&h)"}
	for _, e := range order {
		if !keepNode(e) {
			continue
		}
		text := `""`
		switch {
		case e.text != "":
			text = csvQuote(e.text)
		case strings.HasSuffix(e.attrs["{"+linearClassNS+"}class"], "EditWrapper") && e.attrs["{"+linearValueNS+"}value"] != "":
			text = csvQuote(e.attrs["{"+linearValueNS+"}value"])
		}
		lines = append(lines, strings.Join([]string{e.tag, e.attrs["name"], text, e.attrs["{"+linearAttrNS+"}class"],
			e.attrs["{"+linearAttrNS+"}description"], e.attrs["{"+NSComponent+"}screencoord"], e.attrs["{"+NSComponent+"}size"]}, "\t"))
	}
	return strings.Join(lines, "\n"), nil
}

func csvQuote(s string) string {
	if !strings.Contains(s, `"`) {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

func etName(n xml.Name) string {
	if n.Space == "" {
		return n.Local
	}
	return "{" + n.Space + "}" + n.Local
}

var keptTags = map[string]bool{"alert": true, "canvas": true, "check-box": true, "combo-box": true, "entry": true, "icon": true,
	"image": true, "paragraph": true, "scroll-bar": true, "section": true, "slider": true, "static": true, "table-cell": true,
	"terminal": true, "text": true, "netuiribbontab": true, "start": true, "trayclockwclass": true, "traydummysearchcontrol": true,
	"uiimage": true, "uiproperty": true, "uiribboncommandbar": true}

// keepNode is heuristic_retrieve.judge_node for Ubuntu, without images.
func keepNode(e *atElem) bool {
	t := e.tag
	keep := strings.HasPrefix(t, "document") || keptTags[t]
	for _, suf := range []string{"item", "button", "heading", "label", "scrollbar", "searchbox", "textbox", "link", "tabelement", "textfield", "textarea", "menu"} {
		keep = keep || strings.HasSuffix(t, suf)
	}
	st := func(name string) bool { return e.attrs["{"+NSState+"}"+name] == "true" }
	keep = keep && st("showing") && st("visible") && (st("enabled") || st("editable") || st("expandable") || st("checkable")) &&
		(e.attrs["name"] != "" || e.text != "")
	if !keep {
		return false
	}
	x, y, ok1 := pyPair(e.attrs["{"+NSComponent+"}screencoord"])
	w, h, ok2 := pyPair(e.attrs["{"+NSComponent+"}size"])
	return ok1 && ok2 && x >= 0 && y >= 0 && w > 0 && h > 0
}

// pyPair reads "(a, b)" as Python's str of a tuple of two ints writes it.
func pyPair(s string) (int, int, bool) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "(") || !strings.HasSuffix(s, ")") {
		return 0, 0, false
	}
	a, b, ok := strings.Cut(s[1:len(s)-1], ",")
	if !ok {
		return 0, 0, false
	}
	x, err1 := strconv.Atoi(strings.TrimSpace(a))
	y, err2 := strconv.Atoi(strings.TrimSpace(b))
	return x, y, err1 == nil && err2 == nil
}
