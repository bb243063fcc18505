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
	got, err := Cover(pool, 0.25, 7)
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
	if again, _ := Cover(rev, 0.25, 7); ids(again) != ids(got) {
		t.Fatal("the pick depends on the input order")
	}
	if other, _ := Cover(pool, 0.25, 8); ids(other) == ids(got) {
		t.Fatal("seeds 7 and 8 pick the same tasks")
	}
	if same, _ := Cover(pool, 1, 7); len(same) != len(pool) {
		t.Fatalf("coverage 1 kept %d of %d", len(same), len(pool))
	}
	// 0.3 x 10 is 3.0000000000000004 in floats: it must keep 3, not 4.
	ten := make([]schemas.Task, 10)
	for i := range ten {
		ten[i] = schemas.Task{TaskID: fmt.Sprintf("fam-%03d", i)}
	}
	if k, _ := Cover(ten, 0.3, 1); len(k) != 3 {
		t.Fatalf("0.3 of 10 kept %d", len(k))
	}
	for _, bad := range []float64{0, -1, 1.01, math.NaN()} {
		if _, err := Cover(pool, bad, 1); err == nil || !strings.Contains(err.Error(), "coverage") {
			t.Fatalf("coverage %v: %v", bad, err)
		}
	}
}
