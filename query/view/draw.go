package view

import (
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"

	"github.com/cualake/cualake/schemas"
)

// Grid is the side of the action coordinate grid (schemas.Action: x and y
// are on a 1000x1000 grid whatever the screen size).
const Grid = 1000

// Caption describes an action in words: "click (512, 300)", `type "hello"`,
// "hotkey ctrl+s", "scroll down 3 at (500, 500)".
func Caption(s schemas.Step) string {
	at := ""
	if s.X != nil && s.Y != nil {
		at = fmt.Sprintf(" (%d, %d)", *s.X, *s.Y)
	}
	switch s.ActionKind {
	case "type":
		return fmt.Sprintf("type %q%s", s.Text, at)
	case "key", "hotkey":
		keys := strings.Join(s.Keys, "+")
		if keys == "" {
			keys = s.Text
		}
		return s.ActionKind + " " + keys
	case "scroll":
		c := "scroll " + s.Direction
		if s.Amount != 0 {
			c += " " + strconv.Itoa(int(s.Amount))
		}
		if at != "" {
			c += " at" + at
		}
		return c
	case "drag":
		if s.X2 != nil && s.Y2 != nil {
			return fmt.Sprintf("drag%s to (%d, %d)", at, *s.X2, *s.Y2)
		}
		return "drag" + at
	case "wait", "done", "fail":
		if s.Text != "" {
			return fmt.Sprintf("%s %q", s.ActionKind, s.Text)
		}
		return s.ActionKind
	}
	return s.ActionKind + at
}

// screen is the size of what the agent saw, in pixels; the action grid
// maps onto it.
type screen struct{ W, H float64 }

func (sc screen) px(gx int32) float64 { return float64(gx) * sc.W / Grid }
func (sc screen) py(gy int32) float64 { return float64(gy) * sc.H / Grid }

func f2(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// markColors per action kind; the rest use the click colour.
var markColors = map[string]string{"click": "#e11d48", "double_click": "#e11d48", "triple_click": "#e11d48",
	"right_click": "#f97316", "middle_click": "#a855f7", "drag": "#2563eb", "scroll": "#059669", "move": "#6b7280", "type": "#7c3aed"}

// overlay draws the actions of one turn as an SVG laid over the
// screenshot (same viewBox as the screen, so markers stay round). Every
// marker has class "mark" and data-kind, data-x, data-y (grid units).
func overlay(actions []schemas.Step, sc screen) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="overlay" viewBox="0 0 %s %s" preserveAspectRatio="xMidYMid meet" aria-hidden="true">`, f2(sc.W), f2(sc.H))
	r := math.Max(sc.W, sc.H) * 0.018
	for i, a := range actions {
		color := markColors[a.ActionKind]
		if color == "" {
			color = "#e11d48"
		}
		attrs := fmt.Sprintf(`class="mark mark-%s" data-kind="%s" data-n="%d"`, html.EscapeString(a.ActionKind), html.EscapeString(a.ActionKind), i+1)
		if a.X != nil && a.Y != nil {
			attrs += fmt.Sprintf(` data-x="%d" data-y="%d"`, *a.X, *a.Y)
		}
		hasXY := a.X != nil && a.Y != nil
		var x, y float64
		if hasXY {
			x, y = sc.px(*a.X), sc.py(*a.Y)
		} else {
			x, y = sc.W/2, sc.H/2
		}
		title := "<title>" + html.EscapeString(fmt.Sprintf("%d. %s", i+1, Caption(a))) + "</title>"
		sw := f2(r * 0.28)
		switch {
		case a.ActionKind == "drag" && hasXY && a.X2 != nil && a.Y2 != nil:
			x2, y2 := sc.px(*a.X2), sc.py(*a.Y2)
			fmt.Fprintf(&b, `<g %s data-x2="%d" data-y2="%d" stroke="%s" fill="none" stroke-width="%s">%s<circle cx="%s" cy="%s" r="%s"/><line x1="%s" y1="%s" x2="%s" y2="%s"/>%s</g>`,
				attrs, *a.X2, *a.Y2, color, sw, title, f2(x), f2(y), f2(r*0.6), f2(x), f2(y), f2(x2), f2(y2), arrowHead(x, y, x2, y2, r, color))
		case a.ActionKind == "scroll":
			dx, dy := 0.0, 0.0
			l := math.Max(sc.W, sc.H) * 0.08
			switch a.Direction {
			case "up":
				dy = -l
			case "left":
				dx = -l
			case "right":
				dx = l
			default:
				dy = l
			}
			fmt.Fprintf(&b, `<g %s data-direction="%s" stroke="%s" fill="none" stroke-width="%s">%s<circle cx="%s" cy="%s" r="%s" stroke-dasharray="4 3"/><line x1="%s" y1="%s" x2="%s" y2="%s"/>%s</g>`,
				attrs, html.EscapeString(a.Direction), color, sw, title, f2(x), f2(y), f2(r*0.6), f2(x), f2(y), f2(x+dx), f2(y+dy), arrowHead(x, y, x+dx, y+dy, r, color))
		case hasXY:
			rings := map[string]int{"double_click": 2, "triple_click": 3}[a.ActionKind]
			fmt.Fprintf(&b, `<g %s stroke="%s" fill="none" stroke-width="%s">%s`, attrs, color, sw, title)
			if a.ActionKind == "move" {
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="%s" stroke-dasharray="3 3"/>`, f2(x), f2(y), f2(r))
			} else {
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="%s" fill="%s" fill-opacity="0.25"/>`, f2(x), f2(y), f2(r), color)
				for k := 1; k < rings; k++ {
					fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="%s"/>`, f2(x), f2(y), f2(r*(1+0.45*float64(k))))
				}
				fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s"/><line x1="%s" y1="%s" x2="%s" y2="%s"/>`,
					f2(x-r*1.7), f2(y), f2(x+r*1.7), f2(y), f2(x), f2(y-r*1.7), f2(x), f2(y+r*1.7))
			}
			if len(actions) > 1 {
				fmt.Fprintf(&b, `<text x="%s" y="%s" fill="%s" stroke="#fff" stroke-width="%s" paint-order="stroke" font-size="%s" font-weight="700">%d</text>`,
					f2(x+r*1.2), f2(y-r*1.2), color, f2(r*0.15), f2(r*1.6), i+1)
			}
			b.WriteString(`</g>`)
		default:
			// Actions without a position (type, key, done, ...) have no
			// marker on the screen: their caption says what they did. A
			// zero-size group still lets the page count every action.
			fmt.Fprintf(&b, `<g %s>%s</g>`, attrs, title)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// arrowHead is a filled triangle at (x2, y2) pointing away from (x1, y1).
func arrowHead(x1, y1, x2, y2, r float64, color string) string {
	dx, dy := x2-x1, y2-y1
	l := math.Hypot(dx, dy)
	if l == 0 {
		return ""
	}
	ux, uy := dx/l, dy/l
	bx, by := x2-ux*r*1.2, y2-uy*r*1.2
	px, py := -uy*r*0.6, ux*r*0.6
	return fmt.Sprintf(`<path d="M%s %sL%s %sL%s %sz" fill="%s" stroke="none"/>`, f2(x2), f2(y2), f2(bx+px), f2(by+py), f2(bx-px), f2(by-py), color)
}

// node is one accessibility-tree node as simdesk writes it.
type node struct {
	ID       string   `json:"id"`
	Role     string   `json:"role"`
	Name     string   `json:"name"`
	Value    string   `json:"value"`
	Bounds   []int    `json:"bounds"` // x, y, w, h in screen pixels
	States   []string `json:"states"`
	Children []*node  `json:"children"`
}

// parseTree reads a JSON accessibility tree; ok is false for other
// formats (imported linearized trees), which are shown as text.
func parseTree(b []byte) (*node, bool) {
	var n node
	if err := json.Unmarshal(b, &n); err != nil || n.Role == "" {
		return nil, false
	}
	return &n, true
}

// size is the root's bounds: the screen.
func (n *node) size() (screen, bool) {
	if len(n.Bounds) == 4 && n.Bounds[2] > 0 && n.Bounds[3] > 0 {
		return screen{float64(n.Bounds[0] + n.Bounds[2]), float64(n.Bounds[1] + n.Bounds[3])}, true
	}
	return screen{}, false
}

// maxTreeNodes bounds the nodes an outline or wireframe draws.
const maxTreeNodes = 3000

// outline writes the tree as indented lines: role "name" = value [id].
func outline(n *node) string {
	var b strings.Builder
	count := 0
	var walk func(n *node, depth int)
	walk = func(n *node, depth int) {
		if count == maxTreeNodes {
			fmt.Fprintf(&b, "%s… (more nodes left out)\n", strings.Repeat("  ", depth))
			count++
			return
		}
		if count > maxTreeNodes {
			return
		}
		count++
		b.WriteString(strings.Repeat("  ", depth))
		b.WriteString(n.Role)
		if n.Name != "" {
			fmt.Fprintf(&b, " %q", n.Name)
		}
		if n.Value != "" {
			fmt.Fprintf(&b, " = %q", n.Value)
		}
		if n.ID != "" {
			fmt.Fprintf(&b, " [%s]", n.ID)
		}
		if len(n.States) > 0 {
			fmt.Fprintf(&b, " {%s}", strings.Join(n.States, ","))
		}
		b.WriteByte('\n')
		for _, c := range n.Children {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return b.String()
}

// wireframe draws the tree's boxes and labels: what a tree-only agent saw,
// for steps that recorded no screenshot.
func wireframe(n *node, sc screen) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="wireframe" viewBox="0 0 %s %s" preserveAspectRatio="xMidYMid meet" role="img" aria-label="accessibility tree drawn as boxes">`, f2(sc.W), f2(sc.H))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%s" height="%s" fill="#f8fafc"/>`, f2(sc.W), f2(sc.H))
	count := 0
	var walk func(n *node, depth int)
	walk = func(n *node, depth int) {
		if count >= maxTreeNodes || len(n.Bounds) != 4 {
			return
		}
		count++
		x, y, w, h := float64(n.Bounds[0]), float64(n.Bounds[1]), float64(n.Bounds[2]), float64(n.Bounds[3])
		if w > 0 && h > 0 && depth > 0 {
			fill, stroke := "none", "#94a3b8"
			switch n.Role {
			case "window", "dialog", "frame":
				fill, stroke = "#ffffff", "#475569"
			case "button", "push button", "menu item", "tab", "link", "check box", "radio button":
				fill, stroke = "#e0e7ff", "#6366f1"
			case "text", "entry", "text field", "textbox":
				fill, stroke = "#fefce8", "#ca8a04"
			}
			fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s" stroke="%s" stroke-width="1"><title>%s</title></rect>`,
				f2(x), f2(y), f2(w), f2(h), fill, stroke, html.EscapeString(strings.TrimSpace(n.Role+" "+n.Name)))
			label := n.Name
			if n.Value != "" {
				label = strings.TrimSpace(label + ": " + n.Value)
			}
			if label != "" && (len(n.Children) == 0 || n.ID != "") && h >= 8 {
				fs := math.Min(14, h*0.7)
				maxChars := int(w / (fs * 0.55))
				if r := []rune(label); maxChars >= 1 && len(r) > maxChars {
					label = string(r[:maxChars])
				}
				if maxChars >= 1 {
					fmt.Fprintf(&b, `<text x="%s" y="%s" font-size="%s" fill="#0f172a" dominant-baseline="middle">%s</text>`,
						f2(x+2), f2(y+h/2), f2(fs), html.EscapeString(label))
				}
			}
		}
		for _, c := range n.Children {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
