package rollout

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// TestUnsolved: a task is solved by a successful training rollout of the
// checkpoint policy (any iteration, the initial pass or a recalibration);
// failures, evaluation episodes, demonstrations and the oracle's successes
// leave it unsolved. The tasks kept are in the order given.
func TestUnsolved(t *testing.T) {
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, filepath.Join(t.TempDir(), "lake"), true)
	if err != nil {
		t.Fatal(err)
	}
	traj := func(id, task, policy, source, outcome string, it int32) schemas.Trajectory {
		return schemas.Trajectory{TrajectoryID: id, TaskID: task, GroupID: task + "/g", Policy: policy, Source: source,
			Outcome: outcome, Iteration: it, JudgeDetail: "{}"}
	}
	rows := []schemas.Trajectory{
		traj("a1", "a", "checkpoint", "rollout", schemas.OutcomeSuccess, 0),     // solved in the initial pass
		traj("b1", "b", "checkpoint", "rollout", schemas.OutcomeFailure, 0),     // failed
		traj("b2", "b", "checkpoint", "rollout", schemas.OutcomeSuccess, 3),     // solved in a later pass
		traj("c1", "c", "checkpoint", "eval", schemas.OutcomeSuccess, 1),        // evaluation: not training
		traj("d1", "d", "oracle", "warmstart", schemas.OutcomeSuccess, 0),       // a demonstration
		traj("e1", "e", "checkpoint", "calibration", schemas.OutcomeSuccess, 2), // recalibration counts
		traj("f1", "f", "checkpoint", "rollout", schemas.OutcomeIncomplete, 1),
	}
	tx, err := l.Begin(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := lake.AppendTable(ctx, tx, schemas.Trajectories, rows); err != nil {
		t.Fatal(err)
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var tasks []schemas.Task
	for _, id := range []string{"g", "f", "e", "d", "c", "b", "a"} {
		tasks = append(tasks, schemas.Task{TaskID: id})
	}
	got, err := Unsolved(ctx, l, m, tasks)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, task := range got {
		ids = append(ids, task.TaskID)
	}
	if want := []string{"g", "f", "d", "c"}; !slices.Equal(ids, want) {
		t.Fatalf("unsolved %v, want %v", ids, want)
	}
	if all, err := Unsolved(ctx, l, nil, tasks); err != nil || len(all) != len(tasks) {
		t.Fatalf("empty lake: %d of %d tasks, %v", len(all), len(tasks), err)
	}
}
