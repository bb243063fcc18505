package simdesk

import (
	"image"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
	"github.com/cualake/cualake/schemas"
)

// textGoal makes a file hold a text: open it (or start a new document),
// edit the buffer toward the target with the fewest keystrokes the planner
// knows (one changed span: move the caret, delete, type; a changed line:
// go to it, select it, type it), and save. With editorOnly it edits
// whatever document is open and does not save.
type textGoal struct {
	path       string
	target     string
	crit       []int
	editorOnly bool
}

func (g *textGoal) done(p *planner, d *Desktop) bool { return p.holds(d, g.crit...) }

func (g *textGoal) next(p *planner, d *Desktop) (schemas.Action, error) {
	if a, ok, err := focusApp(d, "editor"); ok || err != nil {
		return a, err
	}
	e := &d.S.Editor
	_, exists := d.S.FS.Stat(g.path)
	if dl := e.Dialog; dl != nil {
		switch {
		case dl.Kind == "open" && exists && dl.Error == "" && !g.editorOnly:
			return fillField(&dl.Field, vfs.Short(g.path), true), nil
		case dl.Kind == "save_as" && dl.Error == "" && !g.editorOnly:
			return fillField(&dl.Field, vfs.Short(g.path), true), nil
		case dl.Kind == "replace" && dl.Error == "":
			if old, nw, ok := replacePair(e.Buf.Text(), g.target); ok {
				return fillReplace(d, dl, old, nw)
			}
		case dl.Kind == "goto" && dl.Error == "":
			if n, _, ok := changedLine(e.Buf.Text(), g.target); ok {
				return fillField(&dl.Field, strconv.Itoa(n+1), true), nil
			}
		case dl.Kind == "unsaved":
			btn := "discard"
			if e.Path == g.path {
				btn = "ok"
			}
			return clickID(d, action.Click, "editor/dlg:btn:"+btn)
		}
		return key("escape"), nil
	}
	if !g.editorOnly && e.Path != g.path {
		switch {
		case exists:
			return hotkey("ctrl", "o"), nil
		case e.Path != "" && e.Buf.Text() == g.target:
			// The open document already holds the text: save a copy.
			return hotkey("ctrl", "shift", "s"), nil
		case e.Path != "":
			return hotkey("ctrl", "n"), nil
		}
	}
	if cur := e.Buf.Text(); cur != g.target {
		return editStep(d, g.target)
	}
	if g.editorOnly {
		return action.Simple(action.Done), nil // unreachable: the criterion holds once the text matches
	}
	return hotkey("ctrl", "s"), nil
}

// editStep takes one step of editing the editor's buffer toward target.
func editStep(d *Desktop, target string) (schemas.Action, error) {
	b := &d.S.Editor.Buf
	cur := b.Text()
	if b.All {
		if target == "" {
			return key("backspace"), nil
		}
		return typeText(target), nil
	}
	if _, _, ok := replacePair(cur, target); ok {
		return hotkey("ctrl", "h"), nil
	}
	if n, line, ok := changedLine(cur, target); ok {
		return rewriteLine(b, n, line), nil
	}
	start, del, ins := diffSpan(cur, target)
	tlen := utf8.RuneCountInString(target)
	if cur != "" && (del > action.MaxRepeat || del+utf8.RuneCountInString(ins) > tlen*3/5+20) && target != "" {
		return hotkey("ctrl", "a"), nil // retyping is shorter than editing
	}
	if b.Offset() != start {
		return moveCaret(d, cur, start)
	}
	if del > 0 {
		return action.KeyAction("delete", del), nil
	}
	return typeText(ins), nil
}

// changedLine reports the one line n whose text differs between cur and
// target, and its new text, when that is the whole change and the edit
// deletes some of the line (not an append to it): the line is then
// rewritten whole, as a person does ("change line 3 to read ..."), so the
// plan names the line by its number and types the new line, whatever the
// old and new lines share.
func changedLine(cur, target string) (int, string, bool) {
	a, b := strings.Split(cur, "\n"), strings.Split(target, "\n")
	if len(a) != len(b) {
		return 0, "", false
	}
	n := -1
	for i := range a {
		if a[i] != b[i] {
			if n >= 0 {
				return 0, "", false
			}
			n = i
		}
	}
	if n < 0 || a[n] == "" || strings.HasPrefix(b[n], a[n]) {
		return 0, "", false
	}
	return n, b[n], true
}

// rewriteLine takes one step of replacing line n with text: Go to Line,
// select to the line's end, type.
func rewriteLine(b *Buffer, n int, text string) schemas.Action {
	b.clamp()
	switch {
	case b.Line != n || b.Col != 0:
		return hotkey("ctrl", "g")
	case b.Sel < utf8.RuneCountInString(b.Lines[n]):
		return hotkey("shift", "end")
	case text == "":
		return key("delete") // the line is emptied, not retyped
	}
	return typeText(text)
}

// replacePair finds a word whose every occurrence in cur, replaced by
// another word, gives target: the edit Find and Replace makes in one go.
// The words are the letter-and-digit runs at the first place the texts
// differ.
func replacePair(cur, target string) (old, nw string, ok bool) {
	p, _, _ := diffSpan(cur, target)
	old, nw = wordAt([]rune(cur), p), wordAt([]rune(target), p)
	if old == "" || nw == "" || old == nw {
		return "", "", false
	}
	return old, nw, strings.ReplaceAll(cur, old, nw) == target
}

// wordAt is the run of letters and digits around rune offset p (starting
// at the run's beginning even when p is inside it), or "".
func wordAt(r []rune, p int) string {
	in := func(i int) bool { return i >= 0 && i < len(r) && (unicode.IsLetter(r[i]) || unicode.IsDigit(r[i])) }
	if !in(p) {
		return ""
	}
	i, j := p, p
	for in(i - 1) {
		i--
	}
	for in(j) {
		j++
	}
	return string(r[i:j])
}

// fillReplace takes one step of filling the Find and Replace dialog with
// old and nw and pressing Replace All.
func fillReplace(d *Desktop, dl *Dialog, old, nw string) (schemas.Action, error) {
	switch {
	case dl.Field.Text != old || dl.Field.All:
		if dl.Focus != 0 {
			return clickID(d, action.Click, "editor/dlg:field0")
		}
		return fillField(&dl.Field, old, false), nil
	case dl.Field2.Text != nw || dl.Field2.All:
		if dl.Focus != 1 {
			return clickID(d, action.Click, "editor/dlg:field1")
		}
		return fillField(&dl.Field2, nw, false), nil
	}
	return clickID(d, action.Click, "editor/dlg:btn:ok")
}

// diffSpan returns the one span where cur and target differ: its start (in
// runes), how many runes of cur to delete there and what to insert.
func diffSpan(cur, target string) (int, int, string) {
	a, b := []rune(cur), []rune(target)
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	return pre, len(a) - pre - suf, string(b[pre : len(b)-suf])
}

// moveCaret puts the editor's caret at a rune offset: ctrl+end for the end,
// a click when the line is on screen, else a scroll toward it.
func moveCaret(d *Desktop, text string, off int) (schemas.Action, error) {
	b := &d.S.Editor.Buf
	if off == utf8.RuneCountInString(text) {
		return hotkey("ctrl", "end"), nil
	}
	if off == 0 {
		return hotkey("ctrl", "home"), nil
	}
	line, col := 0, 0
	for i, r := range []rune(text) {
		if i == off {
			break
		}
		if r == '\n' {
			line, col = line+1, 0
		} else {
			col++
		}
	}
	l := layoutEditor(d.contentRect("editor"))
	top := min(max(b.Top, 0), max(len(b.Lines)-1, 0))
	if line < top || line >= top+l.rows {
		return scrollToward(d, "editor/text", line, top, l.rows, 3)
	}
	o := l.textOrigin()
	return pointAction(d, action.Click, image.Pt(o.X+col*charW, o.Y+(line-top)*lineH+lineH/2)), nil
}

// saveGoal saves the editor's document (through Save As when untitled,
// keeping the suggested name).
type saveGoal struct{ crit []int }

func (g *saveGoal) done(p *planner, d *Desktop) bool { return p.holds(d, g.crit...) }

func (g *saveGoal) next(p *planner, d *Desktop) (schemas.Action, error) {
	if a, ok, err := focusApp(d, "editor"); ok || err != nil {
		return a, err
	}
	if dl := d.S.Editor.Dialog; dl != nil {
		switch dl.Kind {
		case "save_as":
			if dl.Error == "" {
				return key("enter"), nil
			}
		case "unsaved":
			return clickID(d, action.Click, "editor/dlg:btn:ok")
		}
		return key("escape"), nil
	}
	return hotkey("ctrl", "s"), nil
}
