package stage

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// TrainSet is what one GRPO run trains on: whole rollout groups, fresh ones
// and AdaPR replays, minus those out of the staleness window.
type TrainSet struct {
	// Trajectories are the kept groups' rollouts (error episodes left out),
	// sorted by trajectory id.
	Trajectories []schemas.Trajectory
	// Groups is one train_groups row per group considered, kept or not.
	Groups []schemas.TrainGroup
	// Newest is the newest rolled-out iteration (the checkpoint's).
	Newest int32
	// Dropped counts the rollouts of groups dropped as stale; Replayed the
	// replayed groups kept.
	Dropped, DroppedGroups, Replayed int
}

// SelectTrainSet picks the groups a GRPO run of policy version current
// (the checkpoint it continues) trains on, from snapshot m:
//
//   - fresh groups: the checkpoint-policy rollouts (source rollout) of the
//     iterations after the last one a GRPO checkpoint trained on, up to
//     the newest; with none after it (train run twice on one snapshot) or
//     no GRPO checkpoint yet, the newest iteration's;
//   - replays: the groups the replay_buffer rows of the newest iteration
//     mark replayed (the batch's adapr picks, which were not rolled out
//     again), read back from the trajectories table by id;
//   - a group whose oldest rollout comes from a policy more than maxStale
//     versions older than current is dropped and counted (EvoCUA-1.5 5.2).
//
// version is the version the run will produce (train_groups.version).
// Errors name the id: a replayed group whose trajectories are gone
// (garbage-collected), a buffer row naming a group with no rollouts, a
// rollout from a policy newer than current, maxStale < 0.
func SelectTrainSet(ctx context.Context, l *lake.Lake, m *lake.Manifest, current, version, maxStale int32) (*TrainSet, error) {
	if maxStale < 0 {
		return nil, fmt.Errorf("train: --max-stale is %d, want >= 0", maxStale)
	}
	byID := map[string]schemas.Trajectory{}
	byGroup := map[string][]string{}
	newest := int32(-1)
	err := lake.ScanTable(ctx, l, m, schemas.Trajectories, 4096, func(rows []schemas.Trajectory) error {
		for _, r := range rows {
			if r.Source != "rollout" || r.Policy != "checkpoint" {
				continue
			}
			newest = max(newest, r.Iteration)
			byID[r.TrajectoryID] = r
			byGroup[r.GroupID] = append(byGroup[r.GroupID], r.TrajectoryID)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	cks, err := lake.ReadTable(ctx, l, m, schemas.Checkpoints)
	if err != nil {
		return nil, err
	}
	lastTrained := int32(-1)
	for _, ck := range cks {
		if ck.Objective == "grpo" {
			lastTrained = max(lastTrained, ck.Iteration)
		}
	}
	from := newest // the first iteration of fresh groups
	if lastTrained >= 0 && lastTrained < newest {
		from = lastTrained + 1
	}
	type cand struct {
		group, task, channel string
		iteration            int32
		ids                  []string
	}
	var cands []cand
	fresh := map[string]*cand{}
	for id, t := range byID {
		if t.Iteration < from || t.Iteration > newest {
			continue
		}
		c, ok := fresh[t.GroupID]
		if !ok {
			c = &cand{group: t.GroupID, task: t.TaskID, channel: schemas.TrainFresh, iteration: t.Iteration}
			fresh[t.GroupID] = c
		}
		c.ids = append(c.ids, id)
	}
	for _, c := range fresh {
		cands = append(cands, *c)
	}
	buf, err := lake.ReadTable(ctx, l, m, schemas.ReplayBuffer)
	if err != nil {
		return nil, err
	}
	for _, r := range buf {
		if r.Iteration != newest || !r.Replayed {
			continue
		}
		if _, dup := fresh[r.GroupID]; dup {
			continue // rolled out in this very window: trained once, as fresh
		}
		if len(byGroup[r.GroupID]) == 0 {
			return nil, fmt.Errorf("train: replay_buffer row (iteration %d, task %s) names group %s, which has no rollouts in snapshot %s",
				r.Iteration, r.TaskID, r.GroupID, short(m.ID))
		}
		for _, id := range r.Trajectories {
			if t, ok := byID[id]; !ok || t.GroupID != r.GroupID {
				return nil, fmt.Errorf("train: AdaPR replay of group %s (task %s, iteration %d): trajectory %s is not in snapshot %s's trajectories (garbage-collected?)",
					r.GroupID, r.TaskID, r.Iteration, id, short(m.ID))
			}
		}
		cands = append(cands, cand{group: r.GroupID, task: r.TaskID, channel: schemas.TrainReplay, iteration: r.GroupIteration, ids: slices.Clone(r.Trajectories)})
	}
	slices.SortFunc(cands, func(a, b cand) int { return strings.Compare(a.group, b.group) })
	out := &TrainSet{Newest: newest}
	for _, c := range cands {
		slices.Sort(c.ids)
		pv := int32(-1)
		var kept []schemas.Trajectory
		equal, first := true, 0.0
		for k, id := range c.ids {
			t := byID[id]
			if t.PolicyVersion > current {
				return nil, fmt.Errorf("train: trajectory %s (group %s) has policy version %d, ahead of the checkpoint v%d being trained", id, c.group, t.PolicyVersion, current)
			}
			if k == 0 || t.PolicyVersion < pv {
				pv = t.PolicyVersion
			}
			if t.Outcome == schemas.OutcomeError {
				continue
			}
			if len(kept) == 0 {
				first = t.Reward
			} else if t.Reward != first {
				equal = false
			}
			kept = append(kept, t)
		}
		lag := current - pv
		row := schemas.TrainGroup{Version: version, GroupID: c.group, TaskID: c.task, Iteration: c.iteration, Channel: c.channel,
			PolicyVersion: pv, Lag: max(lag, 0), Rollouts: int32(len(kept)), Kept: lag <= maxStale, ZeroVariance: equal}
		out.Groups = append(out.Groups, row)
		if !row.Kept {
			out.Dropped += len(kept)
			out.DroppedGroups++
			continue
		}
		if c.channel == schemas.TrainReplay {
			out.Replayed++
		}
		out.Trajectories = append(out.Trajectories, kept...)
	}
	slices.SortFunc(out.Trajectories, func(a, b schemas.Trajectory) int { return strings.Compare(a.TrajectoryID, b.TrajectoryID) })
	return out, nil
}
