package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestSFTBeatsUntrainedPolicy warm-starts the causal policy on the segments
// of oracle demonstrations of easy training tasks and measures, by greedy
// rollout on those tasks, that it succeeds clearly more often than an
// untrained policy.
func TestSFTBeatsUntrainedPolicy(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a policy; skipped in -short mode")
	}
	t.Setenv("CUALAKE_LAKE", filepath.Join(t.TempDir(), "lake"))
	if _, err := run(t, "simdesk", "pool"); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "query", "--format", "csv", `select string_agg(task_id, ',' order by task_id) from
		(select task_id from tasks where split = 'train' and difficulty between 2 and 4 and feasible order by task_id limit 24)`)
	if err != nil {
		t.Fatal(err)
	}
	ids := strings.TrimSpace(strings.Split(strings.TrimSpace(out), "\n")[1])
	ids = strings.Trim(ids, `"`)
	if out, err := run(t, "rollout", "--policy", "oracle", "--source", "warmstart", "--tasks", ids, "--n", "1"); err != nil {
		t.Fatalf("demos: %v %s", err, out)
	}
	if out, err := run(t, "segment", "--view", "pointer", "--image-tokens", "8"); err != nil {
		t.Fatalf("segment: %v %s", err, out)
	}
	success := func(steps string) float64 {
		t.Helper()
		if out, err := run(t, "train", "--objective", "sft", "--steps", steps, "--batch", "8", "--seed", "1"); err != nil {
			t.Fatalf("train: %v %s", err, out)
		}
		out, err := run(t, "rollout", "--policy", "checkpoint", "--greedy", "--source", "eval", "--tasks", ids, "--n", "1",
			"--max-turns", "10", "--iteration", steps, "--json")
		if err != nil {
			t.Fatalf("rollout: %v %s", err, out)
		}
		var res struct {
			Summary struct {
				SuccessRate float64 `json:"success_rate"`
			}
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return res.Summary.SuccessRate
	}
	untrained := success("1")
	trained := success("150")
	t.Logf("greedy success on %d easy training tasks: untrained (1 step) %.2f, after 150 SFT steps %.2f", strings.Count(ids, ",")+1, untrained, trained)
	if trained < untrained+0.3 {
		t.Fatalf("SFT did not clearly help: %.2f -> %.2f", untrained, trained)
	}
}
