package cli

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestSimdeskPool(t *testing.T) {
	t.Setenv("CUALAKE_LAKE", filepath.Join(t.TempDir(), "lake"))
	if out, err := run(t, "simdesk", "pool"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	out, err := run(t, "query", "--format", "csv", `select count(*), count(distinct domain), count(*) filter (where split = 'heldout'),
		min(difficulty), max(difficulty) from tasks`)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Split(strings.TrimSpace(strings.Split(out, "\n")[1]), ",")
	n, _ := strconv.Atoi(f[0])
	apps, _ := strconv.Atoi(f[1])
	held, _ := strconv.Atoi(f[2])
	lo, _ := strconv.Atoi(f[3])
	hi, _ := strconv.Atoi(f[4])
	if n < 200 || apps < 5 || held == 0 || held > n/2 || lo > 2 || hi < 20 {
		t.Fatalf("pool: %s", out)
	}
	// Idempotent: committing the same pool again changes nothing.
	before, _ := run(t, "lake", "log", "--json")
	run(t, "simdesk", "pool")
	after, _ := run(t, "lake", "log", "--json")
	if before != after {
		t.Fatal("committing the same pool twice made a new snapshot")
	}
}

func TestSimdeskCoverage(t *testing.T) {
	sample := osworldSample(t)
	initLake(t)
	if out, err := run(t, "import", "osworld-tasks", sample); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	out, err := run(t, "simdesk", "coverage", "--json", "--list")
	if err != nil {
		t.Fatalf("%v %s", err, out)
	}
	var rep struct {
		Report struct {
			Domains []struct {
				Domain     string
				Tasks, Sim int
				VM         int `json:"vm"`
			}
			Total struct {
				Tasks, Sim  int
				VM          int `json:"vm"`
				SimBlockers []struct {
					Blocker string
					Tasks   int
				} `json:"sim_blockers"`
			}
		}
		Blocked []struct {
			TaskID string   `json:"task_id"`
			Sim    []string `json:"sim_blockers"`
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%.500s", err, out)
	}
	tot := rep.Report.Total
	// The numbers docs/simdesk.md and the README state.
	if tot.Tasks != 181 || tot.Sim != 3 || tot.VM != 40 || len(rep.Blocked) != 178 || len(rep.Report.Domains) != 6 {
		t.Fatalf("total %+v, %d blocked, %d domains", tot, len(rep.Blocked), len(rep.Report.Domains))
	}
	if b := tot.SimBlockers[0]; b.Blocker != "setup: download" || b.Tasks != 100 {
		t.Fatalf("top blocker %+v", b)
	}
	out, err = run(t, "simdesk", "coverage")
	if err != nil || !strings.Contains(out, "the simulator runs 3, an OSWorld VM through rollout --env osworld runs 40") || !strings.Contains(out, "os                       24      3     19") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// TestSimdeskTemplates: every pool task gets a template; files-move's ten
// training and two held-out tasks fall into its two templates (drag onto
// a sidebar folder, cut and paste into a nested one), with both held-out
// tasks in the drag template; the JSON's templates list their tasks and
// splits; a lake with no snapshot is an error saying so.
func TestSimdeskTemplates(t *testing.T) {
	t.Setenv("CUALAKE_LAKE", filepath.Join(t.TempDir(), "lake"))
	if _, err := run(t, "lake", "init"); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "simdesk", "templates"); err == nil || !strings.Contains(err.Error(), "no snapshot") {
		t.Fatalf("empty lake: %v", err)
	}
	if out, err := run(t, "simdesk", "pool"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	out, err := run(t, "simdesk", "templates", "--json")
	if err != nil {
		t.Fatalf("%v %s", err, out)
	}
	var got struct {
		Tasks []struct {
			TaskID   string `json:"task_id"`
			Split    string
			Missing  string
			Template int
		}
		Templates []struct {
			ID     int
			Text   string
			Tasks  []string
			Splits map[string]int
		}
		Missing int
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.Missing != 0 || len(got.Tasks) < 200 || len(got.Templates) < 30 || len(got.Templates) >= len(got.Tasks) {
		t.Fatalf("%d tasks, %d templates, %d missing", len(got.Tasks), len(got.Templates), got.Missing)
	}
	move := map[int][]string{}
	for _, r := range got.Tasks {
		if r.Template < 1 || r.Template > len(got.Templates) {
			t.Fatalf("%s: template %d", r.TaskID, r.Template)
		}
		if tm := got.Templates[r.Template-1]; tm.ID != r.Template || !strings.Contains(strings.Join(tm.Tasks, ","), r.TaskID) {
			t.Fatalf("%s: template %d lists %v", r.TaskID, r.Template, tm.Tasks)
		}
		if strings.HasPrefix(r.TaskID, "files-move-") {
			move[r.Template] = append(move[r.Template], r.TaskID+"/"+r.Split)
		}
	}
	if len(move) != 2 {
		t.Fatalf("files-move templates: %v", move)
	}
	for id := range move {
		tm := got.Templates[id-1]
		if drag := strings.Contains(tm.Text, "drag"); drag != (tm.Splits["heldout"] == 2) || tm.Splits["train"] == 0 {
			t.Fatalf("files-move template %q: splits %v", tm.Text, tm.Splits)
		}
	}
}
