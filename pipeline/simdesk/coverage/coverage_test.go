package coverage

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/schemas"
)

// osworldTasks reads the OSWorld task sample next to the repository
// (../shared/data/osworld) as the importer makes rows of it: setup =
// config, judge = evaluator, domain = the folder.
func osworldTasks(t *testing.T) []schemas.Task {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "..", "shared", "data", "osworld", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	if err != nil || len(files) == 0 {
		// The sample lives beside the checkout (../shared), as for the
		// exporter and audit tests; a checkout elsewhere has none to replay.
		t.Skipf("the OSWorld task sample is not beside the checkout at %s (%v)", dir, err)
	}
	sort.Strings(files)
	var out []schemas.Task
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var raw struct {
			ID        string          `json:"id"`
			Config    json.RawMessage `json:"config"`
			Evaluator json.RawMessage `json:"evaluator"`
		}
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		setup := string(raw.Config)
		if setup == "" || setup == "null" {
			setup = "[]"
		}
		domain := filepath.Base(filepath.Dir(f))
		out = append(out, schemas.Task{TaskID: raw.ID, Domain: domain, App: domain, Setup: setup, Judge: string(raw.Evaluator),
			Source: schemas.SourceImported})
	}
	return out
}

func TestCoverageOfOSWorldSample(t *testing.T) {
	tasks := osworldTasks(t)
	var checked []Task
	for _, task := range tasks {
		checked = append(checked, Check(task))
	}
	r := Summarize(checked)
	for _, d := range append(r.Domains, r.Total) {
		t.Logf("%-18s tasks %3d  sim %3d  vm %3d  top sim blockers %v", d.Domain, d.Tasks, d.OnSim, d.OnVM, head(d.SimBlockers, 4))
	}
	// The numbers docs/simdesk.md and the README state.
	want := map[string][3]int{"chrome": {46, 0, 3}, "gimp": {26, 0, 11}, "libreoffice_calc": {47, 0, 1}, "os": {24, 3, 19},
		"thunderbird": {15, 0, 1}, "vs_code": {23, 0, 5}}
	for _, d := range r.Domains {
		if got := [3]int{d.Tasks, d.OnSim, d.OnVM}; got != want[d.Domain] {
			t.Errorf("%s: tasks, sim, vm = %v, want %v", d.Domain, got, want[d.Domain])
		}
	}
	if r.Total.Tasks != 181 || r.Total.OnSim != 3 || r.Total.OnVM != 40 {
		t.Fatalf("total %+v", r.Total)
	}
	// What the simulator can run, it runs: each such task plays out.
	for i, c := range checked {
		if !c.OnSim() {
			continue
		}
		sim, err := simdesk.NewSim(simdesk.Options{TreeOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		ep, err := simdesk.Run(sim, answer("fail"), tasks[i], 1, 5)
		if err != nil || ep.Score != 1 {
			t.Errorf("%s: an infeasible task answered fail scored %v (%v)", c.TaskID, ep.Score, err)
		}
	}
	for _, c := range checked {
		if !c.OnSim() && len(c.Details) == 0 {
			t.Errorf("%s: blocked without a reason: %v", c.TaskID, c.Sim)
		}
		if c.Domain == "libreoffice_calc" && !strings.Contains(strings.Join(c.Sim, ","), "setup: download") {
			t.Errorf("%s: a Calc task that downloads its .xlsx is not blocked by download: %v", c.TaskID, c.Sim)
		}
	}
}

// answer is a policy that answers at once.
type answer string

func (a answer) Next(simdesk.Obs) (schemas.Action, error) {
	return schemas.Action{Kind: string(a)}, nil
}

func head(c []Count, n int) []Count {
	if len(c) > n {
		return c[:n]
	}
	return c
}
