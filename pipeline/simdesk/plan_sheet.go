package simdesk

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/pipeline/simdesk/sheet"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
	"github.com/cualake/cualake/schemas"
)

// Planner goals on the spreadsheet: fill cells (data entry, formulas) and
// sort, then save.

// sheetOpen makes the Sheet app show path (or an untitled sheet to save as
// path when the file does not exist yet) with no dialog in the way.
func sheetOpen(d *Desktop, path string) (schemas.Action, bool, error) {
	if a, ok, err := focusApp(d, "sheet"); ok || err != nil {
		return a, true, err
	}
	sh := &d.S.Sheet
	_, exists := d.S.FS.Stat(path)
	if dl := sh.Dialog; dl != nil {
		switch {
		case dl.Kind == "open" && exists && dl.Error == "":
			return fillField(&dl.Field, vfs.Short(path), true), true, nil
		case dl.Kind == "save_as" && dl.Error == "":
			return fillField(&dl.Field, vfs.Short(path), true), true, nil
		case dl.Kind == "unsaved":
			btn := "discard"
			if sh.Path == path {
				btn = "ok"
			}
			a, err := clickID(d, action.Click, "sheet/dlg:btn:"+btn)
			return a, true, err
		}
		return key("escape"), true, nil
	}
	if sh.Path != path {
		switch {
		case exists:
			return hotkey("ctrl", "o"), true, nil
		case sh.Path != "":
			return hotkey("ctrl", "n"), true, nil
		}
	}
	return schemas.Action{}, false, nil
}

// sheetSelect selects a cell: a click when it is on screen, else the name
// box.
func sheetSelect(d *Desktop, row, col int) (schemas.Action, bool, error) {
	sh := &d.S.Sheet
	ref := sheet.RefName(row, col)
	if nb := sh.NameBox; nb != nil {
		return fillField(nb, ref, true), true, nil
	}
	if sh.Row == row && sh.Col == col {
		return schemas.Action{}, false, nil
	}
	if sh.Edit != nil {
		return key("escape"), true, nil
	}
	if d.View().Find("sheet/cell:"+ref) != nil {
		a, err := clickID(d, action.Click, "sheet/cell:"+ref)
		return a, true, err
	}
	a, err := clickID(d, action.Click, "sheet/namebox")
	return a, true, err
}

// cellTarget is a cell that must hold raw (or, unless raw0, any input that
// evaluates to raw).
type cellTarget struct {
	row, col int
	raw      string
	raw0     bool
}

// cellsGoal fills cells of one sheet file and saves it.
type cellsGoal struct {
	path  string
	cells []cellTarget
	crit  []int
	table [][]string // a whole table to enter, merged into cells by finish
}

func (g *cellsGoal) add(c cellTarget, crit int) {
	for i, o := range g.cells {
		if o.row == c.row && o.col == c.col {
			if c.raw0 { // a raw criterion pins the input; a value one only its result
				g.cells[i] = c
			}
			g.crit = append(g.crit, crit)
			return
		}
	}
	g.cells = append(g.cells, c)
	g.crit = append(g.crit, crit)
}

// finish expands a whole-table target into cells, clearing cells outside
// it, and orders cells row by row.
func (g *cellsGoal) finish(d *Desktop) error {
	if g.table != nil {
		cur := &sheet.Sheet{}
		if text, err := d.S.FS.Read(g.path); err == nil {
			if s, err := sheet.ParseCSV(text); err == nil {
				cur = s
			}
		}
		for r := 0; r < max(len(g.table), cur.Rows()); r++ {
			for c := 0; c < max(cur.Cols(), widest(g.table)); c++ {
				want := ""
				if r < len(g.table) && c < len(g.table[r]) {
					want = g.table[r][c]
				}
				if !slices.ContainsFunc(g.cells, func(t cellTarget) bool { return t.row == r && t.col == c }) {
					g.cells = append(g.cells, cellTarget{row: r, col: c, raw: want})
				}
			}
		}
	}
	if len(g.cells) > 2000 {
		return fmt.Errorf("%w: %d cells to fill", ErrNoPlan, len(g.cells))
	}
	slices.SortStableFunc(g.cells, func(a, b cellTarget) int {
		if a.row != b.row {
			return a.row - b.row
		}
		return a.col - b.col
	})
	return nil
}

func widest(t [][]string) int {
	n := 0
	for _, r := range t {
		n = max(n, len(r))
	}
	return n
}

func (g *cellsGoal) done(p *planner, d *Desktop) bool { return p.holds(d, g.crit...) }

// ok reports whether the open sheet already has the cell right.
func (c cellTarget) ok(sh *SheetState, ev *sheet.Evaluator) bool {
	raw := sh.Data.Raw(c.row, c.col)
	if raw == c.raw {
		return true
	}
	if c.raw0 || c.raw == "" || !strings.HasPrefix(raw, "=") {
		return false
	}
	return ev.Value(c.row, c.col).String() == c.raw
}

func (g *cellsGoal) next(p *planner, d *Desktop) (schemas.Action, error) {
	if a, ok, err := sheetOpen(d, g.path); ok || err != nil {
		return a, err
	}
	sh := &d.S.Sheet
	ev := sh.Data.Evaluator()
	var pending []cellTarget
	for _, c := range g.cells {
		if !c.ok(sh, ev) {
			pending = append(pending, c)
		}
	}
	if len(pending) == 0 {
		if sh.Edit != nil || sh.NameBox != nil {
			return key("escape"), nil
		}
		return hotkey("ctrl", "s"), nil
	}
	c := pending[0]
	if a, ok, err := sheetSelect(d, c.row, c.col); ok || err != nil {
		return a, err
	}
	if sh.Edit != nil {
		if sh.Edit.Text == c.raw {
			return key("enter"), nil
		}
		return key("escape"), nil
	}
	if c.raw == "" {
		return key("delete"), nil
	}
	// Tab moves right, Enter back to the column the row was started in,
	// so rows of data go in one "type" each.
	suffix := "\n"
	if len(pending) > 1 && pending[1].row == c.row && pending[1].col == c.col+1 && pending[1].raw != "" {
		suffix = "\t"
	}
	return typeText(c.raw + suffix), nil
}

// sortGoal sorts a sheet by one column through Data > Sort, then saves.
type sortGoal struct {
	path string
	col  int
	desc bool
	want [][]string
	crit int
}

// planSort recognises a table target that is the current file's rows
// reordered by one column (header kept) and returns a goal that sorts.
func planSort(d *Desktop, path string, want [][]string, crit int) goal {
	text, err := d.S.FS.Read(path)
	if err != nil {
		return nil
	}
	cur, err := sheet.ParseCSV(text)
	if err != nil || cur.Rows() < 3 {
		return nil
	}
	for col := 0; col < cur.Cols(); col++ {
		for _, desc := range []bool{false, true} {
			s := cur.Clone()
			s.SortRows(col, 1, desc)
			if tablesEqual(s.Table(), want) {
				return &sortGoal{path: path, col: col, desc: desc, want: want, crit: crit}
			}
		}
	}
	return nil
}

func tablesEqual(a, b [][]string) bool {
	ja, _ := judgeTable(a)
	jb, _ := judgeTable(b)
	return ja == jb
}

// judgeTable renders a table the way the judge compares it, trailing empty
// cells dropped.
func judgeTable(t [][]string) (string, bool) {
	var rows []string
	for _, r := range t {
		n := len(r)
		for n > 0 && strings.TrimSpace(r[n-1]) == "" {
			n--
		}
		rows = append(rows, strings.Join(r[:n], "\x1f"))
	}
	for len(rows) > 0 && rows[len(rows)-1] == "" {
		rows = rows[:len(rows)-1]
	}
	return strings.Join(rows, "\x1e"), true
}

func (g *sortGoal) done(p *planner, d *Desktop) bool { return p.holds(d, g.crit) }

func (g *sortGoal) next(p *planner, d *Desktop) (schemas.Action, error) {
	if a, ok, err := sheetOpen(d, g.path); ok || err != nil {
		return a, err
	}
	sh := &d.S.Sheet
	if sh.Edit != nil || sh.NameBox != nil {
		return key("escape"), nil
	}
	if tablesEqual(sh.Data.Table(), g.want) {
		return hotkey("ctrl", "s"), nil
	}
	if sh.Col != g.col {
		return clickID(d, action.Click, "sheet/col:"+sheet.ColName(g.col))
	}
	cmd := "sort_asc"
	if g.desc {
		cmd = "sort_desc"
	}
	return menuCommand(d, "sheet", "Data", cmd)
}
