package sample

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cualake/cualake/schemas"
)

// BufferFromRows returns AdaPR's buffer as the sample stage of the latest
// iteration before `before` left it: the live rows of that iteration (the
// replay_buffer table's persisted state). No rows give an empty buffer. A
// task with two live groups, or a live row without trajectories, is an
// error naming it.
func BufferFromRows(rows []schemas.ReplayItem, before int32) (*ReplayBuffer, error) {
	last := int32(-1)
	for i := range rows {
		if rows[i].Iteration < before {
			last = max(last, rows[i].Iteration)
		}
	}
	b := NewReplayBuffer()
	for i := range rows {
		r := &rows[i]
		if r.Iteration != last || r.State != schemas.ReplayLive {
			continue
		}
		if old, dup := b.items[r.TaskID]; dup {
			return nil, fmt.Errorf("%w: replay_buffer iteration %d: task %q has two live groups, %q and %q", ErrBadInput, last, r.TaskID, old.GroupID, r.GroupID)
		}
		if len(r.Trajectories) == 0 {
			return nil, fmt.Errorf("%w: replay_buffer iteration %d: group %q (task %q) names no trajectories", ErrBadInput, last, r.GroupID, r.TaskID)
		}
		b.items[r.TaskID] = &ReplayItem{TaskID: r.TaskID, GroupID: r.GroupID, Iteration: r.GroupIteration, Replays: r.Replays,
			PolicyVersion: r.PolicyVersion, Trajectories: slices.Clone(r.Trajectories), Successes: r.Successes}
	}
	return b, nil
}

// DropStale removes the items whose policy version lies more than maxStale
// versions behind current (EvoCUA-1.5 5.2) and returns them sorted by task
// id. current < 0 (no checkpoint yet) drops nothing.
func (b *ReplayBuffer) DropStale(current, maxStale int32) []ReplayItem {
	if current < 0 {
		return nil
	}
	var out []ReplayItem
	for task, it := range b.items {
		if current-it.PolicyVersion > maxStale {
			out = append(out, *it)
			delete(b.items, task)
		}
	}
	slices.SortFunc(out, func(x, y ReplayItem) int { return strings.Compare(x.TaskID, y.TaskID) })
	return out
}

// row is the replay_buffer row of an item at iteration it.
func (it ReplayItem) row(iteration int32, state string, replayed bool) schemas.ReplayItem {
	return schemas.ReplayItem{Iteration: iteration, TaskID: it.TaskID, GroupID: it.GroupID, GroupIteration: it.Iteration,
		PolicyVersion: it.PolicyVersion, Trajectories: it.Trajectories, Successes: it.Successes, Replays: it.Replays,
		Replayed: replayed, State: state}
}

// bufferStep is one iteration of AdaPR's buffer in the sample stage, in the
// order a run executes it: read the buffer the previous selection left,
// add the groups of the iteration just folded into the EMAs (replacing a
// task's older group), drop the groups out of the staleness window, then
// (after the selection) count the replays.
type bufferStep struct {
	buf  *ReplayBuffer
	left []schemas.ReplayItem // rows of items that left before the selection
}

func newBufferStep(in StageInput, rows []schemas.PassRate, observed, iteration int32, p DTACParams) (*bufferStep, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	buf, err := BufferFromRows(in.Buffer, iteration)
	if err != nil {
		return nil, err
	}
	st := &bufferStep{buf: buf}
	if observed >= 0 {
		var fresh []schemas.Trajectory
		for _, t := range in.Trajectories {
			if t.Iteration == observed {
				fresh = append(fresh, t)
			}
		}
		groups, err := GroupOutcomes(fresh)
		if err != nil {
			return nil, err
		}
		replaced, err := buf.observe(groups, rows, p)
		if err != nil {
			return nil, fmt.Errorf("adapr buffer, iteration %d's groups: %w", observed, err)
		}
		for _, it := range replaced {
			st.left = append(st.left, it.row(iteration, schemas.ReplayReplaced, false))
		}
	}
	for _, it := range buf.DropStale(in.PolicyVersion, p.MaxStale) {
		st.left = append(st.left, it.row(iteration, schemas.ReplayStale, false))
	}
	return st, nil
}

// rows returns the replay_buffer rows of iteration after the selection
// replayed the given items (DTAC.Replayed): every live item, the replayed
// ones marked, the ones that reached the cap as capped, and the ones that
// left before the selection.
func (st *bufferStep) rows(iteration int32, replayed []ReplayItem, maxReplays int32) []schemas.ReplayItem {
	out := slices.Clone(st.left)
	picked := map[string]bool{}
	for _, it := range replayed {
		picked[it.TaskID] = true
		if it.Replays >= maxReplays {
			out = append(out, it.row(iteration, schemas.ReplayCapped, true))
		}
	}
	for _, it := range st.buf.Items() {
		out = append(out, it.row(iteration, schemas.ReplayLive, picked[it.TaskID]))
	}
	slices.SortFunc(out, func(a, b schemas.ReplayItem) int {
		if c := strings.Compare(a.TaskID, b.TaskID); c != 0 {
			return c
		}
		return strings.Compare(a.GroupID, b.GroupID)
	})
	return out
}
