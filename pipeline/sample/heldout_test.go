package sample

import (
	"fmt"
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
