package simdesk

import (
	"image"
	"path"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

// dlgButton is a dialog button; its id is "dlg:btn:<cmd>".
type dlgButton struct {
	cmd, label string
	primary    bool
}

// dialogSpec describes how to draw a dialog; the state lives in Dialog.
type dialogSpec struct {
	title   string
	message string
	fields  []string // labels of Field and Field2
	files   bool     // list the folder of Field's path under the fields
	buttons []dlgButton
}

const dialogW, dialogFilesH = 540, 200

// dialogRect centres a dialog of height h in the window content.
func dialogRect(content image.Rectangle, h int) image.Rectangle {
	w := min(dialogW, content.Dx()-20)
	x := content.Min.X + (content.Dx()-w)/2
	y := content.Min.Y + max((content.Dy()-h)/3, 10)
	return rect(x, y, w, h)
}

// dialogDir returns the folder a file dialog lists: the path typed so far
// up to its last slash.
func dialogDir(text string) string {
	t := strings.TrimSpace(text)
	if t == "" {
		return vfs.Home
	}
	if strings.HasSuffix(t, "/") {
		if p, err := vfs.Clean(t); err == nil {
			return p
		}
		return ""
	}
	if p, err := vfs.Clean(t); err == nil {
		return path.Dir(p)
	}
	return ""
}

const dialogVisibleFiles = dialogFilesH / rowH

// buildDialog draws a dialog and its widgets (ids "<app>/dlg:...").
func buildDialog(win *Node, appID string, dl *Dialog, spec dialogSpec, content image.Rectangle, fs *vfs.FS) {
	h := 24 + 16 + len(spec.fields)*34 + 28 + 44
	if spec.message != "" {
		h += 22
	}
	if spec.files {
		h += dialogFilesH + 8
	}
	r := dialogRect(content, h)
	n := win.add(&Node{ID: appID + "/dlg:bg", Role: RoleDialog, Name: spec.title, Rect: r, States: StModal})
	y := r.Min.Y + 34
	if spec.message != "" {
		n.label(rect(r.Min.X+14, y, r.Dx()-28, 18), spec.message, cText)
		y += 22
	}
	for i, lbl := range spec.fields {
		f := &dl.Field
		if i == 1 {
			f = &dl.Field2
		}
		n.label(rect(r.Min.X+14, y+6, 90, 18), lbl, cText)
		textField(n, appID+"/dlg:field"+itoa(i), lbl, f, rect(r.Min.X+110, y, r.Dx()-124, 26), dl.Focus == i)
		y += 34
	}
	if spec.files {
		list := n.add(&Node{ID: appID + "/dlg:list", Role: RoleList, Name: "Files", Rect: rect(r.Min.X+14, y, r.Dx()-28, dialogFilesH)})
		dir := dialogDir(dl.Field.Text)
		entries, _ := fs.Children(dir)
		top := clampScroll(dl.Scroll, dialogVisibleFiles, len(entries)) // views never write state
		for i := top; i < len(entries) && i < top+dialogVisibleFiles; i++ {
			e := entries[i]
			it := list.add(&Node{ID: appID + "/dlg:item:" + e.Name(), Role: RoleListItem, Name: e.Name(),
				Rect: rect(list.Rect.Min.X+1, list.Rect.Min.Y+1+(i-top)*rowH, list.Rect.Dx()-14, rowH), Style: iconFor(e)})
			if e.Name() == dl.Pick {
				it.States |= StSelected
			}
		}
		scrollBar(list, appID+"/dlg:scroll", image.Rect(list.Rect.Max.X-12, list.Rect.Min.Y+1, list.Rect.Max.X-1, list.Rect.Max.Y-1), top, dialogVisibleFiles, len(entries))
		y += dialogFilesH + 8
	}
	if dl.Error != "" {
		n.label(rect(r.Min.X+14, y+4, r.Dx()-28, 18), dl.Error, cRed)
	} else if dl.Info != "" {
		n.label(rect(r.Min.X+14, y+4, r.Dx()-28, 18), dl.Info, cMuted)
	}
	bx := r.Max.X - 14
	for i := len(spec.buttons) - 1; i >= 0; i-- {
		b := spec.buttons[i]
		w := max(textWidth(b.label)+24, 80)
		bx -= w
		style := btnNormal
		if b.primary {
			style = btnPrimary
		}
		button(n, appID+"/dlg:btn:"+b.cmd, b.label, rect(bx, r.Max.Y-40, w, 28), style)
		bx -= 8
	}
}

// iconFor picks a list icon for an entry.
func iconFor(e vfs.Entry) uint8 {
	switch {
	case e.Dir:
		return iconFolder
	case strings.HasSuffix(strings.ToLower(e.Name()), ".csv"):
		return iconSheet
	}
	return iconFile
}

// dialogField returns the focused field of a dialog.
func (dl *Dialog) focused() *Field {
	if dl.Focus == 1 {
		return &dl.Field2
	}
	return &dl.Field
}

// dialogClick handles a click on a dialog widget and returns the command it
// triggers ("" when none): a button's cmd, or "ok" for a double-clicked
// file.
func dialogClick(d *Desktop, dl *Dialog, spec dialogSpec, local string, ev ptrEvent) string {
	switch {
	case strings.HasPrefix(local, "dlg:btn:"):
		if ev.kind == "click" {
			return local[len("dlg:btn:"):]
		}
	case local == "dlg:field0" || local == "dlg:field1":
		i := int(local[len(local)-1] - '0')
		if i >= len(spec.fields) {
			return ""
		}
		focusedBefore := dl.Focus == i
		dl.Focus = i
		clickField(dl.focused(), ev.node, ev, focusedBefore)
	case local == "dlg:scroll":
		dir := dialogDir(dl.Field.Text)
		entries, _ := d.S.FS.Children(dir)
		top := clampScroll(dl.Scroll, dialogVisibleFiles, len(entries))
		dl.Scroll = scrollBarClick(ev.node, ev.p, top, dialogVisibleFiles, len(entries))
	case strings.HasPrefix(local, "dlg:item:"):
		name := local[len("dlg:item:"):]
		dir := dialogDir(dl.Field.Text)
		p := path.Join(dir, name)
		isDir := d.S.FS.IsDir(p)
		dl.Pick, dl.Error = name, ""
		switch {
		case ev.kind == "double_click" && isDir:
			dl.Field.SetText(vfs.Short(p) + "/")
			dl.Pick, dl.Scroll = "", 0
		case ev.kind == "double_click":
			dl.Field.SetText(vfs.Short(p))
			return "ok"
		case ev.kind == "click" && !isDir:
			dl.Field.SetText(vfs.Short(p))
		}
		dl.Focus = 0
	}
	return ""
}

// dialogKey applies a key to a dialog and returns the command it triggers:
// "ok" for Enter, "cancel" for Escape.
func dialogKey(dl *Dialog, spec dialogSpec, k Key) string {
	switch k.Combo() {
	case "enter":
		return "ok"
	case "escape":
		return "cancel"
	case "tab", "shift+tab":
		if len(spec.fields) > 1 {
			dl.Focus = 1 - dl.Focus
		}
		return ""
	}
	if len(spec.fields) == 0 {
		return ""
	}
	f := dl.focused()
	if f.key(k) {
		dl.Error = ""
		return ""
	}
	if s, ok := k.char(); ok {
		f.insert(s)
		dl.Error = ""
	}
	return ""
}

// dialogType types text into a dialog's focused field.
func dialogType(dl *Dialog, spec dialogSpec, text string) {
	if len(spec.fields) == 0 {
		return
	}
	dl.focused().insert(text)
	dl.Error = ""
}

// dialogScroll scrolls a dialog's file list.
func dialogScroll(d *Desktop, dl *Dialog, dy int) {
	entries, _ := d.S.FS.Children(dialogDir(dl.Field.Text))
	dl.Scroll = clampScroll(dl.Scroll+dy*3, dialogVisibleFiles, len(entries))
}
