package simdesk

import (
	"fmt"
	"image"
	"path"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

// filesApp is the file manager: browse folders, and create, rename, move,
// copy and delete files and folders.
type filesApp struct{}

func (filesApp) id() string   { return "files" }
func (filesApp) name() string { return "Files" }

// title is Nautilus's: the folder's name, "Home" for the home folder.
func (filesApp) title(s *State) string {
	switch s.Files.Dir {
	case vfs.Home:
		return "Home"
	case "/":
		return "/"
	}
	return path.Base(s.Files.Dir)
}

func (filesApp) menus() []menuDef {
	return []menuDef{
		{"File", []menuItem{{"New Folder", "Ctrl+Shift+N", "new_folder"}, {"New File", "", "new_file"}, sep(),
			{"Open", "Enter", "open"}, {"Rename", "F2", "rename"}, {"Delete", "Delete", "delete"}, sep(), {"Close", "Ctrl+W", "close"}}},
		{"Edit", []menuItem{{"Cut", "Ctrl+X", "cut"}, {"Copy", "Ctrl+C", "copy"}, {"Paste", "Ctrl+V", "paste"}}},
		{"Go", []menuItem{{"Up", "Alt+Up", "up"}, {"Home", "Alt+Home", "home"}, {"Documents", "", "go:Documents"}, {"Downloads", "", "go:Downloads"}}},
	}
}

func (filesApp) openMenu(s *State) *string { return &s.Files.Menu }

func (filesApp) popupOpen(s *State) bool { return s.Files.Menu != "" || s.Files.Context != nil }

func (filesApp) closePopups(s *State) { s.Files.Menu, s.Files.Context = "", nil }

func (filesApp) modal(s *State) bool { return s.Files.Dialog != nil }

func (filesApp) requestClose(d *Desktop) bool { return true }

func (filesApp) reset(d *Desktop) {
	clip, cut := d.S.Files.Clip, d.S.Files.ClipCut
	d.S.Files = FilesState{Dir: vfs.Home, Clip: clip, ClipCut: cut}
}

// filesLayout splits the content area below the menu bar.
type filesLayout struct {
	up, location, side, list, status image.Rectangle
	visible                          int
}

func layoutFiles(c image.Rectangle) filesLayout {
	var l filesLayout
	y0 := c.Min.Y
	l.up = rect(c.Min.X+6, y0+4, 44, 24)
	l.location = rect(c.Min.X+56, y0+4, c.Dx()-64, 24)
	l.status = image.Rect(c.Min.X+1, c.Max.Y-22, c.Max.X-1, c.Max.Y-1)
	y1 := y0 + 34
	l.side = rect(c.Min.X+6, y1, 150, l.status.Min.Y-y1-6)
	l.list = image.Rect(c.Min.X+162, y1, c.Max.X-6, l.status.Min.Y-6)
	l.visible = max((l.list.Dy()-2)/rowH, 1)
	return l
}

// contentRect is an app window's area below its title and menu bars.
func (d *Desktop) contentRect(id string) image.Rectangle {
	w := d.S.window(id)
	if w == nil {
		return image.Rect(0, 0, d.S.Width, d.S.Height)
	}
	c := image.Rect(w.X, w.Y+titleH, w.X+w.W, w.Y+w.H)
	if a := appByID(id); a != nil && len(a.menus()) > 0 {
		c.Min.Y += menuH
	}
	return c
}

var places = []struct{ label, dir string }{
	{"Home", vfs.Home}, {"Desktop", vfs.Home + "/Desktop"}, {"Documents", vfs.Home + "/Documents"},
	{"Downloads", vfs.Home + "/Downloads"}, {"Pictures", vfs.Home + "/Pictures"},
}

func sizeLabel(e vfs.Entry, fs *vfs.FS) string {
	if e.Dir {
		kids, _ := fs.Children(e.Path)
		return fmt.Sprintf("%d items", len(kids))
	}
	return fmt.Sprintf("%d bytes", len(e.Content))
}

func (a filesApp) build(d *Desktop, win *Node, content image.Rectangle) {
	s := &d.S
	fm := &s.Files
	c := buildMenuBar(win, a, s, content)
	l := layoutFiles(c)
	button(win, "files/up", "Up", l.up, btnNormal)
	if fm.Location != nil {
		textField(win, "files/location", "Location", fm.Location, l.location, fm.Dialog == nil)
	} else {
		loc := Field{Text: vfs.Short(fm.Dir)}
		textField(win, "files/location", "Location", &loc, l.location, false)
	}
	side := win.add(&Node{Role: RoleList, Name: "Places", Rect: l.side})
	for i, p := range places {
		it := side.add(&Node{ID: "files/place:" + p.dir, Role: RoleListItem, Name: p.label, Rect: rect(l.side.Min.X+1, l.side.Min.Y+1+i*rowH, l.side.Dx()-2, rowH), Style: iconFolder})
		if p.dir == fm.Dir {
			it.States |= StSelected
		}
	}
	list := win.add(&Node{ID: "files/list", Role: RoleList, Name: "Files in " + vfs.Short(fm.Dir), Rect: l.list})
	entries, _ := s.FS.Children(fm.Dir)
	top := clampScroll(fm.Scroll, l.visible, len(entries))
	for i := top; i < len(entries) && i < top+l.visible; i++ {
		e := entries[i]
		it := list.add(&Node{ID: "files/item:" + e.Name(), Role: RoleListItem, Name: e.Name(), Value: sizeLabel(e, &s.FS),
			Rect: rect(l.list.Min.X+1, l.list.Min.Y+1+(i-top)*rowH, l.list.Dx()-14, rowH), Style: iconFor(e)})
		if e.Name() == fm.Selected {
			it.States |= StSelected
		}
	}
	if len(entries) == 0 {
		list.text(rect(l.list.Min.X+10, l.list.Min.Y+10, 200, charH), "This folder is empty", cMuted)
	}
	scrollBar(list, "files/scroll", image.Rect(l.list.Max.X-12, l.list.Min.Y+1, l.list.Max.X-1, l.list.Max.Y-1), top, l.visible, len(entries))
	status := fmt.Sprintf("%d items", len(entries))
	if fm.Selected != "" {
		status += fmt.Sprintf(" - \"%s\" selected", fm.Selected)
	}
	if fm.Clip != "" {
		verb := "copied"
		if fm.ClipCut {
			verb = "cut"
		}
		status += fmt.Sprintf(" - %s %s", path.Base(fm.Clip), verb)
	}
	win.add(&Node{Role: RoleStatusBar, Name: status, Rect: l.status})
	if fm.Dialog != nil {
		buildDialog(win, "files", fm.Dialog, filesDialogSpec(fm.Dialog), content, &s.FS)
	}
	buildMenuPopup(win, a, s, content)
	if cm := fm.Context; cm != nil {
		items := []menuItem{{"New Folder", "", "new_folder"}, {"New File", "", "new_file"}, {"Paste", "", "paste"}}
		name := "Folder menu"
		if cm.Target != "" {
			items = []menuItem{{"Open", "", "open"}, {"Rename", "", "rename"}, sep(), {"Cut", "", "cut"}, {"Copy", "", "copy"}, sep(), {"Delete", "", "delete"}}
			name = "Menu for " + cm.Target
		}
		popup(win, "files", name, items, cm.X, cm.Y)
	}
}

func filesDialogSpec(dl *Dialog) dialogSpec {
	ok := []dlgButton{{"cancel", "Cancel", false}, {"ok", "OK", true}}
	switch dl.Kind {
	case "new_folder":
		return dialogSpec{title: "New Folder", fields: []string{"Folder name"}, buttons: []dlgButton{{"cancel", "Cancel", false}, {"ok", "Create", true}}}
	case "new_file":
		return dialogSpec{title: "New File", fields: []string{"File name"}, buttons: []dlgButton{{"cancel", "Cancel", false}, {"ok", "Create", true}}}
	case "rename":
		return dialogSpec{title: "Rename", message: "Rename \"" + path.Base(dl.Target) + "\" to:", fields: []string{"New name"}, buttons: []dlgButton{{"cancel", "Cancel", false}, {"ok", "Rename", true}}}
	case "delete":
		return dialogSpec{title: "Delete", message: "Permanently delete \"" + path.Base(dl.Target) + "\"?", buttons: []dlgButton{{"cancel", "Cancel", false}, {"ok", "Delete", true}}}
	}
	return dialogSpec{title: "Files", buttons: ok}
}

// selectedPath returns the selected entry's path, "" when none.
func (s *State) filesSelected() string {
	if s.Files.Selected == "" {
		return ""
	}
	p := path.Join(s.Files.Dir, s.Files.Selected)
	if _, ok := s.FS.Stat(p); !ok {
		return ""
	}
	return p
}

func (a filesApp) navigate(s *State, dir string) {
	if !s.FS.IsDir(dir) {
		return
	}
	s.Files.Dir, s.Files.Selected, s.Files.Scroll, s.Files.Location = dir, "", 0, nil
}

func (a filesApp) command(d *Desktop, cmd string) {
	s := &d.S
	fm := &s.Files
	if fm.Context != nil && fm.Context.Target != "" {
		fm.Selected = fm.Context.Target
	}
	fm.Context = nil
	sel := s.filesSelected()
	switch {
	case cmd == "new_folder":
		fm.Dialog = &Dialog{Kind: "new_folder", Field: Field{Text: "New Folder", Cursor: 10, All: true}}
	case cmd == "new_file":
		fm.Dialog = &Dialog{Kind: "new_file", Field: Field{Text: "Untitled.txt", Cursor: 12, All: true}}
	case cmd == "open" && sel != "":
		if s.FS.IsDir(sel) {
			a.navigate(s, sel)
		} else {
			d.openFile(sel)
		}
	case cmd == "rename" && sel != "":
		name := path.Base(sel)
		fm.Dialog = &Dialog{Kind: "rename", Target: sel, Field: Field{Text: name, Cursor: len([]rune(name)), All: true}}
	case cmd == "delete" && sel != "":
		fm.Dialog = &Dialog{Kind: "delete", Target: sel}
	case (cmd == "cut" || cmd == "copy") && sel != "":
		fm.Clip, fm.ClipCut = sel, cmd == "cut"
	case cmd == "paste" && fm.Clip != "":
		a.paste(s)
	case cmd == "up":
		if fm.Dir != "/" {
			old := path.Base(fm.Dir)
			a.navigate(s, path.Dir(fm.Dir))
			fm.Selected = old
		}
	case cmd == "home":
		a.navigate(s, vfs.Home)
	case strings.HasPrefix(cmd, "go:"):
		a.navigate(s, vfs.Home+"/"+cmd[3:])
	case cmd == "close":
		d.closeWindow("files")
	}
}

func (a filesApp) paste(s *State) {
	fm := &s.Files
	if _, ok := s.FS.Stat(fm.Clip); !ok {
		fm.Clip, fm.ClipCut = "", false
		return
	}
	dst := path.Join(fm.Dir, path.Base(fm.Clip))
	if fm.ClipCut {
		if dst == fm.Clip {
			fm.Clip, fm.ClipCut = "", false
			return
		}
		if err := s.FS.Move(fm.Clip, dst); err != nil {
			fm.Dialog = &Dialog{Kind: "error", Error: "Cannot move: " + errText(err)}
			return
		}
		fm.Clip, fm.ClipCut = "", false
	} else {
		for i := 2; ; i++ {
			if _, ok := s.FS.Stat(dst); !ok {
				break
			}
			ext := path.Ext(fm.Clip)
			dst = path.Join(fm.Dir, fmt.Sprintf("%s (%d)%s", strings.TrimSuffix(path.Base(fm.Clip), ext), i, ext))
		}
		if err := s.FS.Copy(fm.Clip, dst); err != nil {
			fm.Dialog = &Dialog{Kind: "error", Error: "Cannot copy: " + errText(err)}
			return
		}
	}
	fm.Selected = path.Base(dst)
}

// errText is an error's message without the wrapped path noise.
func errText(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}

func (a filesApp) dialogDone(d *Desktop, cmd string) {
	s := &d.S
	fm := &s.Files
	dl := fm.Dialog
	if cmd == "cancel" || dl.Kind == "error" {
		fm.Dialog = nil
		return
	}
	if cmd != "ok" {
		return
	}
	name := strings.TrimSpace(dl.Field.Text)
	var err error
	switch dl.Kind {
	case "new_folder", "new_file", "rename":
		if err = vfs.ValidName(name); err != nil {
			dl.Error = "Invalid name: " + errText(err)
			return
		}
		p := path.Join(fm.Dir, name)
		switch dl.Kind {
		case "new_folder":
			err = s.FS.Mkdir(p, false)
		case "new_file":
			if _, ok := s.FS.Stat(p); ok {
				err = vfs.ErrExists
			} else {
				err = s.FS.Write(p, "")
			}
		case "rename":
			p = path.Join(path.Dir(dl.Target), name)
			if p != dl.Target {
				err = s.FS.Move(dl.Target, p)
			}
			if err == nil && d.S.Editor.Path == dl.Target {
				d.S.Editor.Path = p
			}
		}
		if err != nil {
			dl.Error = "Cannot do that: " + errText(err)
			return
		}
		fm.Selected = name
	case "delete":
		if err = s.FS.Remove(dl.Target, true); err != nil {
			dl.Error = "Cannot delete: " + errText(err)
			return
		}
		fm.Selected = ""
	}
	fm.Dialog = nil
}

func (a filesApp) click(d *Desktop, local string, ev ptrEvent) {
	s := &d.S
	fm := &s.Files
	if fm.Dialog != nil {
		if cmd := dialogClick(d, fm.Dialog, filesDialogSpec(fm.Dialog), local, ev); cmd != "" {
			a.dialogDone(d, cmd)
		}
		return
	}
	if local != "location" {
		fm.Location = nil
	}
	switch {
	case local == "up":
		if ev.kind == "click" {
			a.command(d, "up")
		}
	case local == "location":
		if ev.kind == "right_click" || ev.kind == "middle_click" {
			return
		}
		was := fm.Location != nil
		if !was {
			fm.Location = &Field{}
			fm.Location.SetText(vfs.Short(fm.Dir))
		}
		clickField(fm.Location, ev.node, ev, was)
	case strings.HasPrefix(local, "place:"):
		if ev.kind == "click" || ev.kind == "double_click" {
			a.navigate(s, local[len("place:"):])
		}
	case strings.HasPrefix(local, "item:"):
		name := local[len("item:"):]
		fm.Selected = name
		switch ev.kind {
		case "double_click":
			a.command(d, "open")
		case "right_click":
			fm.Context = &ContextMenu{X: ev.p.X, Y: ev.p.Y, Target: name}
		}
	case local == "list":
		fm.Selected = ""
		if ev.kind == "right_click" {
			fm.Context = &ContextMenu{X: ev.p.X, Y: ev.p.Y}
		}
	case local == "scroll":
		entries, _ := s.FS.Children(fm.Dir)
		l := layoutFiles(d.contentRect("files"))
		top := clampScroll(fm.Scroll, l.visible, len(entries))
		fm.Scroll = scrollBarClick(ev.node, ev.p, top, l.visible, len(entries))
	}
}

func (a filesApp) key(d *Desktop, k Key) {
	s := &d.S
	fm := &s.Files
	if fm.Dialog != nil {
		if cmd := dialogKey(fm.Dialog, filesDialogSpec(fm.Dialog), k); cmd != "" {
			a.dialogDone(d, cmd)
		}
		return
	}
	if fm.Location != nil {
		switch k.Combo() {
		case "enter":
			p, err := vfs.Clean(fm.Location.Text)
			if err == nil && s.FS.IsDir(p) {
				a.navigate(s, p)
			} else {
				fm.Dialog = &Dialog{Kind: "error", Error: "No such folder: " + fm.Location.Text}
				fm.Location = nil
			}
		case "escape":
			fm.Location = nil
		default:
			if !fm.Location.key(k) {
				if ch, ok := k.char(); ok {
					fm.Location.insert(ch)
				}
			}
		}
		return
	}
	entries, _ := s.FS.Children(fm.Dir)
	idx := -1
	for i, e := range entries {
		if e.Name() == fm.Selected {
			idx = i
		}
	}
	switch k.Combo() {
	case "up", "down":
		if len(entries) == 0 {
			return
		}
		if k.Name == "up" {
			idx = max(idx-1, 0)
		} else {
			idx = min(idx+1, len(entries)-1)
		}
		fm.Selected = entries[idx].Name()
		l := layoutFiles(d.contentRect("files"))
		if idx < fm.Scroll {
			fm.Scroll = idx
		} else if idx >= fm.Scroll+l.visible {
			fm.Scroll = idx - l.visible + 1
		}
	case "enter":
		a.command(d, "open")
	case "f2":
		a.command(d, "rename")
	case "delete":
		a.command(d, "delete")
	case "ctrl+x":
		a.command(d, "cut")
	case "ctrl+c":
		a.command(d, "copy")
	case "ctrl+v":
		a.command(d, "paste")
	case "backspace", "alt+up":
		a.command(d, "up")
	case "alt+home":
		a.command(d, "home")
	case "ctrl+shift+n":
		a.command(d, "new_folder")
	case "ctrl+w":
		a.command(d, "close")
	case "ctrl+l":
		fm.Location = &Field{Text: vfs.Short(fm.Dir), All: true}
	case "escape":
		fm.Selected = ""
	case "ctrl+a":
	default:
		if ch, ok := k.char(); ok {
			a.typeText(d, ch)
		}
	}
}

func (a filesApp) typeText(d *Desktop, text string) {
	fm := &d.S.Files
	switch {
	case fm.Dialog != nil:
		dialogType(fm.Dialog, filesDialogSpec(fm.Dialog), text)
	case fm.Location != nil:
		fm.Location.insert(text)
	default:
		// Type-ahead: select the first entry starting with the text.
		entries, _ := d.S.FS.Children(fm.Dir)
		for _, e := range entries {
			if strings.HasPrefix(strings.ToLower(e.Name()), strings.ToLower(text)) {
				fm.Selected = e.Name()
				return
			}
		}
	}
}

func (a filesApp) scroll(d *Desktop, local string, dy int) {
	fm := &d.S.Files
	if fm.Dialog != nil {
		if strings.HasPrefix(local, "dlg:") {
			dialogScroll(d, fm.Dialog, dy)
		}
		return
	}
	if local == "list" || local == "scroll" || strings.HasPrefix(local, "item:") {
		entries, _ := d.S.FS.Children(fm.Dir)
		l := layoutFiles(d.contentRect("files"))
		fm.Scroll = clampScroll(clampScroll(fm.Scroll, l.visible, len(entries))+dy*3, l.visible, len(entries))
	}
}

// drag moves an item onto a folder of the list or onto a place.
func (a filesApp) drag(d *Desktop, from, to string, ev ptrEvent) {
	s := &d.S
	fm := &s.Files
	if !strings.HasPrefix(from, "item:") || fm.Dialog != nil {
		return
	}
	src := path.Join(fm.Dir, from[len("item:"):])
	var dstDir string
	switch {
	case strings.HasPrefix(to, "item:"):
		dstDir = path.Join(fm.Dir, to[len("item:"):])
	case strings.HasPrefix(to, "place:"):
		dstDir = to[len("place:"):]
	case to == "up":
		dstDir = path.Dir(fm.Dir)
	default:
		return
	}
	if !s.FS.IsDir(dstDir) || dstDir == src {
		return
	}
	if err := s.FS.Move(src, path.Join(dstDir, path.Base(src))); err != nil {
		fm.Dialog = &Dialog{Kind: "error", Error: "Cannot move: " + errText(err)}
		return
	}
	fm.Selected = ""
}
