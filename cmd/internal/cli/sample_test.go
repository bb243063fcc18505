package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestSampleLoop(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	t.Setenv("CUALAKE_LAKE", dir)
	if out, err := run(t, "sample"); err == nil {
		t.Fatalf("sample on an empty lake should fail: %s", out)
	}
	// Initial pass: every task of the built-in pool.
	if out, err := run(t, "rollout", "--policy", "random", "--n", "2", "--max-turns", "2", "--tree-only"); err != nil {
		t.Fatalf("rollout: %v %s", err, out)
	}
	out, err := run(t, "sample", "--sampler", "uniform", "--batch", "3", "--seed", "1", "--json")
	if err != nil {
		t.Fatalf("sample: %v %s", err, out)
	}
	var res map[string]any
	json.Unmarshal([]byte(out), &res)
	if res["iteration"] != 1.0 || res["observed_iteration"] != 0.0 || res["batch"] != 3.0 {
		t.Fatalf("sample result: %s", out)
	}
	// Tried tasks start at their observed mean; held-out tasks (evaluation
	// only) get no pass rate.
	out, err = run(t, "query", "--format", "csv", `select count(*) filter (where ema is null), bool_and(ema = observed),
		count(*) = (select count(*) from tasks where split <> 'heldout') from pass_rates where iteration = 0`)
	if err != nil || !strings.HasSuffix(out, "\n0,true,true\n") {
		t.Fatalf("pass rates: %q %v", out, err)
	}
	if _, err := run(t, "sample", "--sampler", "uniform", "--batch", "3"); err == nil || !strings.Contains(err.Error(), "already sampled") {
		t.Fatalf("sampling twice: %v", err)
	}
	// The next rollout takes the batch; the next sample folds it in.
	if out, err := run(t, "rollout", "--policy", "oracle", "--n", "2", "--tree-only", "--json"); err != nil || !strings.Contains(out, `"iteration": 1`) {
		t.Fatalf("rollout of the batch: %v %s", err, out)
	}
	if out, err := run(t, "sample", "--sampler", "frontier", "--batch", "4", "--seed", "2"); err != nil {
		t.Fatalf("second sample: %v %s", err, out)
	}
	out, err = run(t, "query", "--format", "csv", `select iteration, count(*) from pass_rates group by 1 order by 1`)
	if err != nil || !strings.Contains(out, "\n0,") || !strings.Contains(out, "\n1,") {
		t.Fatalf("history: %q %v", out, err)
	}
	// Tasks the oracle solved at iteration 1 moved up by alpha * (1 - p).
	out, err = run(t, "query", "--format", "csv", `select bool_and(abs(b.ema - (0.8 * a.ema + 0.2 * b.observed)) < 1e-12)
		from pass_rates a join pass_rates b using (task_id) where a.iteration = 0 and b.iteration = 1 and b.rollouts > 0`)
	if err != nil || !strings.HasSuffix(out, "true\n") {
		t.Fatalf("EMA update: %q %v", out, err)
	}
	if _, err := run(t, "sample", "--sampler", "bogus"); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("unknown sampler: %v", err)
	}
	if _, err := run(t, "rollout", "--policy", "random", "--n", "1", "--max-turns", "1", "--tree-only"); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "sample", "--batch", "1000"); err == nil {
		t.Fatal("a batch larger than the pool should fail")
	}
}

func TestSimulateSamplers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	t.Setenv("CUALAKE_LAKE", dir)
	chart := filepath.Join(t.TempDir(), "s.svg")
	out, err := run(t, "simulate", "samplers", "--iterations", "6", "--tasks", "300", "--seeds", "1", "--chart", chart, "--json")
	if err != nil {
		t.Fatalf("%v %s", err, out)
	}
	var res map[string]map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("json: %v %s", err, out)
	}
	for _, s := range []string{"uniform", "frontier", "dtac", "curriculum", "dapo"} {
		if _, ok := res[s]["final_eval_reward"]; !ok {
			t.Fatalf("sampler %s missing final_eval_reward: %v", s, res[s])
		}
	}
	out, err = run(t, "query", "--format", "csv", "select count(distinct sampler), max(iteration) from sampler_sim")
	if err != nil || !strings.HasSuffix(out, "\n5,6\n") && !strings.HasSuffix(out, "\n5,5\n") {
		t.Fatalf("sampler_sim: %q %v", out, err)
	}
}

// DTAC folds rollouts in with EvoCUA-1.5's beta = 0.7, frontier with
// ScaleCUA's alpha = 0.2, and the commit records which.
func TestSampleEMAPerSampler(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	t.Setenv("CUALAKE_LAKE", dir)
	if out, err := run(t, "rollout", "--policy", "random", "--n", "2", "--max-turns", "2", "--tree-only"); err != nil {
		t.Fatalf("rollout: %v %s", err, out)
	}
	out, err := run(t, "sample", "--sampler", "dtac", "--batch", "3", "--p-min", "0", "--p-max", "1", "--seed", "1", "--json")
	if err != nil || !strings.Contains(out, `"ema_rule": "evocua-beta"`) || !strings.Contains(out, `"ema_alpha": 0.3`) {
		t.Fatalf("sample dtac: %v %s", err, out)
	}
	if out, err := run(t, "rollout", "--policy", "oracle", "--n", "2", "--tree-only"); err != nil {
		t.Fatalf("rollout of the batch: %v %s", err, out)
	}
	if out, err := run(t, "sample", "--sampler", "dtac", "--batch", "3", "--p-min", "0", "--p-max", "1", "--seed", "2"); err != nil {
		t.Fatalf("second sample: %v %s", err, out)
	}
	out, err = run(t, "query", "--format", "csv", `select count(*), bool_and(abs(b.ema - (0.7 * a.ema + 0.3 * b.observed)) < 1e-12)
		from pass_rates a join pass_rates b using (task_id) where a.iteration = 0 and b.iteration = 1 and b.rollouts > 0`)
	if err != nil || !strings.HasSuffix(out, "3,true\n") {
		t.Fatalf("dtac EMA update: %q %v", out, err)
	}
	out, err = run(t, "query", "--format", "csv", `select json_extract_string(params, '$.ema.Rule'), json_extract(params, '$.ema.Beta')
		from lake_snapshots where stage = 'sample' order by depth desc limit 1`)
	if err != nil || !strings.HasSuffix(out, "evocua-beta,0.7\n") {
		t.Fatalf("snapshot params: %q %v", out, err)
	}
	if _, err := run(t, "sample", "--sampler", "dtac", "--alpha", "0.2", "--ema-beta", "0.7"); err == nil || !strings.Contains(err.Error(), "both") {
		t.Fatalf("--alpha with --ema-beta: %v", err)
	}
}
