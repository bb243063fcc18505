package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestRolloutCommitsTrajectories(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	t.Setenv("CUALAKE_LAKE", dir)
	out, err := run(t, "rollout", "--policy", "oracle", "--n", "1", "--limit-tasks", "3", "--json", "--workers", "2")
	if err != nil {
		t.Fatalf("rollout: %v\n%s", err, out)
	}
	var res struct {
		Snapshot string
		Summary  struct {
			Trajectories int
			SuccessRate  float64 `json:"success_rate"`
			NewBlobs     int     `json:"new_blobs"`
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if res.Summary.Trajectories != 3 || res.Summary.SuccessRate != 1 || res.Summary.NewBlobs == 0 {
		t.Fatalf("summary: %+v", res.Summary)
	}
	out, err = run(t, "query", "--format", "csv", `select count(*) as n, count(distinct t.task_id) as tasks,
		bool_and(s.observation in (select hash from blobs)) as screenshots_stored
		from trajectories t join steps s using (trajectory_id)`)
	if err != nil || !strings.HasSuffix(out, ",3,true\n") {
		t.Fatalf("query: %q %v", out, err)
	}
	// A second random run appends as iteration 1 and stores known screenshots once.
	if out, err = run(t, "rollout", "--policy", "random", "--n", "2", "--limit-tasks", "2", "--max-turns", "3", "--seed", "5"); err != nil {
		t.Fatalf("random rollout: %v %s", err, out)
	}
	out, err = run(t, "query", "--format", "csv", "select iteration, policy, count(*) from trajectories group by all order by 1")
	if err != nil || out != "iteration,policy,count_star()\n0,oracle,3\n1,random,4\n" {
		t.Fatalf("iterations: %q %v", out, err)
	}
	out, _ = run(t, "query", "--format", "csv", "select count(*) = count(distinct hash) from blobs")
	if !strings.HasSuffix(out, "true\n") {
		t.Fatalf("blobs stored twice: %q", out)
	}
	if _, err := run(t, "rollout", "--policy", "nope"); ExitCode(err) != ExitUsage {
		t.Fatalf("unknown policy: %v", err)
	}
	if _, err := run(t, "rollout", "--tasks", "no-such-task"); err == nil || !strings.Contains(err.Error(), "no-such-task") {
		t.Fatalf("unknown task: %v", err)
	}
}
