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
