package simdesk

import (
	"fmt"
	"path"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/schemas"
)

// Planner goals on the file manager: create, delete, move and rename.

// filesPrep focuses the file manager and, unless keep names the dialog kind
// the goal is working in, dismisses dialogs and the location bar.
func filesPrep(d *Desktop, keep func(*Dialog) bool) (schemas.Action, bool, error) {
	if a, ok, err := focusApp(d, "files"); ok || err != nil {
		return a, true, err
	}
	fm := &d.S.Files
	if fm.Dialog != nil && (keep == nil || !keep(fm.Dialog)) {
		return key("escape"), true, nil
	}
	if fm.Location != nil {
		return key("escape"), true, nil
	}
	return schemas.Action{}, false, nil
}

// filesGoto navigates to dir: through the sidebar place above it, then by
// opening one folder at a time.
func filesGoto(d *Desktop, dir string) (schemas.Action, bool, error) {
	fm := &d.S.Files
	if fm.Dir == dir {
		return schemas.Action{}, false, nil
	}
	if !d.S.FS.IsDir(dir) {
		return schemas.Action{}, true, fmt.Errorf("folder %s does not exist", dir)
	}
	if strings.HasPrefix(dir, fm.Dir+"/") || (fm.Dir == "/" && dir != "/") {
		child := strings.SplitN(strings.TrimPrefix(dir, strings.TrimSuffix(fm.Dir, "/")+"/"), "/", 2)[0]
		if a, ok, err := filesReveal(d, child); ok || err != nil {
			return a, true, err
		}
		a, err := clickID(d, action.DoubleClick, "files/item:"+child)
		return a, true, err
	}
	best := ""
	for _, p := range places {
		if (dir == p.dir || strings.HasPrefix(dir, p.dir+"/")) && len(p.dir) > len(best) {
			best = p.dir
		}
	}
	if best == "" {
		// Outside home: type the location.
		if fm.Location == nil {
			return hotkey("ctrl", "l"), true, nil
		}
		return fillField(fm.Location, dir, true), true, nil
	}
	a, err := clickID(d, action.Click, "files/place:"+best)
	return a, true, err
}

// filesReveal scrolls the file list until the entry is visible.
func filesReveal(d *Desktop, name string) (schemas.Action, bool, error) {
	fm := &d.S.Files
	if d.View().Find("files/item:"+name) != nil {
		return schemas.Action{}, false, nil
	}
	entries, _ := d.S.FS.Children(fm.Dir)
	idx := -1
	for i, e := range entries {
		if e.Name() == name {
			idx = i
		}
	}
	if idx < 0 {
		return schemas.Action{}, true, fmt.Errorf("%s is not in %s", name, fm.Dir)
	}
	l := layoutFiles(d.contentRect("files"))
	a, err := scrollToward(d, "files/list", idx, clampScroll(fm.Scroll, l.visible, len(entries)), l.visible, 3)
	return a, true, err
}

// filesSelect selects an entry of the current folder.
func filesSelect(d *Desktop, name string) (schemas.Action, bool, error) {
	if a, ok, err := filesReveal(d, name); ok || err != nil {
		return a, true, err
	}
	if d.S.Files.Selected == name {
		return schemas.Action{}, false, nil
	}
	a, err := clickID(d, action.Click, "files/item:"+name)
	return a, true, err
}

// createGoal makes a folder or an empty file exist, through File > New.
type createGoal struct {
	path string
	dir  bool
	crit int
}

func (g *createGoal) done(p *planner, d *Desktop) bool {
	e, ok := d.S.FS.Stat(g.path)
	return ok && e.Dir == g.dir
}

func (g *createGoal) next(p *planner, d *Desktop) (schemas.Action, error) {
	kind := "new_file"
	if g.dir {
		kind = "new_folder"
	}
	parent, name := path.Dir(g.path), path.Base(g.path)
	keep := func(dl *Dialog) bool { return dl.Kind == kind && d.S.Files.Dir == parent && dl.Error == "" }
	if a, ok, err := filesPrep(d, keep); ok || err != nil {
		return a, err
	}
	if dl := d.S.Files.Dialog; dl != nil {
		return fillField(&dl.Field, name, true), nil
	}
	if a, ok, err := filesGoto(d, parent); ok || err != nil {
		return a, err
	}
	return menuCommand(d, "files", "File", kind)
}

// deleteGoal removes a file or folder: select it, press Delete, confirm.
type deleteGoal struct {
	path string
	crit int
}

func (g *deleteGoal) done(p *planner, d *Desktop) bool {
	_, ok := d.S.FS.Stat(g.path)
	return !ok
}

func (g *deleteGoal) next(p *planner, d *Desktop) (schemas.Action, error) {
	keep := func(dl *Dialog) bool { return dl.Kind == "delete" && dl.Target == g.path }
	if a, ok, err := filesPrep(d, keep); ok || err != nil {
		return a, err
	}
	if d.S.Files.Dialog != nil {
		return key("enter"), nil
	}
	if a, ok, err := filesGoto(d, path.Dir(g.path)); ok || err != nil {
		return a, err
	}
	if a, ok, err := filesSelect(d, path.Base(g.path)); ok || err != nil {
		return a, err
	}
	return key("delete"), nil
}

// relocateGoal moves and/or renames src to dst: drag onto a visible target
// folder, else cut and paste, then rename.
type relocateGoal struct {
	src, dst string
	crit     []int
}

func (g *relocateGoal) done(p *planner, d *Desktop) bool {
	_, srcThere := d.S.FS.Stat(g.src)
	_, dstThere := d.S.FS.Stat(g.dst)
	return dstThere && !srcThere
}

func (g *relocateGoal) next(p *planner, d *Desktop) (schemas.Action, error) {
	cur := g.src
	if _, ok := d.S.FS.Stat(cur); !ok {
		cur = path.Join(path.Dir(g.dst), path.Base(g.src))
		if _, ok := d.S.FS.Stat(cur); !ok {
			return schemas.Action{}, fmt.Errorf("%s vanished before it reached %s", g.src, g.dst)
		}
	}
	keep := func(dl *Dialog) bool { return dl.Kind == "rename" && dl.Target == cur && dl.Error == "" }
	if a, ok, err := filesPrep(d, keep); ok || err != nil {
		return a, err
	}
	fm := &d.S.Files
	if dl := fm.Dialog; dl != nil {
		return fillField(&dl.Field, path.Base(g.dst), true), nil
	}
	dstDir := path.Dir(g.dst)
	if path.Dir(cur) == dstDir {
		if a, ok, err := filesGoto(d, dstDir); ok || err != nil {
			return a, err
		}
		if a, ok, err := filesSelect(d, path.Base(cur)); ok || err != nil {
			return a, err
		}
		return key("f2"), nil
	}
	if fm.Clip == cur && fm.ClipCut {
		if a, ok, err := filesGoto(d, dstDir); ok || err != nil {
			return a, err
		}
		return hotkey("ctrl", "v"), nil
	}
	if a, ok, err := filesGoto(d, path.Dir(cur)); ok || err != nil {
		return a, err
	}
	if a, ok, err := filesReveal(d, path.Base(cur)); ok || err != nil {
		return a, err
	}
	// Drag onto the target folder when it is on screen (a place, or a
	// folder in this listing); otherwise cut here and paste there.
	target := d.View().Find("files/place:" + dstDir)
	if target == nil && path.Dir(dstDir) == fm.Dir {
		target = d.View().Find("files/item:" + path.Base(dstDir))
	}
	src := d.View().Find("files/item:" + path.Base(cur))
	if target != nil && src != nil {
		x, y := gridPoint(d, src.Center())
		x2, y2 := gridPoint(d, target.Center())
		return action.DragAction(x, y, x2, y2), nil
	}
	if a, ok, err := filesSelect(d, path.Base(cur)); ok || err != nil {
		return a, err
	}
	return hotkey("ctrl", "x"), nil
}
