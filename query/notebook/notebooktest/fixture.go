// Package notebooktest builds a small lake with rows in every table that
// notebooks and audits read, and loads rendered reports in headless
// Chromium. It is for tests only.
package notebooktest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// Rows is the content of the fixture lake, table by table.
type Rows struct {
	Tasks         []schemas.Task
	Synthesis     []schemas.Synthesis
	Trajectories  []schemas.Trajectory
	Steps         []schemas.Step
	Segments      []schemas.Segment
	PassRates     []schemas.PassRate
	Batches       []schemas.Batch
	Verifications []schemas.Verification
	TrainMetrics  []schemas.TrainMetric
	TrainGroups   []schemas.TrainGroup
	Audits        []schemas.Audit
}

// rng is a tiny deterministic generator so the fixture is the same bytes
// on every run and machine.
type rng uint64

func (r *rng) next() uint64 {
	*r = *r*6364136223846793005 + 1442695040888963407
	return uint64(*r >> 33)
}

func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

func (r *rng) float() float64 { return float64(r.next()%1_000_000) / 1_000_000 }

func f64(v float64) *float64 { return &v }

// Domains of the fixture.
var Domains = []string{"files", "sheet", "mail"}

// Strategies of the fixture's verifications.
var Strategies = []string{"passive", "builtin", "trained"}

// FixtureRows returns the fixture's rows: 12 tasks over three domains and
// every source, three iterations of rollouts in groups of four, steps,
// segments in all three modes, pass rates, batches on several channels,
// verifications by three strategies, synthesis candidates of two role
// configurations over three rounds, train metrics and audit rows.
func FixtureRows() Rows {
	var out Rows
	r := rng(42)
	sources := []string{schemas.SourceImported, schemas.SourceSeed, schemas.SourceSynthesized, schemas.SourceSplit, schemas.SourceComposed, schemas.SourceSynthesized}
	for i := 0; i < 12; i++ {
		d := Domains[i%3]
		split := "train"
		if i%4 == 3 {
			split = "heldout"
		}
		out.Tasks = append(out.Tasks, schemas.Task{
			TaskID: fmt.Sprintf("task-%02d", i), Domain: d, App: d,
			Instruction: fmt.Sprintf("In the %s app, do chore number %d and save the result", d, i),
			Setup:       fmt.Sprintf(`[{"type":"open","parameters":{"path":"/home/user/%d.txt"}}]`, i),
			Judge:       fmt.Sprintf(`{"func":"check_file","expected":{"value":%d}}`, i),
			Feasible:    i != 11, Abilities: []string{"edit"}, Source: sources[i%len(sources)], Split: split,
			Difficulty: int32(3 + i%5),
		})
	}
	policies := []string{"checkpoint", "random"}
	outcomes := []string{schemas.OutcomeSuccess, schemas.OutcomeFailure, schemas.OutcomeIncomplete, schemas.OutcomeSuccess, schemas.OutcomeError}
	trajN := 0
	for it := 0; it < 3; it++ {
		for ti := 0; ti < 8; ti++ {
			task := out.Tasks[(ti+it)%len(out.Tasks)]
			group := fmt.Sprintf("g%d-%s", it, task.TaskID)
			for k := 0; k < 4; k++ {
				oc := outcomes[r.intn(len(outcomes))]
				if ti == 0 { // one all-success group per iteration: zero variance
					oc = schemas.OutcomeSuccess
				}
				reward := 0.0
				switch oc {
				case schemas.OutcomeSuccess:
					reward = 1
				case schemas.OutcomeIncomplete:
					reward = -0.2
				}
				tr := schemas.Trajectory{
					TrajectoryID: fmt.Sprintf("tr-%03d", trajN), TaskID: task.TaskID, Domain: task.Domain, GroupID: group,
					Policy: policies[ti%2], PolicyVersion: int32(it*2 - k%2), Iteration: int32(it), Seed: int64(trajN),
					Steps: int32(2 + r.intn(12)), Reward: reward, Outcome: oc, JudgeDetail: `{"score":` + fmt.Sprint(reward) + `}`, Source: "rollout",
				}
				if tr.PolicyVersion < 0 {
					tr.PolicyVersion = 0
				}
				if oc == schemas.OutcomeError {
					tr.Error = "environment timeout"
				}
				out.Trajectories = append(out.Trajectories, tr)
				trajN++
			}
		}
	}
	kinds := []string{"click", "type", "hotkey", "scroll", "done"}
	for _, tr := range out.Trajectories[:10] {
		for s := int32(0); s < 3; s++ {
			x, y := int32(100+r.intn(800)), int32(100+r.intn(800))
			st := schemas.Step{TrajectoryID: tr.TrajectoryID, Step: s, ActionKind: kinds[(int(s)+len(tr.TrajectoryID))%len(kinds)],
				X: &x, Y: &y, Response: "thinking", Observation: fmt.Sprintf("obs-%s-%d", tr.TrajectoryID, s),
				PromptTokens: int32(500 + r.intn(500)), ResponseTokens: int32(20 + r.intn(80)), Info: "{}"}
			if s == 1 && tr.Outcome == schemas.OutcomeFailure {
				st.ActionError = "click outside any window"
			}
			out.Steps = append(out.Steps, st)
		}
	}
	modes := []string{"trajectory", "step", "window"}
	for i, tr := range out.Trajectories[:9] {
		mode := modes[i%3]
		items := map[string]int{"trajectory": 1, "step": 4, "window": 2}[mode]
		for idx := 0; idx < items; idx++ {
			n := 6 + r.intn(10)
			seg := schemas.Segment{SegmentID: fmt.Sprintf("%s/%d", tr.TrajectoryID, idx), TrajectoryID: tr.TrajectoryID, TaskID: tr.TaskID,
				GroupID: tr.GroupID, Index: int32(idx), Mode: mode, Images: int32(1 + r.intn(5)), Reward: tr.Reward, Advantage: tr.Reward - 0.5,
				PolicyVersion: tr.PolicyVersion, Tokenizer: "byte", FirstStep: int32(idx), LastStep: int32(idx), TrajectorySteps: tr.Steps, HasLogprobs: true}
			for t := 0; t < n; t++ {
				m := int8(t % 2)
				seg.InputIDs = append(seg.InputIDs, int32(t+1))
				seg.LossMask = append(seg.LossMask, m)
				seg.Logprobs = append(seg.Logprobs, -0.5*float32(m))
				seg.TrainableTokens += int32(m)
			}
			seg.Tokens = int32(n)
			seg.ImageTokens = seg.Images * 64
			out.Segments = append(out.Segments, seg)
		}
	}
	channels := []string{"frontier", "frontier", "uniform", "vas", "adapr", "ics"}
	for it := 0; it < 3; it++ {
		for i, t := range out.Tasks {
			ema := r.float()
			pr := schemas.PassRate{TaskID: t.TaskID, Iteration: int32(it), Rollouts: 4, Successes: int32(r.intn(5)), InPool: true, Feasible: t.Feasible,
				EMA: f64(ema), Weight: f64(ema * (1 - ema) * 4)}
			pr.Observed = f64(float64(pr.Successes) / 4)
			if i == 11 { // never tried: NULL EMA
				pr.Rollouts, pr.Successes, pr.Observed, pr.EMA, pr.Weight = 0, 0, nil, nil, nil
			}
			out.PassRates = append(out.PassRates, pr)
		}
		for rank := 0; rank < 8; rank++ {
			out.Batches = append(out.Batches, schemas.Batch{Iteration: int32(it), Rank: int32(rank), TaskID: out.Tasks[(rank+it)%len(out.Tasks)].TaskID,
				Sampler: "frontier", Channel: channels[(rank+it)%len(channels)], Weight: r.float()})
		}
	}
	verdicts := []string{"success", "failure", "uncertain"}
	for _, tr := range out.Trajectories[:24] {
		exec := "failure"
		if tr.Outcome == schemas.OutcomeSuccess {
			exec = "success"
		}
		for si, s := range Strategies {
			v := schemas.Verification{TrajectoryID: tr.TrajectoryID, Strategy: s, TaskID: tr.TaskID, Domain: tr.Domain, Rounds: 1,
				Criteria: `[{"criterion":"file saved","status":"satisfied"}]`, ExecutableOutcome: exec}
			v.Verdict = exec
			if r.intn(4) == 0 {
				v.Verdict = verdicts[r.intn(3)]
			}
			if si > 0 && r.intn(2) == 0 {
				v.ProbeUsed, v.ProbeSteps, v.ProbeTokens, v.Rounds = true, int32(1+r.intn(4)), int32(200*si+r.intn(300)), 2
			}
			out.Verifications = append(out.Verifications, v)
		}
	}
	configs := []string{"builtin", "without-judger"}
	for ci, cfg := range configs {
		for c := 0; c < 6; c++ {
			id := fmt.Sprintf("%s-c%d", cfg, c)
			for round := int32(0); round < 3; round++ {
				exe := r.intn(4) != 0
				acc := exe && r.intn(2) == 0
				verdict := "accept"
				if ci == 1 {
					verdict = "skipped"
				} else if !acc {
					verdict = "reject"
				}
				out.Synthesis = append(out.Synthesis, schemas.Synthesis{CandidateID: id, Round: round, TaskID: "syn-" + id, Config: cfg,
					Origin: "knowledge/" + Domains[c%3] + ".md", Method: schemas.SourceSynthesized, Candidate: `{"instruction":"x"}`,
					RuleValid: exe || r.intn(2) == 0, JudgerVerdict: verdict, CheckerReachable: exe, CheckerJudgeCorrect: exe, Executable: exe,
					Fixes: "[]", Accepted: acc, Tokens: int64(1000 + r.intn(3000)), Calls: int32(3 + r.intn(3))})
				if acc {
					break
				}
				if round == 2 {
					last := &out.Synthesis[len(out.Synthesis)-1]
					last.Dropped = "max-rounds"
					if c == 5 {
						last.Dropped = "duplicate"
					}
				}
			}
		}
	}
	// Version 0 is the warm start (SFT), as the loop commits it.
	for s := int32(0); s < 5; s++ {
		out.TrainMetrics = append(out.TrainMetrics, schemas.TrainMetric{Version: 0, Step: s, Objective: "sft",
			Loss: 3 / float64(s+1), GradNorm: 1.1, Tokens: 800, Items: 32})
	}
	for v := int32(1); v <= 2; v++ {
		for s := int32(0); s < 5; s++ {
			out.TrainMetrics = append(out.TrainMetrics, schemas.TrainMetric{Version: v, Step: s, Objective: "grpo", Advantage: "grpo",
				Loss: 1 / float64(s+v), PolicyLoss: 0.5 / float64(s+v), KL: 1e-3 * float64(s), Entropy: 1.2, ClipFraction: 0.1, GradNorm: 0.9,
				Tokens: 1000, Items: 8, OldLogprobFrom: "rollout"})
		}
	}
	// Version 3 is an RFT round (the warm start's loss on verified successes).
	for s := int32(0); s < 5; s++ {
		out.TrainMetrics = append(out.TrainMetrics, schemas.TrainMetric{Version: 3, Step: s, Objective: "rft",
			Loss: 1.5 / float64(s+1), GradNorm: 1.0, Tokens: 700, Items: 16})
	}
	// The GRPO runs' groups: fresh ones at lag 0 and 1 (as the async loop
	// gives), a replay at lag 2, one dropped as stale.
	for v := int32(1); v <= 2; v++ {
		for g := int32(0); g < 4; g++ {
			lag := min(g, 1)
			tg := schemas.TrainGroup{Version: v, GroupID: fmt.Sprintf("g%d-%d", v, g), TaskID: fmt.Sprintf("task-%d", g), Iteration: v,
				Channel: schemas.TrainFresh, PolicyVersion: v - 1 - lag, Lag: lag, Rollouts: 4, Kept: true}
			switch g {
			case 2:
				tg.Channel, tg.Lag, tg.PolicyVersion = schemas.TrainReplay, 2, v-3
			case 3:
				tg.Lag, tg.PolicyVersion, tg.Kept = 4, v-5, false
			}
			out.TrainGroups = append(out.TrainGroups, tg)
		}
	}
	out.Audits = []schemas.Audit{
		{Kind: "overlap", Metric: "near_dup", Group: "all", Value: 0.1, Count: 1, Params: `{"kind":"overlap"}`, Breakdown: `{"pairs":[]}`},
		{Kind: "judges", Metric: "agreement", Group: "all", Value: 0.8, Count: 8, Params: `{"kind":"judges"}`, Breakdown: "{}"},
		{Kind: "verifier", Metric: "agreement", Group: "builtin/all", Value: 0.7, Count: 7, Params: `{"kind":"verifier"}`, Breakdown: "{}"},
		{Kind: "synthesis", Metric: "acceptance_rate", Group: "builtin/all", Value: 0.5, Count: 3, Params: `{"kind":"synthesis"}`, Breakdown: "{}"},
		{Kind: "health", Metric: "zero_variance_share", Group: "0", Value: 0.25, Count: 2, Params: `{"kind":"health"}`, Breakdown: "{}"},
	}
	return out
}

// Reach returns, from the fixture's rollouts (source 'rollout'), each
// task's first iteration with a verified success and the set of iterations
// that have rollouts: what the learning report's Reach chart and `cualake
// run`'s summary count, for their tests to count the same way.
func Reach() (first map[string]int32, passes map[int32]bool) {
	first, passes = map[string]int32{}, map[int32]bool{}
	for _, tr := range FixtureRows().Trajectories {
		if tr.Source != "rollout" {
			continue
		}
		passes[tr.Iteration] = true
		if it, ok := first[tr.TaskID]; tr.Outcome == schemas.OutcomeSuccess && (!ok || tr.Iteration < it) {
			first[tr.TaskID] = tr.Iteration
		}
	}
	return first, passes
}

// Commit writes rows as one snapshot of l (each non-empty table replaced)
// and returns its manifest.
func Commit(ctx context.Context, l *lake.Lake, rows Rows, stage string) (*lake.Manifest, error) {
	tx, err := l.Begin(ctx, "")
	if err != nil {
		return nil, err
	}
	steps := []error{
		replace(ctx, tx, schemas.Tasks, rows.Tasks),
		replace(ctx, tx, schemas.SynthesisRecords, rows.Synthesis),
		replace(ctx, tx, schemas.Trajectories, rows.Trajectories),
		replace(ctx, tx, schemas.Steps, rows.Steps),
		replace(ctx, tx, schemas.Segments, rows.Segments),
		replace(ctx, tx, schemas.PassRates, rows.PassRates),
		replace(ctx, tx, schemas.Batches, rows.Batches),
		replace(ctx, tx, schemas.Verifications, rows.Verifications),
		replace(ctx, tx, schemas.TrainMetrics, rows.TrainMetrics),
		replace(ctx, tx, schemas.TrainGroups, rows.TrainGroups),
		replace(ctx, tx, schemas.Audits, rows.Audits),
	}
	for _, err := range steps {
		if err != nil {
			return nil, fmt.Errorf("fixture: %w", err)
		}
	}
	return tx.Commit(ctx, lake.CommitInfo{Stage: stage, Params: map[string]string{"fixture": "notebooktest"}})
}

func replace[T any](ctx context.Context, tx *lake.Txn, def *schemas.Table[T], rows []T) error {
	if len(rows) == 0 {
		return nil
	}
	return lake.ReplaceTable(ctx, tx, def, append([]T(nil), rows...))
}

// Lake creates a fresh lake in a temp dir with the fixture committed, its
// clock pinned so manifests are reproducible.
func Lake(t testing.TB) (*lake.Lake, *lake.Manifest) {
	t.Helper()
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	l.Now = func() time.Time { return time.Unix(1_700_000_000, 0) }
	m, err := Commit(ctx, l, FixtureRows(), "fixture")
	if err != nil {
		t.Fatal(err)
	}
	return l, m
}
