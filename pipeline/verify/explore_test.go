package verify

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/cualake/cualake/pipeline/rollout"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/schemas"
)

func TestExplore(t *testing.T) {
	if os.Getenv("VERIFY_EXPLORE") == "" {
		t.Skip()
	}
	ctx := context.Background()
	ins, err := BenchInputs(ctx, simdesk.Pool(), 1, 0, 8, true)
	if err != nil {
		t.Fatal(err)
	}
	var rows []schemas.Verification
	v := &Verifier{Runners: []*Runner{NewRunner(Passive(), nil, false), NewRunner(Builtin(), nil, false)}}
	modes := map[string]int{}
	type modeStat struct{ n, succ, pAgree, bAgree, probed, steps int }
	stats := map[string]*modeStat{}
	for _, in := range ins {
		r, _, err := v.VerifyInput(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r...)
		m := PerturbMode(in.Task, rollout.EpisodeSeed(1, in.Task.TaskID, 0))
		modes[m]++
		st := stats[m]
		if st == nil {
			st = &modeStat{}
			stats[m] = st
		}
		st.n++
		if in.Outcome == Success {
			st.succ++
		}
		if r[0].Verdict == r[0].ExecutableOutcome {
			st.pAgree++
		}
		if r[1].Verdict == r[1].ExecutableOutcome {
			st.bAgree++
		}
		if r[1].ProbeUsed {
			st.probed++
		}
		st.steps += int(r[1].ProbeSteps)
		m0 := PerturbMode(in.Task, rollout.EpisodeSeed(1, in.Task.TaskID, 0))
		if os.Getenv("VERIFY_EXPLORE") == "2" && (r[1].Verdict != r[1].ExecutableOutcome) && (os.Getenv("VERIFY_MODE") == "" || os.Getenv("VERIFY_MODE") == m0) {
			fmt.Printf("%s %s out=%s passive=%s builtin=%s steps=%d\n  %s\n  %s\n", in.TrajectoryID, in.Claim, in.Outcome, r[0].Verdict, r[1].Verdict, r[1].ProbeSteps, r[0].Criteria, r[1].Criteria)
		}
	}
	for _, m := range Summarize(rows) {
		fmt.Printf("%-8s %-9s n=%3d agree=%.3f fp=%.3f fn=%.3f unres=%d probe=%.3f steps=%.2f tok=%.0f reward=%.3f\n", m.Strategy, m.Domain, m.N, m.Agreement, m.FPRate, m.FNRate, m.Unresolved, m.ProbeRate, m.StepsPerJudgment, m.TokensPerJudgment, m.MeanReward)
	}
	succ := 0
	for _, in := range ins {
		if in.Outcome == Success {
			succ++
		}
	}
	fmt.Println("inputs", len(ins), "success", succ)
	for m, st := range stats {
		fmt.Printf("%-11s n=%3d succ=%3d passive=%3d builtin=%3d probed=%3d steps=%d\n", m, st.n, st.succ, st.pAgree, st.bAgree, st.probed, st.steps)
	}
}

func TestExploreMode(t *testing.T) {
	mode := os.Getenv("VERIFY_MODE_ALL")
	if mode == "" {
		t.Skip()
	}
	ctx := context.Background()
	ins, err := BenchInputs(ctx, simdesk.Pool(), 1, 0, 8, true)
	if err != nil {
		t.Fatal(err)
	}
	v := &Verifier{Runners: []*Runner{NewRunner(Passive(), nil, false), NewRunner(Builtin(), nil, false)}}
	for _, in := range ins {
		if PerturbMode(in.Task, rollout.EpisodeSeed(1, in.Task.TaskID, 0)) != mode {
			continue
		}
		r, _, _ := v.VerifyInput(ctx, in)
		fmt.Printf("%s out=%s passive=%s builtin=%s\n  %q\n", in.TrajectoryID, in.Outcome, r[0].Verdict, r[1].Verdict, in.History[max(0, len(in.History)-4):])
		if os.Getenv("VERIFY_CRIT") != "" {
			fmt.Println("  ", r[0].Criteria)
		}
	}
}

func TestExploreTrain(t *testing.T) {
	if os.Getenv("VERIFY_TRAIN") == "" {
		t.Skip()
	}
	ctx := context.Background()
	pool := simdesk.Pool()
	eval, err := BenchInputs(ctx, pool, 999, 0, 8, true)
	if err != nil {
		t.Fatal(err)
	}
	src := &BenchSource{Tasks: pool, Size: 64, Seed: 7, Workers: 8}
	tr, rep, err := Train(ctx, Builtin(), src, TrainParams{Iterations: envInt("VERIFY_IT", 12), LR: float64(envInt("VERIFY_LR", 1)), Seed: 7, Workers: 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range rep.Iterations {
		fmt.Printf("it %2d n=%d dec=%d reward=%.3f agree=%.3f probe=%.3f\n", it.Iteration, it.Attempts, it.Decisions, it.MeanReward, it.Agreement, it.ProbeRate)
	}
	rows, err := Evaluate(ctx, eval, []*Strategy{Passive(), Builtin(), tr}, 8)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range Summarize(rows) {
		if m.Domain == AllDomains {
			fmt.Printf("%-8s n=%3d agree=%.3f fp=%.3f fn=%.3f unres=%d probe=%.3f steps=%.2f tok=%.0f reward=%.3f\n", m.Strategy, m.N, m.Agreement, m.FPRate, m.FNRate, m.Unresolved, m.ProbeRate, m.StepsPerJudgment, m.TokensPerJudgment, m.MeanReward)
		}
	}
	b, _ := MarshalStrategy(tr)
	fmt.Println(string(b))
}

func envInt(k string, d int) int {
	if v := os.Getenv(k); v != "" {
		var n int
		fmt.Sscan(v, &n)
		return n
	}
	return d
}
