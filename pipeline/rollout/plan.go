package rollout

import (
	"context"
	"sort"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/schemas"
)

// Plan is what a rollout run will do, read from its input snapshot.
type Plan struct {
	Tasks     []schemas.Task
	Iteration int32
	FromBatch bool   // the tasks are the sampled batch of Iteration
	PoolFrom  string // "lake" or "builtin"
	// Replayed lists the batch's AdaPR picks (channel adapr): they train
	// from their buffered group, so they are not rolled out again.
	Replayed []string
}

// PlanRun reads the task pool (the snapshot's tasks, or the simulator's
// built-in pool when the lake has none) and picks the tasks: the newest
// batch when it has not been rolled out yet, else the whole pool. The
// iteration is the batch's, or one past the newest rolled-out iteration.
// A batch's adapr picks are left out (Plan.Replayed): AdaPR replays a
// stored group instead of rolling the task out again.
// m may be nil for an empty lake.
func PlanRun(ctx context.Context, l *lake.Lake, m *lake.Manifest) (*Plan, error) {
	p := &Plan{PoolFrom: "lake"}
	var pool []schemas.Task
	var err error
	if m != nil {
		if pool, err = lake.ReadTable(ctx, l, m, schemas.Tasks); err != nil {
			return nil, err
		}
	}
	if len(pool) == 0 {
		pool, p.PoolFrom = simdesk.Pool(), "builtin"
	}
	lastRolled := int32(-1)
	var batches []schemas.Batch
	if m != nil {
		err := lake.ScanTable(ctx, l, m, schemas.Trajectories, 4096, func(rows []schemas.Trajectory) error {
			for _, r := range rows {
				if r.Source == "rollout" && r.Iteration > lastRolled {
					lastRolled = r.Iteration
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if batches, err = lake.ReadTable(ctx, l, m, schemas.Batches); err != nil {
			return nil, err
		}
	}
	p.Iteration = lastRolled + 1
	newest := int32(-1)
	for _, b := range batches {
		newest = max(newest, b.Iteration)
	}
	if newest > lastRolled {
		byID := map[string]schemas.Task{}
		for _, t := range pool {
			byID[t.TaskID] = t
		}
		var picked []schemas.Batch
		for _, b := range batches {
			if b.Iteration == newest {
				picked = append(picked, b)
			}
		}
		sort.Slice(picked, func(a, b int) bool { return picked[a].Rank < picked[b].Rank })
		seen := map[string]bool{}
		for _, b := range picked {
			if b.Channel == "adapr" {
				p.Replayed = append(p.Replayed, b.TaskID)
				continue
			}
			if t, ok := byID[b.TaskID]; ok && !seen[b.TaskID] { // one group per task per iteration
				seen[b.TaskID] = true
				p.Tasks = append(p.Tasks, t)
			}
		}
		p.Iteration, p.FromBatch = newest, true
		return p, nil
	}
	p.Tasks = pool
	return p, nil
}

// FilterSplit keeps the tasks of one split.
func FilterSplit(tasks []schemas.Task, split string) []schemas.Task {
	var out []schemas.Task
	for _, t := range tasks {
		if t.Split == split {
			out = append(out, t)
		}
	}
	return out
}
