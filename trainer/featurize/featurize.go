// Package featurize turns what the simulator shows (the accessibility tree)
// and what the policy writes into the small policy's text world: a numbered
// list of on-screen elements, an instruction whose words can be pointed at,
// and actions that name elements ("click e7") and instruction spans
// ("type w4 w4") instead of raw coordinates and strings. Pointing is what a
// small model can learn on a CPU in minutes; the grid coordinates and exact
// text are recovered from the observation, so the environment still gets
// ordinary OSWorld-style actions. Pure Go: no libtorch.
package featurize

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/schemas"
)

// MaxElements caps the elements listed per observation (the context is
// bounded); actions on elements beyond it fall back to coordinate tokens.
const MaxElements = 40

// Element is one actionable thing on screen.
type Element struct {
	Role, Name, Value string
	X, Y              int // centre on the 1000x1000 grid
	States            []string
	// Bounds is the element's box in screen pixels (x, y, w, h) and Screen
	// the screen's size in pixels, when the tree gives them: a slider is
	// set by a click at a fraction of its width.
	Bounds [4]int
	Screen [2]int
	// Col and Row label a table cell: the values of the first cell of its
	// column and of its row (a spreadsheet's header and row label), so an
	// action can name the cell by the instruction's words ("cell w4 w6")
	// wherever the table puts it. A column header's Col is its column's
	// label ("column w4" selects the column).
	Col, Row string
}

type node struct {
	ID       string   `json:"id"`
	Role     string   `json:"role"`
	Name     string   `json:"name"`
	Value    string   `json:"value"`
	Center   []int    `json:"center"`
	Bounds   []int    `json:"bounds"`
	States   []string `json:"states"`
	Children []node   `json:"children"`
}

// Elements lists the tree's identified (actionable) nodes in tree order.
// When there are more than MaxElements, a table's empty cells and its row
// and column headers go first (their names only repeat the grid's
// coordinates, and a spreadsheet has hundreds of them), except the empty
// cells the instruction names by address ("in cell B6") and the headers of
// the columns it names by label ("by the Amount column"): those are where
// the task acts, and an action can then point at them by that word. If
// there are still too many it keeps the first few (the dock, which opens
// apps) and the last ones (the front-most window, menus and dialogs come
// last in the tree).
func Elements(tree []byte, instruction string) ([]Element, error) {
	var root node
	if err := json.Unmarshal(tree, &root); err != nil {
		return nil, fmt.Errorf("featurize: accessibility tree: %w", err)
	}
	var screen [2]int
	if len(root.Bounds) == 4 {
		screen = [2]int{root.Bounds[2], root.Bounds[3]}
	}
	var all []Element
	var walk func(n *node)
	walk = func(n *node) {
		if n.ID != "" && len(n.Center) == 2 {
			e := Element{Role: n.Role, Name: n.Name, Value: n.Value, X: n.Center[0], Y: n.Center[1], States: n.States}
			if len(n.Bounds) == 4 {
				e.Bounds, e.Screen = [4]int(n.Bounds), screen
			}
			all = append(all, e)
		}
		if n.Role == "table" {
			from := len(all)
			for i := range n.Children {
				walk(&n.Children[i])
			}
			labelCells(all[from:])
			return
		}
		for i := range n.Children {
			walk(&n.Children[i])
		}
	}
	walk(&root)
	if len(all) > MaxElements {
		named := map[string]bool{}
		for _, w := range Words(instruction) {
			named[norm(w)] = true
		}
		kept := all[:0:0]
		for _, e := range all {
			if !filler(e) || e.Role == "cell" && named[norm(e.Name)] || e.Role == "column_header" && named[norm(e.Col)] {
				kept = append(kept, e)
			}
		}
		all = kept
	}
	const head = 6
	if len(all) > MaxElements {
		all = append(all[:head:head], all[len(all)-(MaxElements-head):]...)
	}
	return all, nil
}

// labelCells sets Col and Row of one table's cells, and Col of its column
// headers: a column is the cells with one x, a row the cells with one y,
// and the label is the value of the topmost (leftmost) cell.
func labelCells(elems []Element) {
	top, left := map[int]*Element{}, map[int]*Element{}
	for i := range elems {
		e := &elems[i]
		if e.Role != "cell" {
			continue
		}
		if t := top[e.X]; t == nil || e.Y < t.Y {
			top[e.X] = e
		}
		if l := left[e.Y]; l == nil || e.X < l.X {
			left[e.Y] = e
		}
	}
	for i := range elems {
		switch e := &elems[i]; e.Role {
		case "cell":
			e.Col, e.Row = top[e.X].Value, left[e.Y].Value
		case "column_header":
			if t := top[e.X]; t != nil {
				e.Col = t.Value
			}
		}
	}
}

// filler reports whether an element is left out of a crowded screen first:
// an empty, unselected table cell, or a table's row or column header.
func filler(e Element) bool {
	switch e.Role {
	case "row_header", "column_header":
		return true
	case "cell":
		return e.Value == "" && len(e.States) == 0
	}
	return false
}

// Words splits an instruction into the units "type" can point at: runs of
// non-space characters.
func Words(instruction string) []string { return strings.Fields(instruction) }

// clean makes free text safe for the word-level vocabulary: lower case,
// bounded length.
func clean(s string, maxWords int) string {
	f := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return unicode.IsSpace(r) })
	if len(f) > maxWords {
		f = f[:maxWords]
	}
	return strings.Join(f, " ")
}

// MaxStep is the largest step counter the context shows ("s24" stands for
// 24 or more actions taken).
const MaxStep = 24

// HistoryTurns is how many previous actions the context shows.
const HistoryTurns = 3

// Context renders the policy's input text: how many actions were taken
// ("s4"), the last HistoryTurns actions most recent first, the instruction
// with word and quote markers, and the numbered elements. The counter and
// the latest action come first, at fixed positions, because within a task
// family they decide most of the next action.
func Context(instruction string, elems []Element, history []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "s%d history", min(len(history), MaxStep))
	for i := len(history) - 1; i >= 0 && i >= len(history)-HistoryTurns; i-- {
		b.WriteString(" | " + history[i])
	}
	b.WriteString(TaskText(instruction))
	b.WriteString(ScreenText(elems))
	return b.String()
}

// TaskText is the instruction as the policy reads it: " task", then every
// word as "w<i> <word>" (lower case), the first word of the k-th quoted
// string preceded by its marker "q<k>". Actions point at words and quotes
// by these markers.
func TaskText(instruction string) string {
	var b strings.Builder
	b.WriteString(" task")
	quotes, open := 0, false
	for i, w := range Words(instruction) {
		// A quoted string's first word carries its marker too ("q1 w3"),
		// the pointer that actions use for it.
		if !open && strings.HasPrefix(w, `"`) && quotes < MaxQuotes {
			quotes++
			fmt.Fprintf(&b, " q%d", quotes)
		}
		if n := strings.Count(w, `"`); n%2 == 1 {
			open = !open
		}
		fmt.Fprintf(&b, " w%d %s", i, clean(w, 1))
	}
	return b.String()
}

// ScreenText is the screen as the policy reads it: " screen", then each
// element as "e<i> <role> <name>", " = <value>" when it has one, and the
// states checked, selected, active and focused. Actions point at elements
// by these markers, or by role and name.
func ScreenText(elems []Element) string {
	var b strings.Builder
	b.WriteString(" screen")
	for i, e := range elems {
		fmt.Fprintf(&b, " e%d %s %s", i, e.Role, clean(e.Name, 4))
		if e.Value != "" {
			b.WriteString(" = " + clean(e.Value, 3))
		}
		for _, s := range e.States {
			if s == "checked" || s == "selected" || s == "active" || s == "focused" {
				b.WriteString(" " + s)
			}
		}
	}
	return b.String()
}

// Encode turns an action the environment understands into the policy's
// action text. Pointers name what stays the same across a task family's
// instances wherever the screen allows: an element whose name is a quoted
// string of the instruction ("q2") or one of its words ("w7"), optionally
// the last such element ("q2 last"); else, for a final target, its role and
// name ("button save"); else its place in the list ("e7"). Typed text is a
// quoted string ("q1"), the instruction's body after its first line
// ("body"), or a span of its words ("w4 w6"). Held-out instances of a
// family then share the training instances' action texts, which is what
// lets a small policy generalise. ok is false when the action has no exact
// policy form (it then uses coordinate tokens and literal words, which lose
// exactness).
func Encode(a schemas.Action, elems []Element, instruction string) (text string, ok bool) {
	ok = true
	r := newRefs(instruction)
	target := func(x, y *int32, final bool) string {
		if x == nil || y == nil {
			ok = false
			return "e0"
		}
		best, bestD := -1, 1<<30
		for i, e := range elems {
			dx, dy := int(*x)-e.X, int(*y)-e.Y
			if d := dx*dx + dy*dy; d < bestD {
				best, bestD = i, d
			}
		}
		if best >= 0 && bestD <= 4 { // the oracle clicks element centres
			return r.pointer(elems, best, final)
		}
		if form, found := r.sliderForm(elems, int(*x), int(*y)); found && final {
			return form
		}
		ok = false
		return fmt.Sprintf("x:%d y:%d", *x, *y)
	}
	switch a.Kind {
	case "click", "double_click", "right_click", "triple_click", "middle_click":
		return a.Kind + " " + target(a.X, a.Y, true), ok
	case "move":
		return "mouse_move " + target(a.X, a.Y, true), ok
	case "drag":
		return "drag " + target(a.X, a.Y, false) + " " + target(a.X2, a.Y2, false), ok
	case "type":
		// A trailing newline or tab (the key that moves to the next
		// spreadsheet cell) is a marker after the text's pointer.
		body, nl := strings.CutSuffix(a.Text, "\n")
		tab := false
		if !nl {
			body, tab = strings.CutSuffix(a.Text, "\t")
		}
		span, found := r.text(body)
		if !found {
			span, found = findLines(instruction, body)
		}
		if !found {
			span, found = tableCell(instruction, body)
		}
		if !found {
			span, found = r.findSpan(instruction, body)
		}
		if !found {
			span, found = r.formula(body)
		}
		if !found {
			ok = false
			span = "lit " + clean(body, 12)
		}
		if nl {
			span += " nl"
		} else if tab {
			span += " tab"
		}
		return "type " + span, ok
	case "key":
		n := max(1, int(a.Amount))
		return "key " + strings.Join(a.Keys, " ") + strings.Repeat(" again", n-1), ok
	case "hotkey":
		return "hotkey " + strings.Join(a.Keys, " "), ok
	case "scroll":
		s := "scroll " + a.Direction + " " + strconv.Itoa(max(1, int(a.Amount)))
		if a.X != nil {
			s += " " + target(a.X, a.Y, true)
		}
		return s, ok
	case "wait", "done", "fail":
		return a.Kind, ok
	}
	return "wait", false
}

// MaxQuotes is the number of quoted strings of an instruction the policy can
// point at (q1..q9).
const MaxQuotes = 9

// refs are the instruction's pointable parts.
type refs struct {
	quotes []string // contents of "..." in order
	words  []string // Words(instruction)
	body   string   // what follows the first line break, if any
	tail   int      // first word counted from the end (see wordMarker)
}

func newRefs(instruction string) refs {
	r := refs{words: Words(instruction)}
	rest := instruction
	for len(r.quotes) < MaxQuotes {
		i := strings.IndexByte(rest, '"')
		if i < 0 {
			break
		}
		j := strings.IndexByte(rest[i+1:], '"')
		if j < 0 {
			break
		}
		r.quotes = append(r.quotes, rest[i+1:i+1+j])
		rest = rest[i+1+j+1:]
	}
	if _, after, found := strings.Cut(instruction, "\n"); found {
		r.body = after
	}
	r.tail = tailStart(instruction)
	return r
}

// tailStart is the index of the first word at or after the instruction's
// first quote or line break, or the word count if it has neither.
func tailStart(instruction string) int {
	_, ends := wordOffsets(instruction)
	cut := strings.IndexAny(instruction, "\"\n")
	if cut < 0 {
		return len(ends)
	}
	for k, e := range ends {
		if e > cut {
			return k
		}
	}
	return len(ends)
}

// wordMarker names instruction word k. Words before the instruction's
// first quote or line break are counted from the start ("w3"); words from
// there on are counted from the end ("w-1" is the last word). A quoted
// name or a message body varies in length between a family's instances,
// so a word after it sits at a fixed distance from the end, not from the
// start: 'set "Proxy" to Manual.' and 'set "Font size" to Large.' both
// end with their value at w-1.
func (r refs) wordMarker(k int) string {
	if k >= r.tail {
		return "w-" + strconv.Itoa(len(r.words)-k)
	}
	return "w" + strconv.Itoa(k)
}

// wordIndex parses a word marker ("w3", "w-1") to the word's index. Each
// word has one marker: a start-counted marker past the tail, or an
// end-counted one before it, does not parse, so a response cannot name a
// word two ways.
func (r refs) wordIndex(m string) (int, bool) {
	if n, ok := index(m, "w-"); ok {
		if n < 1 || n > len(r.words) || len(r.words)-n < r.tail {
			return 0, false
		}
		return len(r.words) - n, true
	}
	n, ok := index(m, "w")
	if !ok || n >= len(r.words) || n >= r.tail {
		return 0, false
	}
	return n, true
}

// punctuation is what surrounds a word in a sentence but not in an element
// name or a typed value: quotes, stops, commas, colons, brackets.
const punctuation = `"'.,;:()`

// norm is the form in which element names and instruction parts are compared.
func norm(s string) string {
	return strings.ToLower(strings.Trim(strings.TrimSpace(s), punctuation))
}

// text finds typed text among the quoted strings and the body.
func (r refs) text(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	for k, q := range r.quotes {
		if q == s {
			return "q" + strconv.Itoa(k+1), true
		}
	}
	if r.body != "" && r.body == s {
		return "body", true
	}
	return "", false
}

// pointer returns the most family-stable form that resolves to element i.
// final allows the role-and-name form, which runs to the end of the action.
func (r refs) pointer(elems []Element, i int, final bool) string {
	name := norm(elems[i].Name)
	var cands []string
	if name != "" {
		for k, q := range r.quotes {
			if norm(q) == name {
				cands = append(cands, "q"+strconv.Itoa(k+1))
			}
		}
		// Only capitalised words inside a sentence (names of places, apps
		// and settings) are pointed at: a common word such as "send" moves
		// with the text around it, whereas the element's own name does not.
		for k, w := range r.words {
			if norm(w) == name && properNoun(r.words, k) {
				cands = append(cands, r.wordMarker(k))
			}
		}
		// A table cell by its column header and row label, when the
		// instruction names both ("change the Amount of Markers"), or by its
		// header alone for the column's top cell ("cell w7 top").
		if e := elems[i]; e.Role == "cell" && e.Col != "" {
			rows := append(r.refsTo(e.Row), "top")
			for _, c := range r.refsTo(e.Col) {
				for _, rw := range rows {
					cands = append(cands, "cell "+c+" "+rw)
				}
			}
		}
		// A column header by its column's label ("column w4").
		if e := elems[i]; e.Role == "column_header" && e.Col != "" {
			for _, c := range r.refsTo(e.Col) {
				cands = append(cands, "column "+c)
			}
		}
		cands = append(cands, r.likeForms(elems, i)...)
		if final && pointableRole(elems[i].Role) {
			if n := clean(elems[i].Name, 4); n != "" {
				cands = append(cands, elems[i].Role+" "+n)
			}
		}
	}
	for _, c := range cands {
		for _, form := range []string{c, c + " last"} {
			if j, rest, ok := r.resolve(elems, strings.Fields(form)); ok && j == i && len(rest) == 0 {
				return form
			}
		}
	}
	return "e" + strconv.Itoa(i)
}

// likeForms are the "<role> like wK" pointers to element i: the first (or
// last) element of its role whose name contains instruction word K. They
// name what varies between a family's instances by where the instruction
// says it, in two cases only, so that fixed labels ("button text editor",
// shared by every family) keep their role-and-name form:
//   - a choice among siblings whose names differ in that word alone: "click
//     menu_item like w10" is the sort menu's entry for the order the
//     instruction asks for ("Sort descending" for "in descending order");
//   - a file by the extension the instruction names: "click list_item like
//     w10" is the first listed file ending in ".txt", whatever the
//     instance's file names are.
func (r refs) likeForms(elems []Element, i int) []string {
	e := elems[i]
	if !pointableRole(e.Role) {
		return nil
	}
	name := norm(e.Name)
	tokens := strings.Fields(name)
	var out []string
	for k, w := range r.words {
		want := norm(w)
		if !likeWord(want) || want == name || !likeName(name, w, want) {
			continue
		}
		if isExtension(w) || choiceWord(elems, i, tokens, want) {
			out = append(out, e.Role+" like "+r.wordMarker(k))
		}
	}
	return out
}

// pointableRole reports whether a role can head a pointer ("button save",
// "menu_item like w10"): one word, which the decoder reads as the role.
func pointableRole(role string) bool { return role != "" && !strings.ContainsAny(role, " \t\n") }

// choiceWord reports whether want is a whole word of element i's name (its
// tokens) and another element of its role has a name that differs from it
// in that word alone ("sort ascending" and "sort descending").
func choiceWord(elems []Element, i int, tokens []string, want string) bool {
	at := slices.Index(tokens, want)
	if at < 0 {
		return false
	}
	for j, o := range elems {
		if j == i || o.Role != elems[i].Role {
			continue
		}
		ot := strings.Fields(norm(o.Name))
		if len(ot) == len(tokens) && ot[at] != want && slices.Equal(ot[:at], tokens[:at]) && slices.Equal(ot[at+1:], tokens[at+1:]) {
			return true
		}
	}
	return false
}

// likeName reports whether a normalised element name is like instruction
// word w (normalised: want): it ends in the extension w names, or has want
// as one of its words.
func likeName(name, w, want string) bool {
	if isExtension(w) {
		return strings.HasSuffix(name, "."+want)
	}
	return slices.Contains(strings.Fields(name), want)
}

// isExtension reports whether an instruction word is a file extension
// (".txt"; norm trims its dot).
func isExtension(w string) bool { return strings.HasPrefix(strings.TrimLeft(w, `"'(`), ".") }

// likeWord reports whether an instruction word may be looked for inside
// element names: three characters or more (".txt"); shorter words ("a",
// "to") are inside too many names.
func likeWord(w string) bool { return len(w) >= 3 }

// resolve reads one element pointer from the front of args and returns the
// element, the unread args and whether it resolved.
func (r refs) resolve(elems []Element, args []string) (int, []string, bool) {
	if len(args) == 0 {
		return 0, nil, false
	}
	pick := func(match func(e *Element) bool, rest []string) (int, []string, bool) {
		last := len(rest) > 0 && rest[0] == "last"
		if last {
			rest = rest[1:]
		}
		found := -1
		for j := range elems {
			if match(&elems[j]) {
				found = j
				if !last {
					break
				}
			}
		}
		return found, rest, found >= 0
	}
	a := args[0]
	if n, ok := index(a, "e"); ok {
		return n, args[1:], n < len(elems)
	}
	_, isQuote := index(a, "q")
	if isQuote || isWordMarker(a) {
		t, ok := r.refText(a)
		if !ok {
			return 0, nil, false
		}
		want := norm(t)
		return pick(func(e *Element) bool { return want != "" && norm(e.Name) == want }, args[1:])
	}
	if strings.HasPrefix(a, "x:") {
		return 0, nil, false // coordinates are read by the caller
	}
	if a == "column" && len(args) >= 2 {
		if t, ok := r.refText(args[1]); ok && norm(t) != "" {
			want := norm(t)
			return pick(func(e *Element) bool { return e.Role == "column_header" && norm(e.Col) == want }, args[2:])
		}
		return 0, nil, false
	}
	if a == "cell" && len(args) >= 3 {
		if j, ok := r.cell(elems, args[1], args[2]); ok {
			return j, args[3:], true
		}
	}
	if len(args) >= 3 && args[1] == "like" {
		if isWordMarker(args[2]) {
			t, ok := r.refText(args[2])
			if !ok || !likeWord(norm(t)) {
				return 0, nil, false
			}
			want := norm(t)
			return pick(func(e *Element) bool { return e.Role == a && likeName(norm(e.Name), t, want) }, args[3:])
		}
	}
	// Role and name: the name runs to the end (or to "last").
	rest := args[1:]
	var name []string
	for len(rest) > 0 && rest[0] != "last" {
		name, rest = append(name, rest[0]), rest[1:]
	}
	want := strings.Join(name, " ")
	if want == "" {
		return 0, nil, false
	}
	return pick(func(e *Element) bool { return e.Role == a && clean(e.Name, 4) == want }, rest)
}

// sliderForm writes a click at (x, y) on a slider as "<slider> at wK": the
// slider's pointer and the instruction word whose number (a percentage)
// the click sets it to.
func (r refs) sliderForm(elems []Element, x, y int) (string, bool) {
	for i, e := range elems {
		if e.Role != "slider" || e.Y != y || e.Screen[0] == 0 {
			continue
		}
		p := r.pointer(elems, i, false)
		for k := range r.words {
			w := r.wordMarker(k)
			if gx, gy, ok := r.sliderAt(elems, strings.Fields(p), w); ok && int(gx) == x && int(gy) == y {
				return p + " at " + w, true
			}
		}
	}
	return "", false
}

// sliderAt resolves "<slider> at wK" to the grid point that sets the slider
// to word K's number: the value's share of the slider's width, as the
// settings panel reads a click.
func (r refs) sliderAt(elems []Element, ptr []string, word string) (x, y int32, ok bool) {
	i, rest, found := r.resolve(elems, ptr)
	if !found || len(rest) > 0 || i < 0 || i >= len(elems) || elems[i].Role != "slider" || elems[i].Screen[0] <= 0 {
		return 0, 0, false
	}
	if !isWordMarker(word) {
		return 0, 0, false
	}
	t, _ := r.refText(word)
	v, err := strconv.Atoi(strings.TrimSuffix(norm(t), "%"))
	if err != nil || v < 0 || v > 100 {
		return 0, 0, false
	}
	e := elems[i]
	return int32(action.ToGrid(e.Bounds[0]+v*e.Bounds[2]/100, e.Screen[0])), int32(e.Y), true
}

// refsTo lists the markers of the instruction's quotes and words whose text
// is s ("q2", "w6").
func (r refs) refsTo(s string) []string {
	want := norm(s)
	if want == "" {
		return nil
	}
	var out []string
	for k, q := range r.quotes {
		if norm(q) == want {
			out = append(out, "q"+strconv.Itoa(k+1))
		}
	}
	for k, w := range r.words {
		if norm(w) == want {
			out = append(out, r.wordMarker(k))
		}
	}
	return out
}

// refText is the instruction text a "q<k>" or "w<k>" marker stands for.
func (r refs) refText(m string) (string, bool) {
	if n, ok := index(m, "q"); ok && n >= 1 && n <= len(r.quotes) {
		return r.quotes[n-1], true
	}
	if n, ok := r.wordIndex(m); ok {
		return r.words[n], true
	}
	return "", false
}

// cell resolves "cell <col> <row>": the listed table cell whose column
// header is the text of marker col and whose row label is the text of
// marker row, or with row "top" the topmost listed cell of that column.
func (r refs) cell(elems []Element, col, row string) (int, bool) {
	c, ok := r.refText(col)
	if !ok || norm(c) == "" {
		return 0, false
	}
	var rw string
	if row != "top" {
		if rw, ok = r.refText(row); !ok || norm(rw) == "" {
			return 0, false
		}
	}
	found := -1
	for j, e := range elems {
		if e.Role != "cell" || norm(e.Col) != norm(c) {
			continue
		}
		if row == "top" {
			if found < 0 || e.Y < elems[found].Y {
				found = j
			}
		} else if norm(e.Row) == norm(rw) {
			return j, true
		}
	}
	return found, found >= 0
}

// cellRef is a spreadsheet address or range as instructions write them
// ("B6", "B2:B5").
var cellRef = regexp.MustCompile(`^[A-Z]{1,3}[0-9]{1,6}(:[A-Z]{1,3}[0-9]{1,6})?$`)

// formula writes a spreadsheet formula "=NAME(REF)" whose reference is a
// word of the instruction ("... of the Amount column (B2:B5).") as
// "formula name wK": the function is a word the policy picks (sum,
// average, min, max), the range the instruction's own, so every instance
// of a family reads alike whatever range it names.
func (r refs) formula(text string) (string, bool) {
	call, isFormula := strings.CutPrefix(text, "=")
	name, ref, hasArgs := strings.Cut(call, "(")
	ref, closed := strings.CutSuffix(ref, ")")
	if !isFormula || !hasArgs || !closed || !functionName(name) || !cellRef.MatchString(ref) {
		return "", false
	}
	for k, w := range r.words {
		if cutSpan(w, punctuation) == ref {
			return "formula " + strings.ToLower(name) + " " + r.wordMarker(k), true
		}
	}
	return "", false
}

// formulaText is the text "formula name wK" stands for, if word K is a
// cell reference.
func (r refs) formulaText(name, word string) (string, bool) {
	if !isWordMarker(word) || !functionName(name) {
		return "", false
	}
	t, ok := r.refText(word)
	if ref := cutSpan(t, punctuation); ok && cellRef.MatchString(ref) {
		return "=" + strings.ToUpper(name) + "(" + ref + ")", true
	}
	return "", false
}

// functionName reports whether s can be a spreadsheet function's name:
// ASCII letters only.
func functionName(s string) bool {
	if s == "" || len(s) > 12 {
		return false
	}
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// properNoun reports whether word k is capitalised inside a sentence.
func properNoun(words []string, k int) bool {
	if k == 0 {
		return false
	}
	w := strings.TrimLeft(words[k], `"'(`)
	if w == "" || !unicode.IsUpper([]rune(w)[0]) {
		return false
	}
	return !strings.ContainsAny(words[k-1][len(words[k-1])-1:], ".:!?")
}

// isWordMarker reports whether m has a word marker's form ("w3", "w-1"),
// whether or not it names a word of the instruction.
func isWordMarker(m string) bool {
	_, fromStart := index(m, "w")
	_, fromEnd := index(m, "w-")
	return fromStart || fromEnd
}

// index parses "<prefix><digits>".
func index(s, prefix string) (int, bool) {
	d, ok := strings.CutPrefix(s, prefix)
	if !ok || d == "" {
		return 0, false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(d)
	return n, err == nil
}

// spanTrims are the ways a span may be cut from the instruction: as is, with
// its surrounding quotes removed, or with quotes and punctuation removed.
var spanTrims = []struct{ marker, cut string }{{"", ""}, {"q", `"'`}, {"trim", punctuation}}

// findSpan finds text as a run of instruction words i..j (joined by the
// instruction's own separators), possibly trimmed, and returns "wI wJ [q|trim]"
// with each end a word marker (wordMarker).
func (r refs) findSpan(instruction, text string) (string, bool) {
	if text == "" {
		return "", false
	}
	starts, ends := wordOffsets(instruction)
	for _, tr := range spanTrims {
		for i := range starts {
			for j := i; j < len(ends) && ends[j]-starts[i] <= len(text)+2*len(tr.cut)+2; j++ {
				if cutSpan(instruction[starts[i]:ends[j]], tr.cut) == text {
					s := r.wordMarker(i) + " " + r.wordMarker(j)
					if tr.marker != "" {
						s += " " + tr.marker
					}
					return s, true
				}
			}
		}
	}
	return "", false
}

// findLines finds text as whole lines i..j of the instruction after its
// first, and returns "lines I -K", the end counted from the last line
// (K = 1 is the last line): a message body followed by a closing
// instruction ("Then send it.") then reads alike whatever its length.
func findLines(instruction, text string) (string, bool) {
	lines := strings.Split(instruction, "\n")
	n := len(lines)
	for i := 1; i < n; i++ {
		for j := i; j < n; j++ {
			if strings.Join(lines[i:j+1], "\n") == text {
				return fmt.Sprintf("lines %d -%d", i, n-j), true
			}
		}
	}
	return "", false
}

// tableCells splits the instruction's lines after its first into the cells
// of a table written as "City | Visitors | Rating"; nil for a line that is
// not a table row.
func tableCells(instruction string) [][]string {
	lines := strings.Split(instruction, "\n")
	rows := make([][]string, len(lines))
	for i := 1; i < len(lines); i++ {
		if strings.Contains(lines[i], " | ") {
			rows[i] = strings.Split(lines[i], " | ")
			for j := range rows[i] {
				rows[i][j] = strings.TrimSpace(rows[i][j])
			}
		}
	}
	return rows
}

// tableCell finds text as one cell of a table in the instruction and
// returns "cell R C" (R the line after the first, C the column, both from
// 1): entering the table cell by cell then reads as counting rows and
// columns, whatever words the cells hold.
func tableCell(instruction, text string) (string, bool) {
	for i, row := range tableCells(instruction) {
		for j, c := range row {
			if c != "" && c == text {
				return fmt.Sprintf("cell %d %d", i, j+1), true
			}
		}
	}
	return "", false
}

// tableCellText is the text "cell R C" stands for.
func tableCellText(instruction, row, col string) (string, bool) {
	i, err1 := strconv.Atoi(row)
	j, err2 := strconv.Atoi(col)
	rows := tableCells(instruction)
	if err1 != nil || err2 != nil || i < 1 || i >= len(rows) || j < 1 || j > len(rows[i]) {
		return "", false
	}
	return rows[i][j-1], true
}

// instructionLines is the text "lines I -K" stands for.
func instructionLines(instruction, from, toEnd string) (string, bool) {
	lines := strings.Split(instruction, "\n")
	i, err1 := strconv.Atoi(from)
	k, err2 := strconv.Atoi(toEnd)
	j := len(lines) + k + 1 // end, exclusive; k = -1 takes the last line
	if err1 != nil || err2 != nil || i < 1 || k > -1 || j <= i || j > len(lines) {
		return "", false
	}
	return strings.Join(lines[i:j], "\n"), true
}

// cutSpan removes one leading and trailing run of cut characters.
func cutSpan(s, cut string) string {
	if cut == "" {
		return s
	}
	if cut == `"'` {
		// Quotes only: keep the punctuation inside them.
		s = strings.TrimLeft(s, cut)
		return strings.TrimRight(strings.TrimRight(s, ".,;:"), cut)
	}
	return strings.Trim(s, cut)
}

func wordOffsets(s string) (starts, ends []int) {
	in := false
	for i, r := range s {
		sp := unicode.IsSpace(r)
		if !sp && !in {
			starts = append(starts, i)
			in = true
		} else if sp && in {
			ends = append(ends, i)
			in = false
		}
	}
	if in {
		ends = append(ends, len(s))
	}
	return starts, ends
}

// maxHotkeyKeys bounds a chord: modifiers and one key ("ctrl shift s").
const maxHotkeyKeys = 4

// Decode turns the policy's action text back into an environment action,
// resolving element pointers against the observation and instruction
// references against the instruction. Text it cannot read is an "unknown"
// action, which the environment records as a no-op with an error (and
// which the checkpoint policy redraws). The whole text must be the action:
// a response that runs on past it ("type w6 w6 w6 w6", "done e17 button")
// is unknown, not the action its first words would make, so that the
// policy is never rewarded for a malformed response that happened to work.
func Decode(text string, elems []Element, instruction string) schemas.Action {
	f := strings.Fields(text)
	unknown := schemas.Action{Kind: schemas.ActionUnknown, Text: text}
	if len(f) == 0 {
		return unknown
	}
	r := newRefs(instruction)
	point := func(args []string) (x, y *int32, rest []string, ok bool) {
		if len(args) >= 2 && strings.HasPrefix(args[0], "x:") && strings.HasPrefix(args[1], "y:") {
			xv, err1 := strconv.Atoi(args[0][2:])
			yv, err2 := strconv.Atoi(args[1][2:])
			if err1 != nil || err2 != nil {
				return nil, nil, nil, false
			}
			xx, yy := int32(xv), int32(yv)
			return &xx, &yy, args[2:], true
		}
		i, rest, ok := r.resolve(elems, args)
		if !ok || i < 0 || i >= len(elems) {
			return nil, nil, nil, false
		}
		xx, yy := int32(elems[i].X), int32(elems[i].Y)
		return &xx, &yy, rest, true
	}
	switch k := f[0]; k {
	case "click", "double_click", "right_click", "triple_click", "middle_click", "mouse_move":
		// "<slider> at wK"; an element whose name ends in "at <word>" still
		// resolves by role and name below.
		if n := len(f); k == "click" && n >= 4 && f[n-2] == "at" {
			if x, y, ok := r.sliderAt(elems, f[1:n-2], f[n-1]); ok {
				return schemas.Action{Kind: k, X: &x, Y: &y}
			}
		}
		x, y, rest, ok := point(f[1:])
		if !ok || len(rest) > 0 {
			return unknown
		}
		if k == "mouse_move" {
			k = "move"
		}
		return schemas.Action{Kind: k, X: x, Y: y}
	case "drag":
		x, y, rest, ok := point(f[1:])
		x2, y2, rest2, ok2 := point(rest)
		if !ok || !ok2 || len(rest2) > 0 {
			return unknown
		}
		return schemas.Action{Kind: "drag", X: x, Y: y, X2: x2, Y2: y2}
	case "type":
		args := f[1:]
		nl := len(args) > 0 && args[len(args)-1] == "nl"
		tab := len(args) > 0 && args[len(args)-1] == "tab"
		if nl || tab {
			args = args[:len(args)-1]
		}
		var body string
		switch {
		case len(args) == 1 && args[0] == "body" && r.body != "":
			body = r.body
		case len(args) == 1 && strings.HasPrefix(args[0], "q"):
			n, ok := index(args[0], "q")
			if !ok || n < 1 || n > len(r.quotes) {
				return unknown
			}
			body = r.quotes[n-1]
		case len(args) >= 2 && isWordMarker(args[0]) && isWordMarker(args[1]):
			i, ok1 := r.wordIndex(args[0])
			j, ok2 := r.wordIndex(args[1])
			starts, ends := wordOffsets(instruction)
			if !ok1 || !ok2 || j < i || j >= len(ends) || len(args) > 3 {
				return unknown
			}
			body = instruction[starts[i]:ends[j]]
			if len(args) == 3 {
				// Only a trim marker may follow the span: anything else is
				// a response that ran on past its action ("type w6 w6 w6"),
				// which must not execute as if it were "type w6 w6".
				trimmed := false
				for _, tr := range spanTrims {
					if tr.marker != "" && tr.marker == args[2] {
						body, trimmed = cutSpan(body, tr.cut), true
					}
				}
				if !trimmed {
					return unknown
				}
			}
		case len(args) == 3 && args[0] == "lines":
			var ok bool
			if body, ok = instructionLines(instruction, args[1], args[2]); !ok {
				return unknown
			}
		case len(args) == 3 && args[0] == "formula":
			var ok bool
			if body, ok = r.formulaText(args[1], args[2]); !ok {
				return unknown
			}
		case len(args) == 3 && args[0] == "cell":
			var ok bool
			if body, ok = tableCellText(instruction, args[1], args[2]); !ok {
				return unknown
			}
		case len(args) >= 1 && args[0] == "lit":
			body = strings.Join(args[1:], " ")
		default:
			return unknown
		}
		if nl {
			body += "\n"
		} else if tab {
			body += "\t"
		}
		return schemas.Action{Kind: "type", Text: body}
	case "key":
		n := int32(1)
		var keys []string
		for _, a := range f[1:] {
			if a == "again" {
				n++
			} else {
				keys = append(keys, a)
			}
		}
		if len(keys) != 1 {
			return unknown
		}
		return schemas.Action{Kind: "key", Keys: keys, Amount: n}
	case "hotkey":
		if len(f) < 3 || len(f) > 1+maxHotkeyKeys {
			return unknown
		}
		for _, key := range f[1:] {
			if _, err := action.NormalizeKey(key); err != nil {
				return unknown
			}
		}
		return schemas.Action{Kind: "hotkey", Keys: f[1:]}
	case "scroll":
		if len(f) < 3 {
			return unknown
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return unknown
		}
		a := schemas.Action{Kind: "scroll", Direction: f[1], Amount: int32(n)}
		if len(f) > 3 {
			x, y, rest, ok := point(f[3:])
			if !ok || len(rest) > 0 {
				return unknown
			}
			a.X, a.Y = x, y
		}
		return a
	case "wait", "done", "fail":
		if len(f) > 1 {
			return unknown // "done e17 button ...": a run-on, not a final answer
		}
		return schemas.Action{Kind: k}
	}
	return unknown
}
