package verify

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Node is one node of a simulator accessibility tree (simdesk's JSON).
type Node struct {
	ID       string   `json:"id"`
	Role     string   `json:"role"`
	Name     string   `json:"name"`
	Value    string   `json:"value"`
	Bounds   [4]int   `json:"bounds"` // x, y, w, h in pixels
	Center   [2]int   `json:"center"` // on the 1000x1000 action grid
	States   []string `json:"states"`
	Children []*Node  `json:"children"`

	win    int  // index of the top-level window holding it; -1 outside windows
	hidden bool // covered by a window above its own
}

// Has reports whether the node has a state ("checked", "modified", ...).
func (n *Node) Has(state string) bool { return slices.Contains(n.States, state) }

// App is the app a widget id belongs to ("editor" for "editor/text").
func (n *Node) App() string {
	app, _, _ := strings.Cut(n.ID, "/")
	return app
}

func (n *Node) contains(x, y int) bool {
	b := n.Bounds
	return x >= b[0] && y >= b[1] && x < b[0]+b[2] && y < b[1]+b[3]
}

// Screen is one observation as the Judge and the Probe read it: the parsed
// tree with what windows above cover marked hidden, and the screenshot's
// blob hash when there is one.
type Screen struct {
	Root       *Node
	Windows    []*Node // top-level windows, bottom to top
	Screenshot string  // blob hash of the PNG ("" when tree-only)
	nodes      []*Node // every node, pre-order
}

// ParseScreen reads a simdesk accessibility tree.
func ParseScreen(tree []byte) (*Screen, error) {
	var root Node
	if err := json.Unmarshal(tree, &root); err != nil {
		return nil, fmt.Errorf("accessibility tree: %w", err)
	}
	s := &Screen{Root: &root}
	for _, c := range root.Children {
		if c.Role == "window" {
			s.Windows = append(s.Windows, c)
		}
	}
	var walk func(n *Node, win int)
	walk = func(n *Node, win int) {
		if n.Role == "window" && n != &root {
			win = slices.Index(s.Windows, n)
		}
		n.win = win
		if win >= 0 {
			for _, above := range s.Windows[win+1:] {
				cx, cy := n.Bounds[0]+n.Bounds[2]/2, n.Bounds[1]+n.Bounds[3]/2
				if above.contains(cx, cy) {
					n.hidden = true
					break
				}
			}
		}
		s.nodes = append(s.nodes, n)
		for _, c := range n.Children {
			walk(c, win)
		}
	}
	walk(&root, -1)
	return s, nil
}

// Find returns the visible node with that id, or nil.
func (s *Screen) Find(id string) *Node {
	for _, n := range s.nodes {
		if n.ID == id && !n.hidden {
			return n
		}
	}
	return nil
}

// FindAny returns the node with that id whether covered or not, or nil.
func (s *Screen) FindAny(id string) *Node {
	for _, n := range s.nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// Prefixed returns the visible nodes whose id starts with prefix.
func (s *Screen) Prefixed(prefix string) []*Node {
	var out []*Node
	for _, n := range s.nodes {
		if !n.hidden && n.ID != "" && strings.HasPrefix(n.ID, prefix) {
			out = append(out, n)
		}
	}
	return out
}

// Window returns an app's window node, or nil when it is not open.
func (s *Screen) Window(app string) *Node {
	for _, w := range s.Windows {
		if w.ID == app+"/window" {
			return w
		}
	}
	return nil
}

// Top is the app of the focused (top) window, "" when none is open.
func (s *Screen) Top() string {
	if len(s.Windows) == 0 {
		return ""
	}
	return s.Windows[len(s.Windows)-1].App()
}

// Visible reports whether n is drawn uncovered.
func (s *Screen) Visible(n *Node) bool { return n != nil && !n.hidden }

// inWindow returns the visible nodes of an app's window with a role.
func (s *Screen) inWindow(app, role string) []*Node {
	w := s.Window(app)
	if w == nil {
		return nil
	}
	idx := slices.Index(s.Windows, w)
	var out []*Node
	for _, n := range s.nodes {
		if n.win == idx && !n.hidden && n.Role == role {
			out = append(out, n)
		}
	}
	return out
}

// StatusBar returns the visible status bar text of an app's window.
func (s *Screen) StatusBar(app string) (string, bool) {
	for _, n := range s.inWindow(app, "status_bar") {
		return n.Name, true
	}
	return "", false
}

// Title returns an app window's title when its title bar is visible.
func (s *Screen) Title(app string) (string, bool) {
	if n := s.Find(app + "/title"); n != nil {
		return n.Name, true
	}
	return "", false
}

// Labels returns the visible label texts of an app's window.
func (s *Screen) Labels(app string) []string {
	var out []string
	for _, n := range s.inWindow(app, "label") {
		out = append(out, n.Name)
	}
	return out
}

// Text renders what is visible as indented lines (role, name, value,
// states, id), the form prompts and token estimates use.
func (s *Screen) Text() string {
	var b strings.Builder
	var walk func(n *Node, depth int)
	walk = func(n *Node, depth int) {
		if n.hidden {
			return
		}
		if n.Name != "" || n.Value != "" || n.ID != "" {
			b.WriteString(strings.Repeat(" ", depth))
			b.WriteString(n.Role)
			if n.Name != "" {
				fmt.Fprintf(&b, " %q", n.Name)
			}
			if n.Value != "" {
				fmt.Fprintf(&b, " value=%q", n.Value)
			}
			if len(n.States) > 0 {
				b.WriteString(" [" + strings.Join(n.States, ",") + "]")
			}
			fmt.Fprintf(&b, " @%d,%d\n", n.Center[0], n.Center[1])
		}
		for _, c := range n.Children {
			walk(c, depth+1)
		}
	}
	walk(s.Root, 0)
	return b.String()
}

// approxTokens estimates the tokens of a text (4 characters a token), the
// cost proxy the builtin Probe reports for what it read.
func approxTokens(s string) int { return (len(s) + 3) / 4 }
