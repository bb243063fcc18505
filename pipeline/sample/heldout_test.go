package sample

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cualake/cualake/schemas"
)

// TestHeldOutTasksNeverSampled: evaluation tasks (split heldout) get no
// pass-rate row and no sampler draws them, even one whose uniform channel
// covers the whole pool, and even when their eval rollouts sit in the
// iteration being folded. (Frontier's uniform channel drew them into
// training batches: 6 of 32 tasks per iteration in the demo.)
func TestHeldOutTasksNeverSampled(t *testing.T) {
	var tasks []schemas.Task
	for i := 0; i < 12; i++ {
		split := "train"
		if i%3 == 0 {
			split = "heldout"
		}
		tasks = append(tasks, schemas.Task{TaskID: fmt.Sprintf("t%02d", i), Split: split, Feasible: true})
	}
	var rollouts []schemas.Trajectory
	for i, tk := range tasks {
		for j := 0; j < 4; j++ {
			o, r := schemas.OutcomeFailure, 0.0
			if (i+j)%2 == 0 {
				o, r = schemas.OutcomeSuccess, 1.0
			}
			rollouts = append(rollouts, schemas.Trajectory{TrajectoryID: fmt.Sprintf("%s#%d", tk.TaskID, j), TaskID: tk.TaskID,
				GroupID: tk.TaskID + "@0", Iteration: 0, Outcome: o, Reward: r, Source: "rollout"})
		}
	}
	for _, name := range []string{NameUniform, NameFrontier, NameDTAC, NameCurriculum, NameDAPO} {
		p := DefaultStageParams()
		p.Sampler, p.BatchSize = name, 8 // every training task: without the filter, 12 would be eligible
		out, err := RunStage(StageInput{Tasks: tasks, Trajectories: rollouts, PolicyVersion: -1}, p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(out.Batch) == 0 || len(out.PassRates) != 8 {
			t.Fatalf("%s: %d picks, %d pass-rate rows (want 8: the training tasks)", name, len(out.Batch), len(out.PassRates))
		}
		for _, b := range out.Batch {
			if n := b.TaskID[1:]; n == "00" || n == "03" || n == "06" || n == "09" {
				t.Fatalf("%s drew held-out task %s into a training batch", name, b.TaskID)
			}
		}
		for _, r := range out.PassRates {
			if n := r.TaskID[1:]; n == "00" || n == "03" || n == "06" || n == "09" {
				t.Fatalf("%s rated held-out task %s", name, r.TaskID)
			}
		}
	}
	if _, err := RunStage(StageInput{Tasks: tasks[:1], PolicyVersion: -1}, DefaultStageParams()); err == nil {
		t.Fatal("a pool of held-out tasks only must be an error")
	}
}

// TestBatchIteration: the batch is numbered one past the newest rolled-out
// iteration, or p.Iteration when set (the loop after RFT rounds, which
// roll out nothing at iteration 1); a number already rolled out is an
// error.
func TestBatchIteration(t *testing.T) {
	var tasks []schemas.Task
	var rollouts []schemas.Trajectory
	for i := 0; i < 6; i++ {
		id := fmt.Sprintf("t%02d", i)
		tasks = append(tasks, schemas.Task{TaskID: id, Split: "train", Feasible: true})
		for j := 0; j < 4; j++ {
			o, r := schemas.OutcomeFailure, 0.0
			if j < 2 {
				o, r = schemas.OutcomeSuccess, 1.0
			}
			rollouts = append(rollouts, schemas.Trajectory{TrajectoryID: fmt.Sprintf("%s#%d", id, j), TaskID: id,
				GroupID: id + "@0", Outcome: o, Reward: r, Source: "rollout"})
		}
	}
	in := StageInput{Tasks: tasks, Trajectories: rollouts, PolicyVersion: -1}
	p := DefaultStageParams()
	p.BatchSize = 4
	for _, c := range []struct{ set, want int32 }{{0, 1}, {2, 2}, {5, 5}} {
		p.Iteration = c.set
		out, err := RunStage(in, p)
		if err != nil {
			t.Fatalf("iteration %d: %v", c.set, err)
		}
		if out.Iteration != c.want || len(out.Batch) == 0 || out.Batch[0].Iteration != c.want || out.Observed != 0 {
			t.Fatalf("iteration %d: batch of iteration %d (%d tasks, first %+v), observed %d; want %d, observing 0", c.set, out.Iteration, len(out.Batch), out.Batch, out.Observed, c.want)
		}
	}
	for i := range in.Trajectories {
		in.Trajectories[i].Iteration = 3
	}
	p.Iteration = 3
	if _, err := RunStage(in, p); err == nil || !strings.Contains(err.Error(), "iteration 3 is already rolled out") {
		t.Fatalf("a rolled-out iteration: %v", err)
	}
}
