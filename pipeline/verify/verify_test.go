package verify

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/schemas"
)

func TestRewardSchedule(t *testing.T) {
	// VeriCUA table 9, exactly.
	cases := []struct {
		verdict, outcome string
		probe            bool
		want             float64
	}{
		{Success, Success, false, 1.0}, {Failure, Failure, false, 1.0},
		{Success, Success, true, 0.7}, {Failure, Failure, true, 0.7},
		{Success, Failure, false, -0.7}, {Failure, Success, false, -0.7},
		{Success, Failure, true, -0.3}, {Failure, Success, true, -0.3},
		{Uncertain, Success, false, -1.0}, {Uncertain, Failure, true, -1.0}, {"", Success, false, -1.0}, {"garbage", Failure, true, -1.0},
		// No executable outcome (the evaluator returned nothing): unresolved.
		{Success, "", false, -1.0}, {Failure, "", true, -1.0}, {Uncertain, "", false, -1.0}, {Success, Uncertain, false, -1.0},
	}
	for _, c := range cases {
		if got := Reward(c.verdict, c.outcome, c.probe); got != c.want {
			t.Errorf("Reward(%q, %q, probe=%v) = %v, want %v", c.verdict, c.outcome, c.probe, got, c.want)
		}
	}
}

func TestExecutableOutcome(t *testing.T) {
	cases := []struct {
		traj schemas.Trajectory
		want string
	}{
		{schemas.Trajectory{Outcome: schemas.OutcomeSuccess, JudgeDetail: `{"score":1}`}, Success},
		{schemas.Trajectory{Outcome: schemas.OutcomeIncomplete, JudgeDetail: `{"score":1,"conj":"and"}`}, Success},
		{schemas.Trajectory{Outcome: schemas.OutcomeIncomplete, JudgeDetail: `{"score":0}`}, Failure},
		{schemas.Trajectory{Outcome: schemas.OutcomeFailure}, Failure},
		{schemas.Trajectory{Outcome: schemas.OutcomeSuccess}, Success},
		{schemas.Trajectory{Outcome: schemas.OutcomeIncomplete}, ""},
		{schemas.Trajectory{Outcome: schemas.OutcomeError, JudgeDetail: `{"score":1}`}, ""},
		{schemas.Trajectory{Outcome: schemas.OutcomeReportedInfeasible, Reward: 1}, Success},
	}
	for _, c := range cases {
		if got := ExecutableOutcome(c.traj); got != c.want {
			t.Errorf("ExecutableOutcome(%s, %q) = %q, want %q", c.traj.Outcome, c.traj.JudgeDetail, got, c.want)
		}
	}
	if Overall([]string{Success, Success}) != Success || Overall([]string{Success, Uncertain, Failure}) != Failure ||
		Overall([]string{Success, Uncertain}) != Uncertain || Overall(nil) != Uncertain {
		t.Error("overall status rule")
	}
}

func TestWriteCriteriaCoversThePool(t *testing.T) {
	// Every feasible built-in task gets concrete criteria (each naming where
	// its evidence is), at most MaxCriteria; infeasible ones get none and
	// fall back to the claim criterion.
	for _, tk := range simdesk.Pool() {
		cs := WriteCriteria(tk.Instruction)
		if tk.Feasible && len(cs) == 0 {
			t.Errorf("%s: no criteria from %q", tk.TaskID, tk.Instruction)
		}
		if !tk.Feasible && len(cs) != 0 {
			t.Errorf("%s (infeasible): criteria %v", tk.TaskID, cs)
		}
		if len(cs) > MaxCriteria {
			t.Errorf("%s: %d criteria", tk.TaskID, len(cs))
		}
		for _, c := range cs {
			if c.Status != Uncertain || c.Check == nil || c.Check.Where == "" || c.Text == "" {
				t.Errorf("%s: criterion %+v", tk.TaskID, c)
			}
		}
	}
	got := WriteCriteria("Change these settings: Network proxy to Manual; Network proxy host to proxy.corp.example; Network proxy port to 8080.")
	var keys []string
	for _, c := range got {
		keys = append(keys, c.Check.Key+"="+c.Check.Want)
	}
	if strings.Join(keys, ",") != "network.proxy_mode=Manual,network.proxy_host=proxy.corp.example,network.proxy_port=8080" {
		t.Errorf("settings list: %v", keys)
	}
	if got := WriteCriteria(`In Settings > Display, set "Scale" to 125%.`); len(got) != 1 || got[0].Check.Want != "125%" {
		t.Errorf("choice with a percent sign: %+v", got)
	}
}

func TestBudgetLimits(t *testing.T) {
	ctx := context.Background()
	ins, err := BenchInputs(ctx, every(simdesk.Pool(), 2, 1), 21, 0, 4, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, budget := range []struct{ rounds, steps int }{{2, 15}, {1, 3}, {2, 1}, {0, 15}} {
		s := Builtin()
		s.MaxRounds, s.StepsPerRound = budget.rounds, budget.steps
		rows, err := Evaluate(ctx, ins, []*Strategy{s}, 4)
		if err != nil {
			t.Fatal(err)
		}
		probed := 0
		for _, r := range rows {
			if int(r.Rounds) > budget.rounds+1 || int(r.ProbeSteps) > budget.rounds*budget.steps {
				t.Errorf("K=%d steps=%d: %s took %d rounds and %d probe steps", budget.rounds, budget.steps, r.TrajectoryID, r.Rounds, r.ProbeSteps)
			}
			if r.ProbeUsed {
				probed++
			}
			var cs []Criterion
			if err := json.Unmarshal([]byte(r.Criteria), &cs); err != nil || len(cs) == 0 {
				t.Errorf("%s: criteria %q: %v", r.TrajectoryID, r.Criteria, err)
			}
		}
		if budget.rounds == 0 && probed != 0 {
			t.Errorf("K=0 probed %d times", probed)
		}
		if budget.rounds > 0 && probed == 0 {
			t.Errorf("K=%d never probed", budget.rounds)
		}
	}
	// Without a saved final state there is nothing to probe.
	in := *ins[0]
	in.FinalState = nil
	att, err := NewRunner(Builtin(), nil, false).Run(ctx, &in)
	if err != nil || att.ProbeUsed {
		t.Fatalf("no state: probe %v, %v", att.ProbeUsed, err)
	}
}

func TestWindowBoundsWhatTheJudgeSees(t *testing.T) {
	ctx := context.Background()
	ins, err := BenchInputs(ctx, simdesk.Pool()[:10], 3, 0, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range ins {
		if len(in.Screens) > DefaultWindow || len(in.Screens) == 0 || in.FinalState == nil || in.Outcome == "" {
			t.Errorf("%s: %d screens, state %d bytes, outcome %q", in.TrajectoryID, len(in.Screens), len(in.FinalState), in.Outcome)
		}
		if len(in.History) != len(in.Actions) || !strings.HasPrefix(in.History[0], "1. ") {
			t.Errorf("%s: history %q", in.TrajectoryID, in.History)
		}
	}
}
