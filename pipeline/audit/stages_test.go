package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/audit"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

func TestVerifierByHand(t *testing.T) {
	l := newLake(t)
	v := func(traj, strategy, domain, verdict, truth string, probeSteps, probeTokens int32) schemas.Verification {
		return schemas.Verification{TrajectoryID: traj, Strategy: strategy, Domain: domain, TaskID: "t", Criteria: "[]",
			Verdict: verdict, ExecutableOutcome: truth, ProbeUsed: probeSteps > 0, ProbeSteps: probeSteps, ProbeTokens: probeTokens}
	}
	rows := []schemas.Verification{
		// passive never probes: d1 right (+1), d2 FP (-0.7), d3 right (+1), d4 unresolved (-1), d5 has no
		// ground truth, so it is unresolved too (-1, VeriCUA table 9).
		v("d1", "passive", "x", "success", "success", 0, 0),
		v("d2", "passive", "x", "success", "failure", 0, 0),
		v("d3", "passive", "y", "failure", "failure", 0, 0),
		v("d4", "passive", "y", "uncertain", "success", 0, 0),
		v("d5", "passive", "y", "success", "", 0, 0),
		// builtin: d1 right after probing (+0.7), d2 right (+1), d3 FP after probing (-0.3), d4 right after probing (+0.7).
		v("d1", "builtin", "x", "success", "success", 2, 100),
		v("d2", "builtin", "x", "failure", "failure", 0, 0),
		v("d3", "builtin", "y", "success", "failure", 4, 300),
		v("d4", "builtin", "y", "success", "success", 1, 200),
		// trained: d1 right after probing (+0.7), d2 FP (-0.7), d3 right (+1), d4 FN (-0.7), d5 unresolved (-1).
		v("d1", "trained", "x", "success", "success", 1, 200),
		v("d2", "trained", "x", "success", "failure", 0, 0),
		v("d3", "trained", "y", "failure", "failure", 0, 0),
		v("d4", "trained", "y", "failure", "success", 0, 0),
		v("d5", "trained", "y", "success", "", 0, 0),
	}
	m := commit(t, l, func(ctx context.Context, tx *lake.Txn) error {
		return lake.ReplaceTable(ctx, tx, schemas.Verifications, rows)
	})
	res, err := audit.Verifier(context.Background(), audit.Input{Lake: l, Snapshot: m})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, res, audit.MetricN, "passive/all", 5, 5)
	expect(t, res, audit.MetricAgreement, "passive/all", 0.4, 2)
	expect(t, res, audit.MetricFP, "passive/all", 1, 1)
	expect(t, res, audit.MetricFN, "passive/all", 0, 0)
	expect(t, res, audit.MetricUnresolved, "passive/all", 2, 2)
	expect(t, res, audit.MetricProbeRate, "passive/all", 0, 0)
	expect(t, res, audit.MetricProbeTokensMean, "passive/all", 0, 0)
	expect(t, res, audit.MetricScheduleReward, "passive/all", (1-0.7+1-1-1)/5.0, 5)
	expect(t, res, audit.MetricNoGroundTruth, "passive/all", 1, 1)
	expect(t, res, audit.MetricAgreement, "passive/x", 0.5, 1)
	expect(t, res, audit.MetricAgreement, "passive/y", 1.0/3, 1)
	expect(t, res, audit.MetricUnresolved, "passive/y", 2, 2)
	expect(t, res, audit.MetricMacroAgreement, "passive/all", (0.5+1.0/3)/2, 2)

	expect(t, res, audit.MetricAgreement, "builtin/all", 0.75, 3)
	expect(t, res, audit.MetricFP, "builtin/all", 1, 1)
	expect(t, res, audit.MetricProbeRate, "builtin/all", 0.75, 3)
	expect(t, res, audit.MetricProbeStepsMean, "builtin/all", 7.0/4, 7)
	expect(t, res, audit.MetricProbeTokensMean, "builtin/all", 150, 600)
	expect(t, res, audit.MetricProbeTokens, "builtin/all", 600, 600)
	expect(t, res, audit.MetricScheduleReward, "builtin/all", (0.7+1-0.3+0.7)/4, 4)
	expect(t, res, audit.MetricAgreement, "builtin/x", 1, 2)
	expect(t, res, audit.MetricAgreement, "builtin/y", 0.5, 1)
	expect(t, res, audit.MetricProbeTokensMean, "builtin/y", 250, 500)
	expect(t, res, audit.MetricMacroAgreement, "builtin/all", 0.75, 2)
	absent(t, res, audit.MetricNoGroundTruth, "builtin/all")

	expect(t, res, audit.MetricAgreement, "trained/all", 0.4, 2)
	expect(t, res, audit.MetricFN, "trained/all", 1, 1)
	expect(t, res, audit.MetricFP, "trained/all", 1, 1)
	expect(t, res, audit.MetricProbeTokensMean, "trained/all", 40, 200)
	expect(t, res, audit.MetricScheduleReward, "trained/all", (0.7-0.7+1-0.7-1)/5, 5)

	// Pareto: passive (0.4, 0 tokens) and builtin (0.75, 150) are on the frontier;
	// trained (0.4, 40) is dominated by passive.
	expect(t, res, audit.MetricPareto, "passive/all", 1, 0)
	expect(t, res, audit.MetricPareto, "builtin/all", 1, 0)
	p := expect(t, res, audit.MetricPareto, "trained/all", 0, 1)
	var b struct {
		DominatedBy []string `json:"dominated_by"`
	}
	breakdown(t, p, &b)
	if fmt.Sprint(b.DominatedBy) != "[passive]" {
		t.Errorf("dominated by %v", b.DominatedBy)
	}
	var outcomes map[string]int
	breakdown(t, row(t, res, audit.MetricScheduleReward, "builtin/all"), &outcomes)
	if outcomes["correct"] != 1 || outcomes["correct_probe"] != 2 || outcomes["wrong_probe"] != 1 || outcomes["wrong"] != 0 {
		t.Errorf("schedule outcomes %v", outcomes)
	}
}

func TestSynthesisByHand(t *testing.T) {
	l := newLake(t)
	s := func(cand string, round int32, cfg string, exe, acc bool, calls int32, tokens int64) schemas.Synthesis {
		verdict := "accept"
		if cfg == "without-judger" {
			verdict = "skipped"
		}
		return schemas.Synthesis{CandidateID: cand, Round: round, TaskID: "x-" + cand, Config: cfg, Method: schemas.SourceSynthesized,
			Candidate: "{}", Fixes: "[]", RuleValid: true, JudgerVerdict: verdict, CheckerReachable: true,
			CheckerJudgeCorrect: exe, Executable: exe, Accepted: acc, Calls: calls, Tokens: tokens}
	}
	rows := []schemas.Synthesis{
		s("c1", 0, "builtin", false, false, 3, 100),
		s("c1", 1, "builtin", true, true, 2, 50),
		s("c2", 0, "builtin", true, true, 4, 200),
		s("c3", 0, "builtin", false, false, 1, 10),
		s("c3", 1, "builtin", false, false, 1, 10),
		s("d1", 0, "without-judger", false, false, 2, 40),
		s("d2", 0, "without-judger", false, false, 1, 10),
		s("d3", 0, "without-judger", true, false, 1, 10),
		s("e1", 0, "only-dups", false, false, 1, 10),
	}
	rows[0].JudgerVerdict = "reject"
	rows[3].RuleValid = false
	rows[3].CheckerReachable, rows[4].CheckerReachable = false, false
	rows[4].Dropped = "max-rounds"
	// d2 and e1 duplicate a task before the loop: never validated, left
	// out of both rates. d3 was validated (executable) and found to
	// duplicate an accepted task only at acceptance: it counts.
	for _, i := range []int{6, 8} {
		rows[i].Dropped, rows[i].RuleValid, rows[i].RuleReason = "duplicate", false, schemas.SynthesisNotValidated+"duplicate of c1"
	}
	rows[7].Dropped = "duplicate"
	m := commit(t, l, func(ctx context.Context, tx *lake.Txn) error {
		return lake.ReplaceTable(ctx, tx, schemas.SynthesisRecords, rows)
	})
	res, err := audit.Synthesis(context.Background(), audit.Input{Lake: l, Snapshot: m})
	if err != nil {
		t.Fatal(err)
	}
	// builtin: 3 candidates over 5 rows; executable rows c1/1, c2/0; accepted c1, c2;
	// calls 3+2+4+1+1 = 11, tokens 100+50+200+10+10 = 370.
	expect(t, res, audit.MetricCandidates, "builtin/all", 3, 3)
	expect(t, res, audit.MetricRows, "builtin/all", 5, 5)
	expect(t, res, audit.MetricExecutableRate, "builtin/all", 0.4, 2)
	acc := expect(t, res, audit.MetricAcceptanceRate, "builtin/all", 2.0/3, 2)
	expect(t, res, audit.MetricCallsPerAccepted, "builtin/all", 5.5, 11)
	expect(t, res, audit.MetricTokensPerAccepted, "builtin/all", 185, 370)
	var funnel struct {
		RuleInvalid        int            `json:"rule_invalid"`
		JudgerReject       int            `json:"judger_reject"`
		CheckerUnreachable int            `json:"checker_unreachable"`
		CheckerJudgeWrong  int            `json:"checker_judge_wrong"`
		Dropped            map[string]int `json:"dropped"`
	}
	breakdown(t, acc, &funnel)
	if funnel.RuleInvalid != 1 || funnel.JudgerReject != 1 || funnel.CheckerUnreachable != 2 || funnel.CheckerJudgeWrong != 3 || funnel.Dropped["max-rounds"] != 1 || len(funnel.Dropped) != 1 {
		t.Errorf("builtin funnel %+v", funnel)
	}
	// Round 0: c1, c2, c3; executable c2; accepted c2; calls 3+4+1 = 8, tokens 310.
	expect(t, res, audit.MetricRows, "builtin/round-0", 3, 3)
	expect(t, res, audit.MetricExecutableRate, "builtin/round-0", 1.0/3, 1)
	expect(t, res, audit.MetricAcceptanceRate, "builtin/round-0", 1.0/3, 1)
	expect(t, res, audit.MetricCallsPerAccepted, "builtin/round-0", 8, 8)
	expect(t, res, audit.MetricTokensPerAccepted, "builtin/round-0", 310, 310)
	// Round 1: c1, c3; executable and accepted c1; cumulative calls 11 over 2 accepted.
	expect(t, res, audit.MetricExecutableRate, "builtin/round-1", 0.5, 1)
	expect(t, res, audit.MetricAcceptanceRate, "builtin/round-1", 0.5, 1)
	expect(t, res, audit.MetricCallsPerAccepted, "builtin/round-1", 5.5, 11)
	// without-judger: d1 not executable, d3 executable (and dropped at
	// acceptance), d2 a duplicate before the loop (a candidate, but in
	// neither rate); nothing accepted: no cost per accepted task.
	expect(t, res, audit.MetricCandidates, "without-judger/all", 3, 3)
	expect(t, res, audit.MetricExecutableRate, "without-judger/all", 0.5, 1)
	expect(t, res, audit.MetricExecutableRate, "without-judger/round-0", 0.5, 1)
	expect(t, res, audit.MetricAcceptanceRate, "without-judger/all", 0, 0)
	absent(t, res, audit.MetricCallsPerAccepted, "without-judger/all")
	absent(t, res, audit.MetricCallsPerAccepted, "without-judger/round-0")
	// only-dups: no validated row, so no executable rate; the acceptance
	// rate is 0 over its one candidate and keeps the funnel.
	absent(t, res, audit.MetricExecutableRate, "only-dups/all")
	breakdown(t, expect(t, res, audit.MetricAcceptanceRate, "only-dups/all", 0, 0), &funnel)
	if funnel.Dropped["duplicate"] != 1 {
		t.Errorf("only-dups funnel %+v", funnel)
	}
	// all: 7 candidates (5 validated), 9 rows (7 validated), 3 executable,
	// 2 accepted, 16 calls, 440 tokens.
	expect(t, res, audit.MetricCandidates, "all", 7, 7)
	expect(t, res, audit.MetricExecutableRate, "all", 3.0/7, 3)
	expect(t, res, audit.MetricAcceptanceRate, "all", 0.4, 2)
	expect(t, res, audit.MetricCallsPerAccepted, "all", 8, 16)
	expect(t, res, audit.MetricTokensPerAccepted, "all", 220, 440)
	breakdown(t, row(t, res, audit.MetricAcceptanceRate, "all"), &funnel)
	if funnel.Dropped["duplicate"] != 3 || funnel.Dropped["max-rounds"] != 1 {
		t.Errorf("all funnel %+v", funnel)
	}
}

func f(v float64) *float64 { return &v }

func TestHealthByHand(t *testing.T) {
	l := newLake(t)
	tasks := []schemas.Task{}
	for _, id := range []string{"T1", "T2", "T3", "T4", "T5"} {
		tasks = append(tasks, schemas.Task{TaskID: id, Domain: "d", Setup: "[]", Judge: "{}", Source: schemas.SourceSeed})
	}
	n := 0
	tr := func(it int32, group, task string, outcome string, pv int32) schemas.Trajectory {
		n++
		reward := map[string]float64{schemas.OutcomeSuccess: 1, schemas.OutcomeFailure: 0, schemas.OutcomeIncomplete: -0.2}[outcome]
		return schemas.Trajectory{TrajectoryID: fmt.Sprintf("r%02d", n), TaskID: task, GroupID: group, Iteration: it, PolicyVersion: pv, Reward: reward, Outcome: outcome}
	}
	S, F, I := schemas.OutcomeSuccess, schemas.OutcomeFailure, schemas.OutcomeIncomplete
	trajs := []schemas.Trajectory{
		tr(0, "g0a", "T1", S, 0), tr(0, "g0a", "T1", S, 0), // flat, all succeeded
		tr(0, "g0b", "T2", S, 0), tr(0, "g0b", "T2", F, 0),
		tr(1, "g1a", "T1", S, 4), tr(1, "g1a", "T1", F, 4), tr(1, "g1a", "T1", F, 4), tr(1, "g1a", "T1", F, 0), // the last is stale (4 - 0 > 3)
		tr(1, "g1b", "T3", F, 4), tr(1, "g1b", "T3", F, 4), // flat, none succeeded
		tr(1, "g1c", "T2", I, 4), tr(1, "g1c", "T2", F, 4), // -0.2 and 0: not flat
	}
	pr := func(task string, it int32, ema *float64) schemas.PassRate {
		return schemas.PassRate{TaskID: task, Iteration: it, EMA: ema}
	}
	rates := []schemas.PassRate{
		pr("T1", 0, f(0.5)), pr("T2", 0, f(0.05)), pr("T3", 0, f(0.95)), pr("T4", 0, f(0.35)), pr("T5", 0, nil),
		pr("T1", 1, f(0.95)), pr("T2", 1, f(0.25)), pr("T3", 1, f(0.5)), pr("T4", 1, f(0.05)), pr("T5", 1, nil),
	}
	batches := []schemas.Batch{
		{Iteration: 0, Rank: 0, TaskID: "T1", Channel: "frontier"}, {Iteration: 0, Rank: 1, TaskID: "T2", Channel: "uniform"},
		{Iteration: 1, Rank: 0, TaskID: "T1", Channel: "frontier"}, {Iteration: 1, Rank: 1, TaskID: "T3", Channel: "frontier"},
	}
	m := commit(t, l, func(ctx context.Context, tx *lake.Txn) error {
		for _, err := range []error{lake.ReplaceTable(ctx, tx, schemas.Tasks, tasks), lake.ReplaceTable(ctx, tx, schemas.Trajectories, trajs),
			lake.ReplaceTable(ctx, tx, schemas.PassRates, rates), lake.ReplaceTable(ctx, tx, schemas.Batches, batches)} {
			if err != nil {
				return err
			}
		}
		return nil
	})
	res, err := audit.Health(context.Background(), audit.Input{Lake: l, Snapshot: m}, audit.DefaultHealth)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, res, audit.MetricGroups, "0", 2, 2)
	zv := expect(t, res, audit.MetricZeroVariance, "0", 0.5, 1)
	var zb map[string]int
	breakdown(t, zv, &zb)
	if zb["all_success"] != 1 || zb["all_failure"] != 0 || zb["wasted_rollouts"] != 2 {
		t.Errorf("iteration 0 zero-variance breakdown %v", zb)
	}
	expect(t, res, audit.MetricWastedRollouts, "0", 0.5, 2)
	expect(t, res, audit.MetricZeroVariance, "1", 1.0/3, 1)
	expect(t, res, audit.MetricWastedRollouts, "1", 0.25, 2)
	expect(t, res, audit.MetricZeroVariance, "all", 0.4, 2)
	expect(t, res, audit.MetricWastedRollouts, "all", 4.0/12, 4)

	expect(t, res, audit.MetricFrontierSize, "0", 2, 2) // T1 0.5, T4 0.35
	expect(t, res, audit.MetricFrontierSize, "1", 2, 2) // T2 0.25, T3 0.5
	expect(t, res, audit.MetricTasksWithEMA, "0", 4, 4)
	h := expect(t, res, audit.MetricEMAHistogram, "0", 4, 4)
	var hb struct {
		Bins []struct {
			Lo, Hi float64
			N      int
		} `json:"bins"`
	}
	breakdown(t, h, &hb)
	counts := []int{}
	for _, b := range hb.Bins {
		counts = append(counts, b.N)
	}
	if fmt.Sprint(counts) != "[1 0 0 1 0 1 0 0 0 1]" || hb.Bins[3].Lo != 0.3 {
		t.Errorf("iteration 0 histogram %v", hb.Bins)
	}
	breakdown(t, row(t, res, audit.MetricEMAHistogram, "1"), &hb)
	counts = counts[:0]
	for _, b := range hb.Bins {
		counts = append(counts, b.N)
	}
	if fmt.Sprint(counts) != "[1 0 1 0 0 1 0 0 0 1]" {
		t.Errorf("iteration 1 histogram %v", counts)
	}

	expect(t, res, audit.MetricNeverSampled, "0", 3, 3) // T3, T4, T5
	expect(t, res, audit.MetricNeverSampled, "1", 2, 2) // T4, T5
	ns := expect(t, res, audit.MetricNeverSampled, "all", 2, 2)
	if !strings.Contains(ns.Breakdown, `"tasks":["T4","T5"]`) {
		t.Errorf("never sampled %s", ns.Breakdown)
	}
	expect(t, res, audit.MetricStaleDropped, "0", 0, 0)
	expect(t, res, audit.MetricStaleDropped, "1", 0.125, 1)
	expect(t, res, audit.MetricStaleDropped, "all", 1.0/12, 1)

	// pass@k, iteration 0: T1 n=2 c=2, T2 n=2 c=1. pass@1 = (1 + 0.5)/2; pass@2 = (1 + (1 - C(1,2)/C(2,2)))/2 = 1.
	expect(t, res, "pass@1", "0", 0.75, 2)
	expect(t, res, "pass@2", "0", 1, 2)
	absent(t, res, "pass@4", "0")
	// iteration 1: T1 n=4 c=1, T2 n=2 c=0, T3 n=2 c=0.
	// T1: pass@1 = 1/4, pass@2 = 1 - C(3,2)/C(4,2) = 1/2, pass@4 = 1 - C(3,4)/C(4,4) = 1.
	expect(t, res, "pass@1", "1", 0.25/3, 3)
	expect(t, res, "pass@2", "1", 0.5/3, 3)
	expect(t, res, "pass@4", "1", 1, 1)
	absent(t, res, "pass@8", "1")

	expect(t, res, audit.MetricFilteredOut, "0", 0, 0)
	fo := expect(t, res, audit.MetricFilteredOut, "1", 2, 2) // T1 0.5 -> 0.95 (too easy), T4 0.35 -> 0.05 (too hard)
	var fb struct {
		Easy  int `json:"too_easy"`
		Hard  int `json:"too_hard"`
		Tasks []struct {
			Task     string
			From, To float64
		} `json:"tasks"`
	}
	breakdown(t, fo, &fb)
	if fb.Easy != 1 || fb.Hard != 1 || len(fb.Tasks) != 2 || fb.Tasks[0].Task != "T1" || fb.Tasks[1].To != 0.05 {
		t.Errorf("filtering breakdown %+v", fb)
	}
}

func TestPassAtK(t *testing.T) {
	for _, c := range []struct {
		n, c, k int
		want    float64
	}{{4, 1, 1, 0.25}, {4, 1, 2, 0.5}, {8, 0, 4, 0}, {8, 8, 8, 1}, {5, 2, 3, 1 - 1.0/10}, {10, 3, 2, 1 - 21.0/45}} {
		if got := audit.PassAtK(c.n, c.c, c.k); got < c.want-1e-12 || got > c.want+1e-12 {
			t.Errorf("PassAtK(%d, %d, %d) = %v, want %v", c.n, c.c, c.k, got, c.want)
		}
	}
}

// Commit keeps other kinds' rows, replaces this kind's, and is
// deterministic: the same audit on the same parent is the same snapshot.
func TestCommitReplacesOnlyItsKind(t *testing.T) {
	ctx := context.Background()
	l := newLake(t)
	old := []schemas.Audit{
		{Kind: "overlap", Metric: "near_dup", Group: "all", Value: 0.1, Params: "{}"},
		{Kind: "overlap", Metric: "judge_reuse", Group: "all", Value: 0.2, Params: "{}"},
		{Kind: "health", Metric: "stale", Group: "0", Value: 9, Params: "{}"},
	}
	parent := commit(t, l, func(ctx context.Context, tx *lake.Txn) error { return lake.ReplaceTable(ctx, tx, schemas.Audits, old) })
	res, err := audit.Health(ctx, audit.Input{Lake: l, Snapshot: parent}, audit.DefaultHealth)
	if err != nil {
		t.Fatal(err)
	}
	m, err := audit.Commit(ctx, l, parent.ID, res)
	if err != nil {
		t.Fatal(err)
	}
	if m.Stage != "audit" || m.Parent != parent.ID || len(m.Inputs) != 1 || m.Inputs[0] != parent.ID {
		t.Fatalf("manifest stage %q parent %q inputs %v", m.Stage, m.Parent, m.Inputs)
	}
	var params map[string]any
	json.Unmarshal(m.Params, &params)
	if params["kind"] != "health" || params["p_min"] != 0.1 {
		t.Fatalf("commit params %s", m.Params)
	}
	got, err := lake.ReadTable(ctx, l, m, schemas.Audits)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, r := range got {
		kinds[r.Kind]++
		if r.Kind == "health" && r.Metric == "stale" {
			t.Fatal("the old health row survived")
		}
	}
	if kinds["overlap"] != 2 || kinds["health"] != len(res.Rows) {
		t.Fatalf("audits after commit: %v (health rows %d)", kinds, len(res.Rows))
	}
	again, err := audit.Commit(ctx, l, parent.ID, res)
	if err != nil || again.ID != m.ID {
		t.Fatalf("re-running the same audit made a new snapshot: %v %v", again, err)
	}
	rep, err := audit.Report(ctx, l, m, audit.KindHealth)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Snapshot != m.ID || len(rep.Lineage) != 2 {
		t.Fatalf("report of %s with lineage %d", rep.Snapshot, len(rep.Lineage))
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
}
