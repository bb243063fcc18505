package rollout

import (
	"context"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// Unsolved keeps the tasks that have no verified success of the policy in
// snapshot m (schemas.Trajectory.PolicySuccess), in their order. A pass
// over them is what rejection-sampling fine-tuning needs before a round:
// it imitates at most a few successes per task, and a solved task keeps
// the ones it has, so episodes go where no success is known yet.
func Unsolved(ctx context.Context, l *lake.Lake, m *lake.Manifest, tasks []schemas.Task) ([]schemas.Task, error) {
	solved := map[string]bool{}
	if m != nil {
		err := lake.ScanTable(ctx, l, m, schemas.Trajectories, 4096, func(rows []schemas.Trajectory) error {
			for i := range rows {
				if rows[i].PolicySuccess() {
					solved[rows[i].TaskID] = true
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	var out []schemas.Task
	for _, t := range tasks {
		if !solved[t.TaskID] {
			out = append(out, t)
		}
	}
	return out, nil
}
