package experiment

import (
	"context"
	"math"
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// TestFinalGainIsPerSeed: heldout_gain is the mean and sd over seeds of
// each seed's last held-out success minus its own iteration 0's, not the
// spread of the final numbers. Here the warm starts spread widely and the
// gains narrowly, as in the demo's RFT runs, so the two sds differ; a
// variant whose branch ends at iteration 0 gains 0.
func TestFinalGainIsPerSeed(t *testing.T) {
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	f := func(v float64) *float64 { return &v }
	warm := []float64{0.55, 0.38, 0.40}
	last := []float64{0.53, 0.48, 0.47}
	var rows []schemas.ExperimentResult
	for i, seed := range []int64{1, 2, 3} {
		rows = append(rows,
			schemas.ExperimentResult{Experiment: "x", Variant: "rft", Seed: seed, Iteration: 0, HeldoutSuccess: f(warm[i])},
			schemas.ExperimentResult{Experiment: "x", Variant: "rft", Seed: seed, Iteration: 1, HeldoutSuccess: f(0.9)},
			schemas.ExperimentResult{Experiment: "x", Variant: "rft", Seed: seed, Iteration: 2, HeldoutSuccess: f(last[i])},
			schemas.ExperimentResult{Experiment: "x", Variant: "none", Seed: seed, Iteration: 0, HeldoutSuccess: f(warm[i])},
			// another experiment's rows stay out
			schemas.ExperimentResult{Experiment: "y", Variant: "rft", Seed: seed, Iteration: 0, HeldoutSuccess: f(0)})
	}
	for i := range rows {
		rows[i].Branch = "exp/" + rows[i].Experiment + "/" + rows[i].Variant
		rows[i].Snapshot = "s"
	}
	schemas.ExperimentResults.Sort(rows)
	tx, err := l.Begin(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := lake.ReplaceTable(ctx, tx, schemas.ExperimentResults, rows); err != nil {
		t.Fatal(err)
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "test"})
	if err != nil {
		t.Fatal(err)
	}
	final, err := Final(ctx, l, m, "x", []string{"rft", "none"})
	if err != nil {
		t.Fatal(err)
	}
	if len(final) != 2 || final[0]["variant"] != "rft" || final[1]["variant"] != "none" {
		t.Fatalf("final rows %v", final)
	}
	var mean, sd float64
	gains := make([]float64, 3)
	for i := range gains {
		gains[i] = last[i] - warm[i]
		mean += gains[i] / 3
	}
	for _, g := range gains {
		sd += (g - mean) * (g - mean) / 2
	}
	sd = math.Sqrt(sd)
	near := func(name string, got any, want float64) {
		t.Helper()
		v, ok := got.(float64)
		if !ok || math.Abs(v-want) > 1e-9 {
			t.Errorf("%s = %v, want %.6f", name, got, want)
		}
	}
	near("rft heldout_gain", final[0]["heldout_gain"], mean)
	near("rft heldout_gain_sd", final[0]["heldout_gain_sd"], sd)
	near("none heldout_gain", final[1]["heldout_gain"], 0)
	near("none heldout_gain_sd", final[1]["heldout_gain_sd"], 0)
	if v, _ := final[0]["heldout_success_sd"].(float64); math.Abs(v-sd) < 0.01 {
		t.Fatalf("the test cannot tell the gain's sd (%.4f) from the final one's (%.4f)", sd, v)
	}
}
