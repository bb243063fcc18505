package verify

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/schemas"
)

// StageParams configure Stage.
type StageParams struct {
	Window  int  // observations the Judge sees (default DefaultWindow)
	Limit   int  // at most this many trajectories, in id order (0: all)
	Images  bool // load screenshot bytes (model Judges look at them; the builtin Judge reads trees)
	Workers int  // parallel verifications (output does not depend on it)
}

// StageSummary counts what Stage did.
type StageSummary struct {
	Trajectories int `json:"trajectories"` // in the snapshot
	Verified     int `json:"verified"`     // trajectories that got at least one new row
	Rows         int `json:"rows"`
	Existing     int `json:"existing"`   // (trajectory, strategy) pairs the snapshot already had: one attempt per state
	Unfinished   int `json:"unfinished"` // episodes that ended in error: nothing to verify
	NoTask       int `json:"no_task"`    // trajectories whose task is in neither the snapshot nor the built-in pool
}

// Stage verifies the trajectories of snapshot m with every runner and
// returns the new verifications rows (trajectory order, then runner order)
// and the evidence blobs. Final states, trees and screenshots are read from
// the snapshot's blobs; a (trajectory, strategy) pair the snapshot already
// verified is left alone, so each terminal state is verified once per
// strategy. Tasks come from the snapshot, else from the simulator's
// built-in pool.
func Stage(ctx context.Context, l *lake.Lake, m *lake.Manifest, runners []*Runner, p StageParams) ([]schemas.Verification, []schemas.Blob, StageSummary, error) {
	done := map[string]bool{}
	old, err := lake.ReadTable(ctx, l, m, schemas.Verifications)
	if err != nil {
		return nil, nil, StageSummary{}, err
	}
	for _, v := range old {
		done[v.TrajectoryID+"\x00"+v.Strategy] = true
	}
	todo := func(id string) []*Runner {
		var out []*Runner
		for _, r := range runners {
			if !done[id+"\x00"+r.Name] {
				out = append(out, r)
			}
		}
		return out
	}
	existing := 0
	inputs, sum, err := LoadInputs(ctx, l, m, p, func(t schemas.Trajectory) bool {
		n := len(todo(t.TrajectoryID))
		existing += len(runners) - n
		return n > 0
	})
	if err != nil {
		return nil, nil, sum, err
	}
	sum.Existing = existing
	results := make([][]schemas.Verification, len(inputs))
	evidence := make([][]schemas.Blob, len(inputs))
	errs := make([]error, len(inputs))
	var wg sync.WaitGroup
	ch := make(chan int)
	for w := 0; w < max(1, p.Workers); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ch {
				v := &Verifier{Runners: todo(inputs[i].TrajectoryID), Window: p.Window}
				results[i], evidence[i], errs[i] = v.VerifyInput(ctx, inputs[i])
			}
		}()
	}
	for i := range inputs {
		ch <- i
	}
	close(ch)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, nil, sum, err
	}
	var rows []schemas.Verification
	var out []schemas.Blob
	seen := map[string]bool{}
	for i := range inputs {
		if len(results[i]) > 0 {
			sum.Verified++
		}
		rows = append(rows, results[i]...)
		for _, b := range evidence[i] {
			if !seen[b.Hash] {
				seen[b.Hash] = true
				out = append(out, b)
			}
		}
	}
	sum.Rows = len(rows)
	return rows, out, sum, nil
}

// LoadInputs reads the verification inputs of a snapshot's finished
// trajectories that keep accepts (nil keeps all), in trajectory id order:
// steps, the last p.Window trees (and screenshots with p.Images), the final
// state, the task (from the snapshot, else the built-in pool) and the
// executable outcome.
func LoadInputs(ctx context.Context, l *lake.Lake, m *lake.Manifest, p StageParams, keep func(schemas.Trajectory) bool) ([]*Input, StageSummary, error) {
	var sum StageSummary
	if p.Window <= 0 {
		p.Window = DefaultWindow
	}
	trajs, err := lake.ReadTable(ctx, l, m, schemas.Trajectories)
	if err != nil {
		return nil, sum, err
	}
	sort.Slice(trajs, func(a, b int) bool { return trajs[a].TrajectoryID < trajs[b].TrajectoryID })
	sum.Trajectories = len(trajs)
	tasks := map[string]schemas.Task{}
	lakeTasks, err := lake.ReadTable(ctx, l, m, schemas.Tasks)
	if err != nil {
		return nil, sum, err
	}
	for _, t := range lakeTasks {
		tasks[t.TaskID] = t
	}
	var pool map[string]schemas.Task
	type job struct {
		traj schemas.Trajectory
		task schemas.Task
	}
	var jobs []job
	for _, t := range trajs {
		if p.Limit > 0 && len(jobs) >= p.Limit {
			break
		}
		if t.Outcome == schemas.OutcomeError {
			sum.Unfinished++
			continue
		}
		if keep != nil && !keep(t) {
			continue
		}
		task, ok := tasks[t.TaskID]
		if !ok {
			if pool == nil {
				pool = map[string]schemas.Task{}
				for _, pt := range simdesk.Pool() {
					pool[pt.TaskID] = pt
				}
			}
			if task, ok = pool[t.TaskID]; !ok {
				sum.NoTask++
				continue
			}
		}
		jobs = append(jobs, job{traj: t, task: task})
	}
	if len(jobs) == 0 {
		return nil, sum, nil
	}
	// Only the steps and blobs these trajectories need are kept.
	want := map[string]bool{}
	for _, j := range jobs {
		want[j.traj.TrajectoryID] = true
	}
	steps := map[string][]schemas.Step{}
	err = lake.ScanTable(ctx, l, m, schemas.Steps, 4096, func(rows []schemas.Step) error {
		for _, s := range rows {
			if want[s.TrajectoryID] {
				s.ResponseIDs, s.Logprobs, s.Response = nil, nil, ""
				steps[s.TrajectoryID] = append(steps[s.TrajectoryID], s)
			}
		}
		return nil
	})
	if err != nil {
		return nil, sum, err
	}
	need := map[string]bool{}
	for _, j := range jobs {
		st := steps[j.traj.TrajectoryID]
		sort.Slice(st, func(a, b int) bool {
			if st[a].Step != st[b].Step {
				return st[a].Step < st[b].Step
			}
			return st[a].Sub < st[b].Sub
		})
		for _, s := range st[max(0, len(st)-p.Window):] {
			need[s.A11y] = true
			if p.Images {
				need[s.Observation] = true
			}
		}
		need[j.traj.FinalState] = true
	}
	delete(need, "")
	blobs := map[string][]byte{}
	err = lake.ScanTable(ctx, l, m, schemas.Blobs, 256, func(rows []schemas.Blob) error {
		for _, b := range rows {
			if need[b.Hash] {
				blobs[b.Hash] = append([]byte(nil), b.Bytes...)
			}
		}
		return nil
	})
	if err != nil {
		return nil, sum, err
	}
	get := func(h string) ([]byte, error) {
		if b, ok := blobs[h]; ok {
			return b, nil
		}
		if need[h] {
			return nil, fmt.Errorf("blob %s: %w", h, lake.ErrNotExist)
		}
		return nil, nil // a screenshot not loaded on purpose
	}
	out := make([]*Input, 0, len(jobs))
	for _, j := range jobs {
		in, err := NewInput(j.task, j.traj, steps[j.traj.TrajectoryID], get, p.Window)
		if err != nil {
			return nil, sum, err
		}
		out = append(out, in)
	}
	return out, sum, nil
}
