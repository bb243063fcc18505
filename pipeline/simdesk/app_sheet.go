package simdesk

import (
	"fmt"
	"image"
	"path"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/sheet"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

// sheetApp is a spreadsheet over .csv files: cells, formulas, sorting.
type sheetApp struct{}

const (
	colW     = 90
	rowHeadW = 40
)

func (sheetApp) id() string   { return "sheet" }
func (sheetApp) name() string { return "Sheet" }

// title is LibreOffice Calc's ("name - LibreOffice Calc", no mark for
// unsaved changes: Calc shows those in its status bar, as Sheet does), so
// that OSWorld's activate_window steps find it.
func (sheetApp) title(s *State) string {
	name := "Untitled 1"
	if s.Sheet.Path != "" {
		name = path.Base(s.Sheet.Path)
	}
	return name + " - LibreOffice Calc"
}

func (sheetApp) menus() []menuDef {
	return []menuDef{
		{"File", []menuItem{{"New", "Ctrl+N", "new"}, {"Open...", "Ctrl+O", "open"}, {"Save", "Ctrl+S", "save"},
			{"Save As...", "Ctrl+Shift+S", "save_as"}, sep(), {"Close", "Ctrl+W", "close"}}},
		{"Edit", []menuItem{{"Copy", "Ctrl+C", "copy"}, {"Cut", "Ctrl+X", "cut"}, {"Paste", "Ctrl+V", "paste"}, {"Clear Cell", "Delete", "clear"}}},
		{"Data", []menuItem{{"Sort Ascending", "", "sort_asc"}, {"Sort Descending", "", "sort_desc"}}},
	}
}

func (sheetApp) openMenu(s *State) *string { return &s.Sheet.Menu }
func (sheetApp) popupOpen(s *State) bool   { return s.Sheet.Menu != "" }
func (sheetApp) closePopups(s *State)      { s.Sheet.Menu = "" }
func (sheetApp) modal(s *State) bool       { return s.Sheet.Dialog != nil }
func (sheetApp) reset(d *Desktop)          { d.S.Sheet = SheetState{} }

func (a sheetApp) requestClose(d *Desktop) bool {
	a.commit(d)
	return a.guard(d, "close")
}

// sheetLayout splits the content area below the menu bar.
type sheetLayout struct {
	nameBox, formula, grid, status image.Rectangle
	cols, rows                     int
}

func layoutSheet(c image.Rectangle) sheetLayout {
	var l sheetLayout
	y0 := c.Min.Y
	l.nameBox = rect(c.Min.X+6, y0+4, 70, 24)
	l.formula = rect(c.Min.X+104, y0+4, c.Dx()-112, 24)
	l.status = image.Rect(c.Min.X+1, c.Max.Y-22, c.Max.X-1, c.Max.Y-1)
	l.grid = image.Rect(c.Min.X+6, y0+34, c.Max.X-6, l.status.Min.Y-4)
	l.cols = min(max((l.grid.Dx()-rowHeadW-14)/colW, 1), sheet.MaxCols)
	l.rows = max((l.grid.Dy()-rowH-2)/rowH, 1)
	return l
}

// cellRect is where a visible cell is drawn.
func (l sheetLayout) cellRect(row, col, top int) image.Rectangle {
	return rect(l.grid.Min.X+1+rowHeadW+col*colW, l.grid.Min.Y+1+rowH+(row-top)*rowH, colW, rowH)
}

func (a sheetApp) build(d *Desktop, win *Node, content image.Rectangle) {
	s := &d.S
	sh := &s.Sheet
	c := buildMenuBar(win, a, s, content)
	l := layoutSheet(c)
	ref := sheet.RefName(sh.Row, sh.Col)
	nb := Field{Text: ref}
	nameFocus := sh.NameBox != nil && sh.Dialog == nil
	if sh.NameBox != nil {
		nb = *sh.NameBox
	}
	textField(win, "sheet/namebox", "Name Box", &nb, l.nameBox, nameFocus)
	win.text(rect(l.nameBox.Max.X+8, l.nameBox.Min.Y+5, 20, charH), "fx", cMuted|styBold)
	raw := Field{Text: sh.Data.Raw(sh.Row, sh.Col)}
	if sh.Edit != nil {
		raw = *sh.Edit
	}
	textField(win, "sheet/formula", "Formula", &raw, l.formula, false)
	grid := win.add(&Node{ID: "sheet/grid", Role: RoleTable, Name: "Sheet", Rect: l.grid})
	top := clampScroll(sh.Top, l.rows, sheet.MaxRows)
	ev := sh.Data.Evaluator()
	for col := 0; col < l.cols; col++ {
		h := grid.add(&Node{ID: "sheet/col:" + sheet.ColName(col), Role: RoleColHeader, Name: sheet.ColName(col),
			Rect: rect(l.grid.Min.X+1+rowHeadW+col*colW, l.grid.Min.Y+1, colW, rowH)})
		if col == sh.Col {
			h.States |= StSelected
		}
	}
	for row := top; row < top+l.rows && row < sheet.MaxRows; row++ {
		h := grid.add(&Node{ID: "sheet/row:" + itoa(row+1), Role: RoleRowHeader, Name: itoa(row + 1),
			Rect: rect(l.grid.Min.X+1, l.grid.Min.Y+1+rowH+(row-top)*rowH, rowHeadW, rowH)})
		if row == sh.Row {
			h.States |= StSelected
		}
		for col := 0; col < l.cols; col++ {
			r := l.cellRect(row, col, top)
			name := sheet.RefName(row, col)
			v := ev.Value(row, col)
			n := grid.add(&Node{ID: "sheet/cell:" + name, Role: RoleCell, Name: name, Value: v.String(), Rect: r})
			if v.IsNum {
				n.Style = styRight
			}
			if row == sh.Row && col == sh.Col {
				n.States |= StSelected
				if sh.Edit != nil {
					n.Style = 0
					n.States |= StEditable | StFocused
					off := fieldOffset(sh.Edit, (colW-8)/charW, true)
					n.Value = string([]rune(sh.Edit.Text)[min(off, len([]rune(sh.Edit.Text))):])
					cur := min(max(sh.Edit.Cursor, 0), len([]rune(sh.Edit.Text)))
					n.add(&Node{Role: RoleCaret, Rect: rect(r.Min.X+4+(cur-off)*charW, r.Min.Y+3, 1, rowH-6), States: stDrawOnly})
				}
			}
		}
	}
	scrollBar(grid, "sheet/scroll", image.Rect(l.grid.Max.X-12, l.grid.Min.Y+1, l.grid.Max.X-1, l.grid.Max.Y-1), top, l.rows, sheet.MaxRows)
	mode := "Ready"
	if sh.Edit != nil {
		mode = "Edit"
	}
	where := "Untitled"
	if sh.Path != "" {
		where = vfs.Short(sh.Path)
	}
	if sh.Dirty {
		where += " (modified)"
	}
	win.add(&Node{Role: RoleStatusBar, Name: fmt.Sprintf("%s   %s = %s   %s", mode, ref, ev.Value(sh.Row, sh.Col).String(), where), Rect: l.status})
	if sh.Dialog != nil {
		buildDialog(win, "sheet", sh.Dialog, sheetDialogSpec(sh), content, &s.FS)
	}
	buildMenuPopup(win, a, s, content)
}

func sheetDialogSpec(sh *SheetState) dialogSpec {
	switch sh.Dialog.Kind {
	case "open":
		return dialogSpec{title: "Open Sheet", fields: []string{"File"}, files: true, buttons: []dlgButton{{"cancel", "Cancel", false}, {"ok", "Open", true}}}
	case "save_as":
		return dialogSpec{title: "Save Sheet As", fields: []string{"Save as"}, files: true, buttons: []dlgButton{{"cancel", "Cancel", false}, {"ok", "Save", true}}}
	case "unsaved":
		name := "Untitled.csv"
		if sh.Path != "" {
			name = path.Base(sh.Path)
		}
		return dialogSpec{title: "Unsaved Changes", message: "Save changes to \"" + name + "\" before continuing?",
			buttons: []dlgButton{{"cancel", "Cancel", false}, {"discard", "Don't Save", false}, {"ok", "Save", true}}}
	}
	return dialogSpec{title: "Sheet", buttons: []dlgButton{{"cancel", "OK", true}}}
}

func (a sheetApp) guard(d *Desktop, then string) bool {
	sh := &d.S.Sheet
	if !sh.Dirty {
		return true
	}
	sh.Menu = ""
	sh.Dialog = &Dialog{Kind: "unsaved", Then: then}
	return false
}

func (a sheetApp) proceed(d *Desktop, then string) {
	switch {
	case then == "close":
		d.forceClose("sheet")
		a.reset(d)
	case then == "new":
		d.S.Sheet = SheetState{}
	case then == "open_dialog":
		a.openDialog(d)
	case strings.HasPrefix(then, "open:"):
		a.load(d, then[len("open:"):])
	}
}

func (a sheetApp) openDialog(d *Desktop) {
	dir := vfs.Home + "/Documents"
	if d.S.Sheet.Path != "" {
		dir = path.Dir(d.S.Sheet.Path)
	}
	d.S.Sheet.Dialog = &Dialog{Kind: "open"}
	d.S.Sheet.Dialog.Field.SetText(vfs.Short(dir) + "/")
}

func (a sheetApp) load(d *Desktop, p string) bool {
	text, err := d.S.FS.Read(p)
	if err != nil {
		d.S.Sheet.Dialog = &Dialog{Kind: "error", Error: "Cannot open " + vfs.Short(p) + ": " + errText(err)}
		return false
	}
	data, err := sheet.ParseCSV(text)
	if err != nil {
		d.S.Sheet.Dialog = &Dialog{Kind: "error", Error: "Not a sheet: " + vfs.Short(p)}
		return false
	}
	d.S.Sheet = SheetState{Path: p, Data: *data}
	return true
}

func (a sheetApp) save(d *Desktop, p string) error {
	sh := &d.S.Sheet
	if d.S.FS.IsDir(p) {
		return fmt.Errorf("%s is a folder", vfs.Short(p))
	}
	if err := d.S.FS.Write(p, sh.Data.CSV()); err != nil {
		return err
	}
	sh.Path, sh.Dirty = p, false
	return nil
}

func (a sheetApp) saveAsDialog(d *Desktop, then string) {
	name := vfs.Home + "/Documents/Untitled.csv"
	if d.S.Sheet.Path != "" {
		name = d.S.Sheet.Path
	}
	d.S.Sheet.Dialog = &Dialog{Kind: "save_as", Then: then}
	d.S.Sheet.Dialog.Field.SetText(vfs.Short(name))
}

// commit stores the cell being edited.
func (a sheetApp) commit(d *Desktop) {
	sh := &d.S.Sheet
	if sh.Edit == nil {
		return
	}
	text := sh.Edit.Text
	sh.Edit = nil
	if sh.Data.Raw(sh.Row, sh.Col) != text && sh.Data.Set(sh.Row, sh.Col, text) == nil {
		sh.Dirty = true
	}
}

// moveTo selects a cell, scrolling it into view.
func (a sheetApp) moveTo(d *Desktop, row, col int, keepTab bool) {
	sh := &d.S.Sheet
	sh.Row = min(max(row, 0), sheet.MaxRows-1)
	sh.Col = min(max(col, 0), sheet.MaxCols-1)
	if !keepTab {
		sh.TabFrom = sh.Col
	}
	l := layoutSheet(d.contentRect("sheet"))
	if sh.Row < sh.Top {
		sh.Top = sh.Row
	} else if sh.Row >= sh.Top+l.rows {
		sh.Top = sh.Row - l.rows + 1
	}
	sh.Top = clampScroll(sh.Top, l.rows, sheet.MaxRows)
}

func (a sheetApp) command(d *Desktop, cmd string) {
	sh := &d.S.Sheet
	a.commit(d)
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
		if sh.Path == "" {
			a.saveAsDialog(d, "")
			return
		}
		if err := a.save(d, sh.Path); err != nil {
			sh.Dialog = &Dialog{Kind: "error", Error: "Cannot save: " + errText(err)}
		}
	case "save_as":
		a.saveAsDialog(d, "")
	case "close":
		d.closeWindow("sheet")
	case "copy", "cut":
		d.S.Clipboard = sh.Data.Raw(sh.Row, sh.Col)
		if cmd == "cut" {
			a.setCell(d, "")
		}
	case "paste":
		a.setCell(d, strings.ReplaceAll(d.S.Clipboard, "\n", " "))
	case "clear":
		a.setCell(d, "")
	case "sort_asc", "sort_desc":
		before := sh.Data.CSV()
		sh.Data.SortRows(sh.Col, 1, cmd == "sort_desc")
		if sh.Data.CSV() != before {
			sh.Dirty = true
		}
	}
}

func (a sheetApp) setCell(d *Desktop, raw string) {
	sh := &d.S.Sheet
	if sh.Data.Raw(sh.Row, sh.Col) != raw && sh.Data.Set(sh.Row, sh.Col, raw) == nil {
		sh.Dirty = true
	}
}

func (a sheetApp) dialogDone(d *Desktop, cmd string) {
	sh := &d.S.Sheet
	docDialogDone(d, a, &sh.Dialog, sh.Path, cmd)
}

func (a sheetApp) click(d *Desktop, local string, ev ptrEvent) {
	sh := &d.S.Sheet
	if sh.Dialog != nil {
		if cmd := dialogClick(d, sh.Dialog, sheetDialogSpec(sh), local, ev); cmd != "" {
			a.dialogDone(d, cmd)
		}
		return
	}
	if local != "namebox" {
		sh.NameBox = nil
	}
	switch {
	case local == "namebox":
		was := sh.NameBox != nil
		a.commit(d)
		if !was {
			sh.NameBox = &Field{Text: sheet.RefName(sh.Row, sh.Col)}
			sh.NameBox.SetText(sh.NameBox.Text)
			sh.NameBox.All = true
			return
		}
		clickField(sh.NameBox, ev.node, ev, true)
	case local == "formula":
		if sh.Edit == nil {
			sh.Edit = &Field{}
			sh.Edit.SetText(sh.Data.Raw(sh.Row, sh.Col))
		}
		clickField(sh.Edit, ev.node, ev, true)
	case strings.HasPrefix(local, "cell:"):
		row, col, err := sheet.ParseRef(local[len("cell:"):])
		if err != nil {
			return
		}
		if sh.Edit != nil && row == sh.Row && col == sh.Col {
			return // a click inside the cell being edited keeps editing
		}
		a.commit(d)
		a.moveTo(d, row, col, false)
		if ev.kind == "double_click" {
			sh.Edit = &Field{}
			sh.Edit.SetText(sh.Data.Raw(row, col))
		}
	case strings.HasPrefix(local, "col:"):
		a.commit(d)
		_, col, err := sheet.ParseRef(local[len("col:"):] + "1")
		if err == nil {
			a.moveTo(d, sh.Row, col, false)
		}
	case strings.HasPrefix(local, "row:"):
		a.commit(d)
		row, _, err := sheet.ParseRef("A" + local[len("row:"):])
		if err == nil {
			a.moveTo(d, row, sh.Col, false)
		}
	case local == "scroll":
		l := layoutSheet(d.contentRect("sheet"))
		sh.Top = scrollBarClick(ev.node, ev.p, clampScroll(sh.Top, l.rows, sheet.MaxRows), l.rows, sheet.MaxRows)
	}
}

func (a sheetApp) key(d *Desktop, k Key) {
	sh := &d.S.Sheet
	if sh.Dialog != nil {
		if cmd := dialogKey(sh.Dialog, sheetDialogSpec(sh), k); cmd != "" {
			a.dialogDone(d, cmd)
		}
		return
	}
	combo := k.Combo()
	if nb := sh.NameBox; nb != nil {
		switch combo {
		case "enter":
			sh.NameBox = nil
			if row, col, err := sheet.ParseRef(nb.Text); err == nil && col < sheet.MaxCols {
				a.moveTo(d, row, col, false)
			}
		case "escape":
			sh.NameBox = nil
		default:
			if !nb.key(k) {
				if ch, ok := k.char(); ok {
					nb.insert(ch)
				}
			}
		}
		return
	}
	cmds := map[string]string{"ctrl+n": "new", "ctrl+o": "open", "ctrl+s": "save", "ctrl+shift+s": "save_as", "ctrl+w": "close"}
	if cmd, ok := cmds[combo]; ok {
		a.command(d, cmd)
		return
	}
	moves := map[string][2]int{"enter": {1, 0}, "shift+enter": {-1, 0}, "tab": {0, 1}, "shift+tab": {0, -1},
		"up": {-1, 0}, "down": {1, 0}}
	if sh.Edit != nil {
		switch combo {
		case "escape":
			sh.Edit = nil
			return
		case "enter", "shift+enter", "tab", "shift+tab", "up", "down":
			a.commit(d)
		default:
			if !sh.Edit.key(k) {
				if ch, ok := k.char(); ok {
					sh.Edit.insert(ch)
				}
			}
			return
		}
	}
	if mv, ok := moves[combo]; ok {
		switch combo {
		case "enter":
			a.moveTo(d, sh.Row+1, sh.TabFrom, false)
		case "tab", "shift+tab":
			a.moveTo(d, sh.Row, sh.Col+mv[1], true)
		default:
			a.moveTo(d, sh.Row+mv[0], sh.Col+mv[1], false)
		}
		return
	}
	switch combo {
	case "left", "right":
		a.moveTo(d, sh.Row, sh.Col+map[string]int{"left": -1, "right": 1}[combo], false)
	case "home":
		a.moveTo(d, sh.Row, 0, false)
	case "ctrl+home":
		a.moveTo(d, 0, 0, false)
	case "pageup", "pagedown":
		l := layoutSheet(d.contentRect("sheet"))
		a.moveTo(d, sh.Row+map[string]int{"pageup": -l.rows, "pagedown": l.rows}[combo], sh.Col, false)
	case "delete", "backspace":
		a.command(d, "clear")
	case "f2":
		sh.Edit = &Field{}
		sh.Edit.SetText(sh.Data.Raw(sh.Row, sh.Col))
	case "ctrl+c":
		a.command(d, "copy")
	case "ctrl+x":
		a.command(d, "cut")
	case "ctrl+v":
		a.command(d, "paste")
	default:
		if ch, ok := k.char(); ok {
			a.typeText(d, ch)
		}
	}
}

func (a sheetApp) typeText(d *Desktop, text string) {
	sh := &d.S.Sheet
	switch {
	case sh.Dialog != nil:
		dialogType(sh.Dialog, sheetDialogSpec(sh), text)
	case sh.NameBox != nil:
		sh.NameBox.insert(text)
	case sh.Edit != nil:
		sh.Edit.insert(text)
	default:
		// Typing into a selected cell replaces its content.
		sh.Edit = &Field{}
		sh.Edit.insert(text)
	}
}

func (a sheetApp) scroll(d *Desktop, local string, dy int) {
	sh := &d.S.Sheet
	if sh.Dialog != nil {
		if strings.HasPrefix(local, "dlg:") {
			dialogScroll(d, sh.Dialog, dy)
		}
		return
	}
	if local == "grid" || local == "scroll" || strings.HasPrefix(local, "cell:") || strings.HasPrefix(local, "row:") {
		l := layoutSheet(d.contentRect("sheet"))
		sh.Top = clampScroll(clampScroll(sh.Top, l.rows, sheet.MaxRows)+dy*3, l.rows, sheet.MaxRows)
	}
}

func (sheetApp) drag(d *Desktop, from, to string, ev ptrEvent) {}
