package simdesk

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/simdesk/judge"
)

// Every built-in task: the oracle reaches score 1 (checked while the pool is
// built), the untouched state scores 0, and setup and judge pass the static
// checks the synthesize stage uses.
func TestPoolTasks(t *testing.T) {
	pool := Pool()
	if err := PoolError(); err != nil {
		t.Fatal(err)
	}
	if len(pool) < 200 {
		t.Fatalf("pool has %d tasks, want at least 200", len(pool))
	}
	sim, err := NewSim(Options{TreeOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, task := range pool {
		if ids[task.TaskID] {
			t.Errorf("duplicate id %s", task.TaskID)
		}
		ids[task.TaskID] = true
		if err := CheckSetup(task.Setup); err != nil {
			t.Errorf("%s: %v", task.TaskID, err)
		}
		if err := judge.Check(task.Judge); err != nil {
			t.Errorf("%s: %v", task.TaskID, err)
		}
		if _, err := sim.Reset(task, 3); err != nil {
			t.Fatalf("%s: %v", task.TaskID, err)
		}
		score, detail, err := sim.Evaluate()
		if err != nil || score != 0 {
			t.Errorf("%s: untouched state scores %v (%v): %s", task.TaskID, score, err, detail)
		}
		if task.Difficulty < 1 || task.Difficulty > 40 {
			t.Errorf("%s: difficulty %d", task.TaskID, task.Difficulty)
		}
		if task.Domain == "" || task.Instruction == "" || (task.Split != "train" && task.Split != "heldout") {
			t.Errorf("%s: incomplete row %+v", task.TaskID, task)
		}
	}
}

// TestPoolSplitIsStratified checks that every family holds out its share
// of parameter values: round(HeldOutShare x distinct values), never more
// (0.1.7's per-value hash held out 5 of editor-fixline's 8), and that the
// instances of one parameter value share a split.
func TestPoolSplitIsStratified(t *testing.T) {
	pool := map[string]string{}
	for _, task := range Pool() {
		pool[task.TaskID] = task.Split
	}
	for _, f := range families() {
		split := map[string]string{}
		held := 0
		for i := 0; i < f.n; i++ {
			spec := f.gen(i)
			s, ok := pool[fmt.Sprintf("%s-%03d", f.id, i+1)]
			if !ok {
				t.Fatalf("%s-%03d is not in the pool", f.id, i+1)
			}
			if prev, ok := split[spec.param]; ok {
				if prev != s {
					t.Errorf("%s: parameter %q is in both splits", f.id, spec.param)
				}
				continue
			}
			split[spec.param] = s
			if s == "heldout" {
				held++
			}
		}
		want := int(math.Round(HeldOutShare * float64(len(split))))
		if held != want {
			t.Errorf("%s: %d of %d parameter values held out, want %d", f.id, held, len(split), want)
		}
	}
	// The choice within a family depends on the hash, not on instance order.
	a := heldOutParams("fam", []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"})
	b := heldOutParams("fam", []string{"j", "i", "h", "g", "f", "e", "d", "c", "b", "a"})
	if len(a) != 2 || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("held-out values depend on order or count: %v against %v", a, b)
	}
}

func TestPoolSplitAndFamilies(t *testing.T) {
	pool := Pool()
	held, infeasible := 0, 0
	fams := map[string]bool{}
	apps := map[string]int{}
	for _, task := range pool {
		if task.Split == "heldout" {
			held++
		}
		if !task.Feasible {
			infeasible++
		}
		fams[FamilyOf(task.TaskID)] = true
		apps[task.Domain]++
	}
	share := float64(held) / float64(len(pool))
	if share < 0.12 || share > 0.30 {
		t.Errorf("held-out share %.2f, want about %.2f", share, HeldOutShare)
	}
	if infeasible < 10 {
		t.Errorf("%d infeasible tasks", infeasible)
	}
	for _, app := range Apps() {
		if apps[app] < 20 {
			t.Errorf("app %s has %d tasks", app, apps[app])
		}
	}
	if len(fams) < 20 {
		t.Errorf("%d families", len(fams))
	}
	// Stable: building twice gives the same rows.
	again := Pool()
	for i := range pool {
		if pool[i].TaskID != again[i].TaskID || pool[i].Judge != again[i].Judge || pool[i].Setup != again[i].Setup {
			t.Fatalf("pool not stable at %d", i)
		}
	}
	if !strings.HasPrefix(pool[0].TaskID, "files-") {
		t.Errorf("first task %s", pool[0].TaskID)
	}
}
