package synthesize

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/cualake/cualake/pipeline/rollout"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/schemas"
)

func TestQuickTraj(t *testing.T) {
	pool := simdesk.Pool()
	var tasks []schemas.Task
	for i, tk := range pool {
		if i%4 == 0 {
			tasks = append(tasks, tk)
		}
	}
	rp := rollout.DefaultParams()
	rp.N, rp.MaxTurns, rp.TreeOnly, rp.Workers = 2, 15, true, 8
	var trajs []schemas.Trajectory
	var steps []schemas.Step
	emit := func(ep rollout.Episode) error { trajs = append(trajs, ep.Trajectory); steps = append(steps, ep.Steps...); return nil }
	if err := rollout.Run(context.Background(), tasks, rollout.Random{}, rollout.SimEnvs(rp), rp, emit); err != nil {
		t.Fatal(err)
	}
	// successes from the oracle for a few tasks
	rp.N = 1
	if err := rollout.Run(context.Background(), tasks[:30], rollout.Oracle{}, rollout.SimEnvs(rp), rp, emit); err != nil {
		t.Fatal(err)
	}
	p := DefaultParams()
	p.FromTrajectories = true
	p.Workers = 8
	res, err := Run(context.Background(), Input{Tasks: pool, Trajectories: trajs, Steps: steps}, p)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	s.Trajectory.Deviations = s.Trajectory.Deviations[:min(3, len(s.Trajectory.Deviations))]
	b, _ := json.MarshalIndent(s, "", "  ")
	fmt.Println(string(b))
	for _, r := range res.Records {
		if !r.Accepted {
			fmt.Printf("%s r%d %s rule=%v %q judger=%s %q checker=%v/%v %q exec=%v\n  %s\n", r.CandidateID, r.Round, r.Dropped, r.RuleValid, r.RuleReason, r.JudgerVerdict, r.JudgerReason, r.CheckerReachable, r.CheckerJudgeCorrect, r.CheckerReason, r.Executable, r.Candidate[:min(900, len(r.Candidate))])
		}
	}
	for _, tk := range res.Accepted[:min(6, len(res.Accepted))] {
		fmt.Printf("%s %s %v: %s\n  setup=%s\n  judge=%s\n", tk.TaskID, tk.Source, tk.ParentTaskIDs, tk.Instruction, tk.Setup, tk.Judge)
	}
}
