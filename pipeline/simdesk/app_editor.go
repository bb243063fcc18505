package simdesk

import (
	"fmt"
	"image"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

// editorApp is a plain-text editor: open, edit, save, save as, find and
// replace, go to a line, with an unsaved-changes indicator and prompt.
type editorApp struct{}

const (
	lineH   = 16
	gutterW = 44
)

func (editorApp) id() string   { return "editor" }
func (editorApp) name() string { return "Text Editor" }

func (editorApp) title(s *State) string {
	name := "Untitled"
	if s.Editor.Path != "" {
		name = path.Base(s.Editor.Path)
	}
	if s.Editor.Dirty {
		name = "*" + name
	}
	return name + " - Text Editor"
}

func (editorApp) menus() []menuDef {
	return []menuDef{
		{"File", []menuItem{{"New", "Ctrl+N", "new"}, {"Open...", "Ctrl+O", "open"}, {"Save", "Ctrl+S", "save"},
			{"Save As...", "Ctrl+Shift+S", "save_as"}, sep(), {"Close", "Ctrl+W", "close"}}},
		{"Edit", []menuItem{{"Select All", "Ctrl+A", "select_all"}, {"Copy", "Ctrl+C", "copy"}, {"Cut", "Ctrl+X", "cut"},
			{"Paste", "Ctrl+V", "paste"}, sep(), {"Find and Replace...", "Ctrl+H", "replace"}, {"Go to Line...", "Ctrl+G", "goto"}}},
	}
}

func (editorApp) openMenu(s *State) *string      { return &s.Editor.Menu }
func (editorApp) popupOpen(s *State) bool        { return s.Editor.Menu != "" }
func (editorApp) closePopups(s *State)           { s.Editor.Menu = "" }
func (editorApp) modal(s *State) bool            { return s.Editor.Dialog != nil }
func (editorApp) reset(d *Desktop)               { d.S.Editor = EditorState{Buf: newBuffer("")} }
func (a editorApp) requestClose(d *Desktop) bool { return a.guard(d, "close") }

// editorLayout splits the content area below the menu bar.
type editorLayout struct {
	text, status image.Rectangle
	rows         int
}

func layoutEditor(c image.Rectangle) editorLayout {
	var l editorLayout
	l.status = image.Rect(c.Min.X+1, c.Max.Y-22, c.Max.X-1, c.Max.Y-1)
	l.text = image.Rect(c.Min.X+4, c.Min.Y+4, c.Max.X-4, l.status.Min.Y-4)
	l.rows = max((l.text.Dy()-8)/lineH, 1)
	return l
}

// textOrigin is where the first visible character is drawn.
func (l editorLayout) textOrigin() image.Point {
	return image.Pt(l.text.Min.X+gutterW+6, l.text.Min.Y+4)
}

func (a editorApp) build(d *Desktop, win *Node, content image.Rectangle) {
	s := &d.S
	e := &s.Editor
	c := buildMenuBar(win, a, s, content)
	l := layoutEditor(c)
	b := &e.Buf
	ta := win.add(&Node{ID: "editor/text", Role: RoleTextArea, Name: "Document", Value: b.Text(), Rect: l.text, States: StEditable | StMultiline})
	if e.Dialog == nil && e.Menu == "" && s.Focused() == "editor" {
		ta.States |= StFocused
	}
	if e.Dirty {
		ta.States |= StModified
	}
	ta.add(&Node{Role: RolePanel, Rect: image.Rect(l.text.Min.X+1, l.text.Min.Y+1, l.text.Min.X+gutterW, l.text.Max.Y-1), Style: cPanel, States: stDrawOnly})
	o := l.textOrigin()
	top := min(max(b.Top, 0), max(len(b.Lines)-1, 0))
	width := l.text.Max.X - 14 - o.X
	for i := top; i < len(b.Lines) && i < top+l.rows; i++ {
		y := o.Y + (i-top)*lineH
		ta.text(rect(l.text.Min.X+2, y+1, gutterW-8, charH), itoa(i+1), cMuted|styRight)
		if b.All && (b.Lines[i] != "" || len(b.Lines) > 1) {
			ta.add(&Node{Role: RolePanel, Rect: rect(o.X, y, min(max(textWidth(b.Lines[i]), charW), width), lineH), Style: cAccentLight, States: stDrawOnly})
		}
		if b.Sel > 0 && i == b.Line {
			ta.add(&Node{Role: RolePanel, Rect: rect(o.X+b.Col*charW, y, min(b.Sel*charW, width), lineH), Style: cAccentLight, States: stDrawOnly})
		}
		ta.add(&Node{Role: RoleParagraph, Name: b.Lines[i], Rect: rect(o.X, y, width, lineH), States: stDrawOnly})
	}
	if ta.States&StFocused != 0 && !b.All && b.Line >= top && b.Line < top+l.rows {
		col := min(b.Col, utf8.RuneCountInString(b.Lines[b.Line]))
		ta.add(&Node{Role: RoleCaret, Rect: rect(o.X+col*charW, o.Y+(b.Line-top)*lineH, 1, lineH), States: stDrawOnly})
	}
	scrollBar(ta, "editor/scroll", image.Rect(l.text.Max.X-12, l.text.Min.Y+1, l.text.Max.X-1, l.text.Max.Y-1), top, l.rows, len(b.Lines)+l.rows-1)
	state := "Saved"
	if e.Dirty {
		state = "Modified"
	}
	where := "Untitled"
	if e.Path != "" {
		where = vfs.Short(e.Path)
	}
	win.add(&Node{Role: RoleStatusBar, Name: fmt.Sprintf("Ln %d, Col %d   %s   %s", b.Line+1, b.Col+1, state, where), Rect: l.status})
	if e.Dialog != nil {
		buildDialog(win, "editor", e.Dialog, editorDialogSpec(e), content, &s.FS)
	}
	buildMenuPopup(win, a, s, content)
}

func editorDialogSpec(e *EditorState) dialogSpec {
	dl := e.Dialog
	switch dl.Kind {
	case "open":
		return dialogSpec{title: "Open File", fields: []string{"File"}, files: true, buttons: []dlgButton{{"cancel", "Cancel", false}, {"ok", "Open", true}}}
	case "save_as":
		return dialogSpec{title: "Save As", fields: []string{"Save as"}, files: true, buttons: []dlgButton{{"cancel", "Cancel", false}, {"ok", "Save", true}}}
	case "unsaved":
		name := "Untitled"
		if e.Path != "" {
			name = path.Base(e.Path)
		}
		return dialogSpec{title: "Unsaved Changes", message: "Save changes to \"" + name + "\" before continuing?",
			buttons: []dlgButton{{"cancel", "Cancel", false}, {"discard", "Don't Save", false}, {"ok", "Save", true}}}
	case "replace":
		return dialogSpec{title: "Find and Replace", fields: []string{"Find", "Replace with"},
			buttons: []dlgButton{{"cancel", "Close", false}, {"ok", "Replace All", true}}}
	case "goto":
		return dialogSpec{title: "Go to Line", fields: []string{"Line number"},
			buttons: []dlgButton{{"cancel", "Cancel", false}, {"ok", "Go", true}}}
	}
	return dialogSpec{title: "Text Editor", buttons: []dlgButton{{"cancel", "OK", true}}}
}

// guard runs then (close, new, open_dialog or open:<path>) now if the
// document has no unsaved changes, or asks first and reports false.
func (a editorApp) guard(d *Desktop, then string) bool {
	e := &d.S.Editor
	if !e.Dirty {
		return true
	}
	e.Menu = ""
	e.Dialog = &Dialog{Kind: "unsaved", Then: then}
	return false
}

// proceed continues an action that was waiting for unsaved changes.
func (a editorApp) proceed(d *Desktop, then string) {
	e := &d.S.Editor
	switch {
	case then == "close":
		d.forceClose("editor")
		a.reset(d)
	case then == "new":
		*e = EditorState{Buf: newBuffer("")}
	case then == "open_dialog":
		a.openDialog(d)
	case strings.HasPrefix(then, "open:"):
		a.load(d, then[len("open:"):])
	}
}

func (a editorApp) openDialog(d *Desktop) {
	e := &d.S.Editor
	dir := vfs.Home + "/Documents"
	if e.Path != "" {
		dir = path.Dir(e.Path)
	}
	e.Dialog = &Dialog{Kind: "open"}
	e.Dialog.Field.SetText(vfs.Short(dir) + "/")
}

// load reads a file into the editor (unsaved changes are dropped; callers
// guard first).
func (a editorApp) load(d *Desktop, p string) bool {
	text, err := d.S.FS.Read(p)
	if err != nil {
		d.S.Editor.Dialog = &Dialog{Kind: "error", Error: "Cannot open " + vfs.Short(p) + ": " + errText(err)}
		return false
	}
	d.S.Editor = EditorState{Path: p, Buf: newBuffer(text)}
	return true
}

// save writes the document to p.
func (a editorApp) save(d *Desktop, p string) error {
	e := &d.S.Editor
	if d.S.FS.IsDir(p) {
		return fmt.Errorf("%s is a folder", vfs.Short(p))
	}
	if err := d.S.FS.Write(p, e.Buf.Text()); err != nil {
		return err
	}
	e.Path, e.Dirty = p, false
	return nil
}

func (a editorApp) command(d *Desktop, cmd string) {
	e := &d.S.Editor
	b := &e.Buf
	switch cmd {
	case "new":
		if a.guard(d, "new") {
			a.proceed(d, "new")
		}
	case "open":
		if a.guard(d, "open_dialog") {
			a.openDialog(d)
		}
	case "save":
		if e.Path == "" {
			a.saveAsDialog(d, "")
			return
		}
		if err := a.save(d, e.Path); err != nil {
			e.Dialog = &Dialog{Kind: "error", Error: "Cannot save: " + errText(err)}
		}
	case "save_as":
		a.saveAsDialog(d, "")
	case "close":
		d.closeWindow("editor")
	case "select_all":
		b.All = true
	case "copy", "cut":
		if b.All {
			d.S.Clipboard = b.Text()
			if cmd == "cut" {
				b.clearAll()
				e.Dirty = true
			}
		} else if sel := b.selected(); sel != "" {
			d.S.Clipboard = sel
			if cmd == "cut" {
				b.dropSel()
				e.Dirty = true
			}
		}
	case "paste":
		if d.S.Clipboard != "" && b.insert(d.S.Clipboard) {
			e.Dirty = true
		}
	case "replace":
		e.Dialog = &Dialog{Kind: "replace"}
	case "goto":
		e.Dialog = &Dialog{Kind: "goto"}
	}
	a.follow(d)
}

func (a editorApp) saveAsDialog(d *Desktop, then string) {
	e := &d.S.Editor
	name := vfs.Home + "/Documents/Untitled.txt"
	if e.Path != "" {
		name = e.Path
	}
	e.Dialog = &Dialog{Kind: "save_as", Then: then}
	e.Dialog.Field.SetText(vfs.Short(name))
}

// follow keeps the caret visible after it moved.
func (a editorApp) follow(d *Desktop) {
	l := layoutEditor(d.contentRect("editor"))
	d.S.Editor.Buf.scrollTo(l.rows)
}

func (a editorApp) dialogDone(d *Desktop, cmd string) {
	e := &d.S.Editor
	if docDialogDone(d, a, &e.Dialog, e.Path, cmd) {
		return
	}
	dl := e.Dialog
	switch {
	case dl.Kind == "replace" && cmd == "ok":
		find := dl.Field.Text
		if find == "" {
			dl.Error = "Nothing to find"
			return
		}
		text := e.Buf.Text()
		n := strings.Count(text, find)
		dl.Error, dl.Info = "", fmt.Sprintf("Replaced %d occurrence(s)", n)
		if n > 0 {
			e.Buf = newBuffer(strings.ReplaceAll(text, find, dl.Field2.Text))
			e.Dirty = true
		}
	case dl.Kind == "goto" && cmd == "ok":
		n, err := strconv.Atoi(strings.TrimSpace(dl.Field.Text))
		if err != nil || n < 1 || n > len(e.Buf.Lines) {
			dl.Error = fmt.Sprintf("Line number must be 1 to %d", len(e.Buf.Lines))
			return
		}
		e.Dialog = nil
		e.Buf.All, e.Buf.Sel, e.Buf.Line, e.Buf.Col = false, 0, n-1, 0
		a.follow(d)
	}
}

func (a editorApp) click(d *Desktop, local string, ev ptrEvent) {
	e := &d.S.Editor
	if e.Dialog != nil {
		if cmd := dialogClick(d, e.Dialog, editorDialogSpec(e), local, ev); cmd != "" {
			a.dialogDone(d, cmd)
		}
		return
	}
	l := layoutEditor(d.contentRect("editor"))
	b := &e.Buf
	switch local {
	case "text":
		if ev.kind == "right_click" || ev.kind == "middle_click" {
			return
		}
		o := l.textOrigin()
		b.clamp()
		line := b.Top + (ev.p.Y-o.Y)/lineH
		if ev.p.Y < o.Y {
			line = b.Top
		}
		b.All, b.Sel = false, 0
		b.Line = min(max(line, 0), len(b.Lines)-1)
		b.Col = max((ev.p.X-o.X+charW/2)/charW, 0)
		b.clamp()
		if ev.kind == "triple_click" {
			b.All = true
		}
	case "scroll":
		top := min(max(b.Top, 0), max(len(b.Lines)-1, 0))
		b.Top = scrollBarClick(ev.node, ev.p, top, l.rows, len(b.Lines)+l.rows-1)
	}
}

func (a editorApp) key(d *Desktop, k Key) {
	e := &d.S.Editor
	if e.Dialog != nil {
		if cmd := dialogKey(e.Dialog, editorDialogSpec(e), k); cmd != "" {
			a.dialogDone(d, cmd)
		}
		return
	}
	cmds := map[string]string{"ctrl+n": "new", "ctrl+o": "open", "ctrl+s": "save", "ctrl+shift+s": "save_as",
		"ctrl+w": "close", "ctrl+c": "copy", "ctrl+x": "cut", "ctrl+v": "paste", "ctrl+h": "replace", "ctrl+f": "replace", "ctrl+g": "goto"}
	if cmd, ok := cmds[k.Combo()]; ok {
		a.command(d, cmd)
		return
	}
	l := layoutEditor(d.contentRect("editor"))
	handled, changed := e.Buf.key(k, l.rows)
	if !handled {
		if ch, ok := k.char(); ok {
			changed = e.Buf.insert(ch)
		}
	}
	if changed {
		e.Dirty = true
	}
	e.Buf.scrollTo(l.rows)
}

func (a editorApp) typeText(d *Desktop, text string) {
	e := &d.S.Editor
	if e.Dialog != nil {
		dialogType(e.Dialog, editorDialogSpec(e), text)
		return
	}
	if e.Buf.insert(text) {
		e.Dirty = true
	}
	a.follow(d)
}

func (a editorApp) scroll(d *Desktop, local string, dy int) {
	e := &d.S.Editor
	if e.Dialog != nil {
		if strings.HasPrefix(local, "dlg:") {
			dialogScroll(d, e.Dialog, dy)
		}
		return
	}
	if local == "text" || local == "scroll" {
		e.Buf.Top = min(max(e.Buf.Top+dy*3, 0), max(len(e.Buf.Lines)-1, 0))
	}
}

func (editorApp) drag(d *Desktop, from, to string, ev ptrEvent) {}
