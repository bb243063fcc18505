package sample

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/cualake/cualake/schemas"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		reward  float64
		outcome string
		want    Outcome
	}{
		{1, schemas.OutcomeSuccess, Solved},
		{0.5, schemas.OutcomeSuccess, Solved}, // partial judge credit still counts
		{0, schemas.OutcomeSuccess, Failed},
		{1, schemas.OutcomeReportedInfeasible, Solved}, // a correct infeasibility report
		{0, schemas.OutcomeReportedInfeasible, Failed}, // a wrong one
		{0, schemas.OutcomeFailure, Failed},
		{-0.2, schemas.OutcomeIncomplete, Failed},
		{0, schemas.OutcomeError, Uncounted},
	}
	for _, c := range cases {
		tr := traj("t1", "a", "g", 0, c.reward, c.outcome)
		got, err := Classify(&tr)
		if err != nil || got != c.want {
			t.Errorf("Classify(%v, %s) = %v, %v; want %v", c.reward, c.outcome, got, err, c.want)
		}
	}
	for _, bad := range []float64{math.NaN(), 1.5, -1.01, math.Inf(1)} {
		tr := traj("traj-bad", "task-x", "g", 0, bad, schemas.OutcomeSuccess)
		_, err := Classify(&tr)
		if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "traj-bad") {
			t.Errorf("reward %v: err %v, want ErrBadInput naming the trajectory", bad, err)
		}
	}
	tr := traj("traj-odd", "a", "g", 0, 0, "won")
	if _, err := Classify(&tr); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "traj-odd") {
		t.Errorf("unknown outcome: err %v", err)
	}
}

func TestUpdateEMAHandComputed(t *testing.T) {
	inf := row("f-infeasible", -1)
	inf.Feasible = false
	prev := []schemas.PassRate{
		row("a", 0.5), row("b", -1), row("c", 0.3), row("d", -1), row("e", -1), inf,
	}
	var rollouts []schemas.Trajectory
	rollouts = append(rollouts, group("a", 4, 8, 6)...) // 0.75
	rollouts = append(rollouts, group("b", 4, 4, 1)...) // 0.25, first observation
	rollouts = append(rollouts, group("e", 4, 8, 8)...) // 1.0, first observation: leaves the pool
	rollouts = append(rollouts, group("f-infeasible", 4, 4, 4)...)
	errEp := traj("err-ep", "a", "a/it4", 4, 0, schemas.OutcomeError) // not counted
	rollouts = append(rollouts, errEp)

	out, err := UpdateEMA(prev, rollouts, 4, DefaultEMA())
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(prev) {
		t.Fatalf("got %d rows, want one per task (%d)", len(out), len(prev))
	}
	by := map[string]schemas.PassRate{}
	for _, r := range out {
		by[r.TaskID] = r
		if r.Iteration != 4 || r.Weight != nil {
			t.Errorf("%s: iteration %d weight %v", r.TaskID, r.Iteration, r.Weight)
		}
		if err := schemas.PassRates.Validate(&r); err != nil {
			t.Errorf("%s fails the pass_rates validator: %v", r.TaskID, err)
		}
	}
	a := by["a"]
	if a.Rollouts != 8 || a.Successes != 6 {
		t.Errorf("a: %d/%d, want 6/8 (the error episode is not counted)", a.Successes, a.Rollouts)
	}
	near(t, "a observed", *a.Observed, 0.75)
	near(t, "a ema", *a.EMA, 0.8*0.5+0.2*0.75) // 0.55
	b := by["b"]
	near(t, "b ema (first observation initialises)", *b.EMA, 0.25)
	if !b.InPool {
		t.Error("b (0.25 in [0.1, 0.9]) left the pool")
	}
	c := by["c"]
	if c.Observed != nil || c.Rollouts != 0 {
		t.Errorf("c was not tried, observed %v", c.Observed)
	}
	near(t, "c ema carried", *c.EMA, 0.3)
	if d := by["d"]; d.EMA != nil || d.Observed != nil || !d.InPool {
		t.Errorf("d never tried: ema %v observed %v in_pool %v; want nil, nil, true", d.EMA, d.Observed, d.InPool)
	}
	if e := by["e"]; e.InPool {
		t.Error("e (initial rate 1.0) stayed in the pool")
	}
	if f := by["f-infeasible"]; !f.InPool {
		t.Error("an infeasible task was filtered out of the pool")
	}
	if !slices.IsSortedFunc(out, func(x, y schemas.PassRate) int { return strings.Compare(x.TaskID, y.TaskID) }) {
		t.Error("rows not sorted by task id")
	}
	// A later iteration keeps e out of the pool whatever it observes.
	again, err := UpdateEMA(out, group("e", 5, 8, 4), 5, DefaultEMA())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range again {
		if r.TaskID == "e" {
			near(t, "e ema at 5", *r.EMA, 0.8*1+0.2*0.5)
			if r.InPool {
				t.Error("e re-entered the pool after the initial filter")
			}
		}
	}
}

func TestUpdateEMAEvoCUABeta(t *testing.T) {
	p := EvoCUAEMA()
	near(t, "alpha from beta 0.7", p.Alpha, 0.3)
	out, err := UpdateEMA([]schemas.PassRate{row("a", 0.5)}, group("a", 1, 8, 8), 1, p)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "beta P + (1 - beta) obs", *out[0].EMA, 0.7*0.5+0.3*1.0) // 0.65
}

func TestUpdateEMAErrors(t *testing.T) {
	prev := []schemas.PassRate{row("a", 0.5)}
	cases := []struct {
		name     string
		prev     []schemas.PassRate
		rollouts []schemas.Trajectory
		p        EMAParams
		want     error
		mention  string
	}{
		{"nan reward", prev, []schemas.Trajectory{traj("tr-nan", "a", "g", 1, math.NaN(), schemas.OutcomeFailure)}, DefaultEMA(), ErrBadInput, "tr-nan"},
		{"reward above 1", prev, []schemas.Trajectory{traj("tr-big", "a", "g", 1, 2, schemas.OutcomeSuccess)}, DefaultEMA(), ErrBadInput, "tr-big"},
		{"unknown task", prev, []schemas.Trajectory{traj("tr-x", "zzz", "g", 1, 1, schemas.OutcomeSuccess)}, DefaultEMA(), ErrBadInput, "zzz"},
		{"other iteration", prev, []schemas.Trajectory{traj("tr-old", "a", "g", 0, 1, schemas.OutcomeSuccess)}, DefaultEMA(), ErrBadInput, "tr-old"},
		{"duplicate task", []schemas.PassRate{row("a", 0.5), row("a", 0.2)}, nil, DefaultEMA(), ErrBadInput, `"a"`},
		{"stored ema", []schemas.PassRate{row("a", 1.5)}, nil, DefaultEMA(), ErrBadInput, `"a"`},
		{"alpha 0", prev, nil, EMAParams{Alpha: 0, PMax: 1}, ErrBadParams, "alpha"},
		{"alpha nan", prev, nil, EMAParams{Alpha: math.NaN(), PMax: 1}, ErrBadParams, "alpha"},
		{"bounds", prev, nil, EMAParams{Alpha: 0.2, PMin: 0.9, PMax: 0.1}, ErrBadParams, "bounds"},
	}
	for _, c := range cases {
		_, err := UpdateEMA(c.prev, c.rollouts, 1, c.p)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.mention) {
			t.Errorf("%s: err %v, want %v mentioning %s", c.name, err, c.want, c.mention)
		}
	}
}

func TestUpdateEMAOrderIndependent(t *testing.T) {
	prev := synthPool(50, 0.3, 1)
	var rollouts []schemas.Trajectory
	for i := 0; i < 50; i += 3 {
		rollouts = append(rollouts, group(prev[i].TaskID, 2, 8, i%9)...)
	}
	a, err := UpdateEMA(prev, rollouts, 2, DefaultEMA())
	if err != nil {
		t.Fatal(err)
	}
	rev := slices.Clone(prev)
	slices.Reverse(rev)
	slices.Reverse(rollouts)
	b, err := UpdateEMA(rev, rollouts, 2, DefaultEMA())
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if a[i].TaskID != b[i].TaskID || (a[i].EMA == nil) != (b[i].EMA == nil) || (a[i].EMA != nil && *a[i].EMA != *b[i].EMA) {
			t.Fatalf("row %d differs with the input order: %+v vs %+v", i, a[i], b[i])
		}
	}
	// The previous rows are not modified.
	if prev[0].Iteration != 0 {
		t.Error("UpdateEMA modified its input")
	}
}

func TestLatestAndInitialRates(t *testing.T) {
	h := []schemas.PassRate{
		{TaskID: "a", Iteration: 0, Observed: f64(0.25), EMA: f64(0.25), InPool: true},
		{TaskID: "a", Iteration: 2, EMA: f64(0.4), InPool: true},
		{TaskID: "a", Iteration: 1, Observed: f64(0.5), EMA: f64(0.3), InPool: true},
		{TaskID: "b", Iteration: 1, Observed: f64(1), EMA: f64(1)},
	}
	tasks := []schemas.Task{{TaskID: "c", Feasible: false}, {TaskID: "a"}}
	got, err := Latest(h, tasks)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].TaskID != "a" || got[0].Iteration != 2 || got[1].TaskID != "b" || got[2].TaskID != "c" {
		t.Fatalf("Latest = %+v", got)
	}
	if got[2].EMA != nil || !got[2].InPool || got[2].Feasible {
		t.Errorf("new task row %+v, want untried, in pool, infeasible", got[2])
	}
	init := InitialRates(h)
	if init["a"] != 0.25 || init["b"] != 1 || len(init) != 2 {
		t.Errorf("InitialRates = %v", init)
	}
	if _, err := Latest(append(h, h[0]), nil); !errors.Is(err, ErrBadInput) {
		t.Errorf("duplicate history row: err %v", err)
	}
	pool, err := NewPool([]schemas.Task{{TaskID: "z"}, {TaskID: "y", Feasible: true}}, 0)
	if err != nil || len(pool) != 2 || pool[0].TaskID != "y" || !pool[0].InPool || pool[0].EMA != nil {
		t.Errorf("NewPool = %+v, %v", pool, err)
	}
	if _, err := NewPool([]schemas.Task{{TaskID: "z"}, {TaskID: "z"}}, 0); !errors.Is(err, ErrBadInput) {
		t.Errorf("NewPool duplicate: err %v", err)
	}
}

func TestGroupOutcomes(t *testing.T) {
	trs := append(group("a", 1, 4, 0), group("b", 1, 4, 2)...)
	trs = append(trs, traj("inc", "c", "c/1", 1, -0.2, schemas.OutcomeIncomplete), traj("inc2", "c", "c/1", 1, 0, schemas.OutcomeFailure))
	gs, err := GroupOutcomes(trs)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 3 || gs[0].GroupID != "a/it1" || !gs[0].RewardsEqual || gs[1].Successes != 2 || gs[1].RewardsEqual || gs[2].RewardsEqual {
		t.Fatalf("GroupOutcomes = %+v", gs)
	}
	bad := append(group("a", 1, 2, 1), traj("x", "b", "a/it1", 1, 1, schemas.OutcomeSuccess))
	if _, err := GroupOutcomes(bad); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("mixed group: err %v", err)
	}
}

func TestInPool(t *testing.T) {
	for _, c := range []struct {
		p    float64
		want bool
	}{{0.1, true}, {0.9, true}, {0.05, false}, {0.95, false}, {0.5, true}} {
		if InPool(c.p, DefaultPMin, DefaultPMax) != c.want {
			t.Errorf("InPool(%v) != %v", c.p, c.want)
		}
	}
}

func TestResolveEMAPerSampler(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	cases := []struct {
		sampler     string
		alpha, beta *float64
		want        float64
		rule        string
	}{
		{NameDTAC, nil, nil, 0.3, RuleBeta}, // EvoCUA-1.5 eq. 16, beta 0.7
		{NameFrontier, nil, nil, 0.2, RuleAlpha},
		{NameUniform, nil, nil, 0.2, RuleAlpha},
		{NameDTAC, nil, f(0.9), 0.1, RuleBeta},
		{NameDTAC, f(0.2), nil, 0.2, RuleAlpha}, // an explicit alpha wins over the sampler's default
		{NameFrontier, nil, f(0.7), 0.3, RuleBeta},
	}
	for _, c := range cases {
		p, err := ResolveEMA(c.sampler, c.alpha, c.beta, 0.1, 0.9)
		if err != nil {
			t.Fatalf("%s: %v", c.sampler, err)
		}
		near(t, c.sampler+" alpha", p.Alpha, c.want)
		if p.Rule != c.rule || (c.rule == RuleBeta && math.Abs(p.Beta-(1-c.want)) > 1e-12) {
			t.Fatalf("%s: rule %q beta %v, want %q", c.sampler, p.Rule, p.Beta, c.rule)
		}
	}
	if _, err := ResolveEMA(NameDTAC, f(0.2), f(0.7), 0.1, 0.9); !errors.Is(err, ErrBadParams) {
		t.Fatalf("alpha and beta together: %v", err)
	}
	if _, err := ResolveEMA(NameDTAC, nil, f(1), 0.1, 0.9); !errors.Is(err, ErrBadParams) || !strings.Contains(err.Error(), "beta") {
		t.Fatalf("beta 1 (alpha 0): %v", err)
	}
	// The two rules fold the same observation differently.
	prev := []schemas.PassRate{{TaskID: "a", InPool: true, Feasible: true, EMA: f(0.5)}}
	obs := []schemas.Trajectory{{TrajectoryID: "a-1", TaskID: "a", GroupID: "g", Iteration: 1, Outcome: schemas.OutcomeSuccess, Reward: 1}}
	for _, s := range []string{NameDTAC, NameFrontier} {
		p, _ := ResolveEMA(s, nil, nil, 0.1, 0.9)
		rows, err := UpdateEMA(prev, obs, 1, p)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]float64{NameDTAC: 0.7*0.5 + 0.3, NameFrontier: 0.8*0.5 + 0.2}[s]
		near(t, s+" ema", *rows[0].EMA, want)
	}
}

// Recalibration rollouts of filtered-out tasks bring back those whose new
// rate lies in [p_min, p_max]; the others stay out, and OutOfPool names
// exactly the tasks to recalibrate.
func TestRecalibrationReentry(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tasks := []schemas.Task{{TaskID: "a", Feasible: true}, {TaskID: "b", Feasible: true}, {TaskID: "c", Feasible: true}, {TaskID: "d", Feasible: true}}
	history := []schemas.PassRate{
		{TaskID: "a", Iteration: 0, EMA: f(0.5), InPool: true, Feasible: true},
		{TaskID: "b", Iteration: 0, EMA: f(0), InPool: false, Feasible: true},
		{TaskID: "c", Iteration: 0, EMA: f(1), InPool: false, Feasible: true},
		{TaskID: "d", Iteration: 0, EMA: f(0.4), InPool: true, Feasible: true},
	}
	state, err := Latest(history, tasks)
	if err != nil {
		t.Fatal(err)
	}
	if got := OutOfPool(state); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("out of pool: %v", got)
	}
	group := func(task, source string, rewards ...float64) []schemas.Trajectory {
		var out []schemas.Trajectory
		for i, r := range rewards {
			o := schemas.OutcomeFailure
			if r > 0 {
				o = schemas.OutcomeSuccess
			}
			out = append(out, schemas.Trajectory{TrajectoryID: task + string(rune('0'+i)), TaskID: task, GroupID: task + "/1", Iteration: 1,
				Outcome: o, Reward: r, Source: source})
		}
		return out
	}
	in := StageInput{Tasks: tasks, History: history, PolicyVersion: -1,
		Trajectories: group("a", "rollout", 1, 0),
		Calibration:  append(group("b", SourceCalibration, 1, 0, 0, 0), group("c", SourceCalibration, 1, 1, 1, 1)...)}
	p := DefaultStageParams()
	p.Sampler, p.BatchSize = NameUniform, 1
	out, err := RunStage(in, p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.Reentered, []string{"b"}) {
		t.Fatalf("re-entered %v, want [b] (0.25 in [0.1, 0.9]; c's 1.0 is not)", out.Reentered)
	}
	pool := map[string]bool{}
	for _, r := range out.PassRates {
		pool[r.TaskID] = r.InPool
		if r.TaskID == "b" && (r.Rollouts != 4 || *r.Observed != 0.25) {
			t.Fatalf("b's row %+v", r)
		}
	}
	if !pool["a"] || !pool["b"] || pool["c"] || !pool["d"] {
		t.Fatalf("in_pool after recalibration: %v", pool)
	}
}
