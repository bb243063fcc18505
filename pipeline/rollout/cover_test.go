package rollout

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/schemas"
)

// TestCover: a quarter of the built-in training pool keeps ceil(n/4) tasks
// of every family, in pool order; the pick depends on the seed but not on
// the input order; 1 keeps everything; VeriGen's one-of-a-kind tasks are
// drawn per app, not each kept as a family of one.
func TestCover(t *testing.T) {
	var pool []schemas.Task
	for _, task := range simdesk.Pool() {
		if task.Split == "train" {
			pool = append(pool, task)
		}
	}
	for i := range 8 { // what synthesis adds: ids without a family number
		pool = append(pool, schemas.Task{TaskID: fmt.Sprintf("syn-editor-%04d", i+1), App: "editor", Source: schemas.SourceSynthesized})
	}
	count := func(tasks []schemas.Task) map[string]int {
		m := map[string]int{}
		for i := range tasks {
			m[Stratum(&tasks[i])]++
		}
		return m
	}
	all := count(pool)
	if all["editor/synthesized"] != 8 || all["editor-fixline"] == 0 {
		t.Fatalf("strata %v", all)
	}
	got, err := Cover(pool, 0.25, 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	kept := count(got)
	for s, n := range all {
		if want := (n + 3) / 4; kept[s] != want {
			t.Errorf("stratum %s: kept %d of %d, want %d", s, kept[s], n, want)
		}
	}
	if len(got) >= len(pool)/2 {
		t.Fatalf("kept %d of %d", len(got), len(pool))
	}
	pos := map[string]int{}
	for i, task := range pool {
		pos[task.TaskID] = i
	}
	for i := 1; i < len(got); i++ {
		if pos[got[i-1].TaskID] > pos[got[i].TaskID] {
			t.Fatalf("%s before %s: not in pool order", got[i-1].TaskID, got[i].TaskID)
		}
	}
	ids := func(tasks []schemas.Task) string {
		var s []string
		for _, task := range tasks {
			s = append(s, task.TaskID)
		}
		slices.Sort(s)
		return strings.Join(s, ",")
	}
	rev := slices.Clone(pool)
	slices.Reverse(rev)
	if again, _ := Cover(rev, 0.25, 7, nil); ids(again) != ids(got) {
		t.Fatal("the pick depends on the input order")
	}
	if other, _ := Cover(pool, 0.25, 8, nil); ids(other) == ids(got) {
		t.Fatal("seeds 7 and 8 pick the same tasks")
	}
	if same, _ := Cover(pool, 1, 7, nil); len(same) != len(pool) {
		t.Fatalf("coverage 1 kept %d of %d", len(same), len(pool))
	}
	// 0.3 x 10 is 3.0000000000000004 in floats: it must keep 3, not 4.
	ten := make([]schemas.Task, 10)
	for i := range ten {
		ten[i] = schemas.Task{TaskID: fmt.Sprintf("fam-%03d", i)}
	}
	if k, _ := Cover(ten, 0.3, 1, nil); len(k) != 3 {
		t.Fatalf("0.3 of 10 kept %d", len(k))
	}
	for _, bad := range []float64{0, -1, 1.01, math.NaN()} {
		if _, err := Cover(pool, bad, 1, nil); err == nil || !strings.Contains(err.Error(), "coverage") {
			t.Fatalf("coverage %v: %v", bad, err)
		}
	}
}

// TestCoverTemplates: with templates, a stratum's pick takes one task of
// each template (in the seed's order) before a second of any, and a task
// without one counts as its own; on the built-in pool, the oracle's
// templates tell files-move's drag onto a sidebar folder from its
// cut-and-paste into a nested one, and a quarter of the family then holds
// both wherever the seed's plain pick holds one.
func TestCoverTemplates(t *testing.T) {
	var fam []schemas.Task
	templates := map[string]string{}
	for i := range 8 {
		id := fmt.Sprintf("fam-%03d", i)
		fam = append(fam, schemas.Task{TaskID: id})
		if i < 7 {
			templates[id] = []string{"a", "a", "a", "a", "a", "b", "c"}[i]
		}
	}
	tmplOf := func(tasks []schemas.Task) map[string]int {
		m := map[string]int{}
		for _, task := range tasks {
			s, ok := templates[task.TaskID]
			if !ok {
				s = "own:" + task.TaskID
			}
			m[s]++
		}
		return m
	}
	for seed := int64(1); seed <= 20; seed++ {
		two, err := Cover(fam, 0.25, seed, templates)
		if err != nil {
			t.Fatal(err)
		}
		if m := tmplOf(two); len(two) != 2 || len(m) != 2 {
			t.Fatalf("seed %d: kept %v, want 2 tasks of 2 templates", seed, m)
		}
		four, _ := Cover(fam, 0.5, seed, templates)
		if m := tmplOf(four); len(four) != 4 || len(m) != 4 || m["a"] != 1 {
			t.Fatalf("seed %d: kept %v, want one task of each of the 4 templates", seed, m)
		}
		six, _ := Cover(fam, 0.75, seed, templates)
		if m := tmplOf(six); len(m) != 4 || m["a"] != 3 {
			t.Fatalf("seed %d: kept %v, want the 4 templates and 2 more of a", seed, m)
		}
	}

	var pool []schemas.Task
	for _, task := range simdesk.Pool() {
		if task.Split == "train" {
			pool = append(pool, task)
		}
	}
	tm, err := OracleTemplates(pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Missing) != 0 {
		t.Fatalf("built-in tasks without a template: %s", tm.MissingSummary())
	}
	moves := map[string][]string{}
	for _, task := range pool {
		if simdesk.FamilyOf(task.TaskID) == "files-move" {
			s := tm.ByTask[task.TaskID]
			moves[s] = append(moves[s], task.TaskID)
		}
	}
	if len(moves) != 2 {
		t.Fatalf("files-move has %d templates, want 2 (drag, cut and paste): %v", len(moves), moves)
	}
	for s, ids := range moves {
		if !strings.Contains(s, "drag") && !strings.Contains(s, "hotkey ctrl x") {
			t.Fatalf("files-move template %q (%v) neither drags nor cuts", s, ids)
		}
	}
	if n := tm.Count(); n < 30 || n > len(pool)-10 {
		t.Fatalf("%d templates over %d tasks", n, len(pool))
	}
	family := func(tasks []schemas.Task, f string) map[string]int {
		m := map[string]int{}
		for _, task := range tasks {
			if simdesk.FamilyOf(task.TaskID) == f {
				m[tm.ByTask[task.TaskID]]++
			}
		}
		return m
	}
	missed := 0
	for seed := int64(1); seed <= 30; seed++ {
		plain, _ := Cover(pool, 0.25, seed, nil)
		byTmpl, _ := Cover(pool, 0.25, seed, tm.ByTask)
		if len(byTmpl) != len(plain) {
			t.Fatalf("seed %d: %d tasks by template, %d plain", seed, len(byTmpl), len(plain))
		}
		if len(family(plain, "files-move")) == 1 {
			missed++
		}
		// One of each template first keeps min(n, templates) of a family's.
		if a, b := tm.Of(byTmpl).Count(), tm.Of(plain).Count(); a < b || a > tm.Count() {
			t.Fatalf("seed %d: the pick by template keeps %d templates, the plain one %d (of %d)", seed, a, b, tm.Count())
		}
		if m := family(byTmpl, "files-move"); len(m) != 2 {
			t.Fatalf("seed %d: files-move by template keeps %v", seed, m)
		}
	}
	if missed == 0 {
		t.Fatal("no seed's plain pick misses a files-move template: the check above proves nothing")
	}
}

// TestTemplatesMissing: a task whose judge the oracle has no plan for gets
// no template, with the reason, and no error; two such tasks of one family
// count as two templates, so a pick by template may keep both.
func TestTemplatesMissing(t *testing.T) {
	var pool []schemas.Task
	for _, task := range simdesk.Pool() {
		if simdesk.FamilyOf(task.TaskID) == "files-rename" && task.Split == "train" {
			pool = append(pool, task)
		}
	}
	noPlan := `{"func":"compare_list","result":{"type":"dir_listing","path":"~/Documents"},"expected":{"type":"rule","rules":{"expected":["a"]}}}`
	for i := range 2 {
		pool[i].Judge = noPlan
	}
	tm, err := OracleTemplates(pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Missing) != 2 || !strings.Contains(tm.Missing[pool[0].TaskID], "no oracle plan") || !strings.Contains(tm.MissingSummary(), pool[1].TaskID) {
		t.Fatalf("missing %v (%s)", tm.Missing, tm.MissingSummary())
	}
	if tm.Count() != 1 || len(tm.ByTask) != len(pool)-2 {
		t.Fatalf("%d templates over %d tasks with one", tm.Count(), len(tm.ByTask))
	}
	// Of 10 tasks, 3 templates (two own, one shared by 8): a third keeps one
	// of each whatever the seed.
	for seed := int64(1); seed <= 10; seed++ {
		kept, err := Cover(pool, 0.3, seed, tm.ByTask)
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]bool{}
		for _, k := range kept {
			ids[k.TaskID] = true
		}
		if len(kept) != 3 || !ids[pool[0].TaskID] || !ids[pool[1].TaskID] {
			t.Fatalf("seed %d kept %v", seed, ids)
		}
	}
}

// Groups numbers templates by their first task and counts splits; a task
// without a template gets id 0 and no group.
func TestTemplateGroups(t *testing.T) {
	tm := Templates{ByTask: map[string]string{"a": "x", "b": "y", "c": "x"}, Missing: map[string]string{"d": "no plan"}}
	tasks := []schemas.Task{{TaskID: "b", Split: "train"}, {TaskID: "d", Split: "train"}, {TaskID: "a", Split: "heldout"}, {TaskID: "c", Split: "train"}}
	groups, ids := tm.Groups(tasks)
	if !slices.Equal(ids, []int{1, 0, 2, 2}) || len(groups) != 2 {
		t.Fatalf("ids %v, %d groups; want [1 0 2 2], 2", ids, len(groups))
	}
	if g := groups[1]; g.ID != 2 || g.Text != "x" || !slices.Equal(g.Tasks, []string{"a", "c"}) || g.Splits["heldout"] != 1 || g.Splits["train"] != 1 {
		t.Fatalf("group 2: %+v", *g)
	}
	if g := groups[0]; g.Text != "y" || !slices.Equal(g.Tasks, []string{"b"}) {
		t.Fatalf("group 1: %+v", *g)
	}
}
