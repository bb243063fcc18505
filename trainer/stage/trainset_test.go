package stage

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// trainLake commits trajectories, checkpoints and replay_buffer rows as one
// snapshot of a fresh lake.
func trainLake(t *testing.T, trajs []schemas.Trajectory, cks []schemas.Checkpoint, buf []schemas.ReplayItem) (*lake.Lake, *lake.Manifest) {
	t.Helper()
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, filepath.Join(t.TempDir(), "lake"), true)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := l.Begin(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := lake.AppendTable(ctx, tx, schemas.Trajectories, trajs); err != nil {
		t.Fatal(err)
	}
	if err := lake.AppendTable(ctx, tx, schemas.Checkpoints, cks); err != nil {
		t.Fatal(err)
	}
	if len(buf) > 0 {
		if err := lake.AppendTable(ctx, tx, schemas.ReplayBuffer, buf); err != nil {
			t.Fatal(err)
		}
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return l, m
}

// group is n checkpoint rollouts of task at iteration it by policy version
// v, rewards alternating 1, 0 (or all 0 when flat).
func group(task string, it, v int32, n int, flat bool) []schemas.Trajectory {
	var out []schemas.Trajectory
	g := fmt.Sprintf("%s/it%d", task, it)
	for i := 0; i < n; i++ {
		r, o := 0.0, schemas.OutcomeFailure
		if !flat && i%2 == 0 {
			r, o = 1, schemas.OutcomeSuccess
		}
		out = append(out, schemas.Trajectory{TrajectoryID: fmt.Sprintf("%s/%d", g, i), TaskID: task, GroupID: g, Policy: "checkpoint",
			PolicyVersion: v, Iteration: it, Reward: r, Outcome: o, Source: "rollout", Steps: 1})
	}
	return out
}

func ck(v, it int32, objective string) schemas.Checkpoint {
	return schemas.Checkpoint{Version: v, ParentVersion: v - 1, Objective: objective, Params: "{}", Blob: fmt.Sprintf("blob-%d", v), Iteration: it}
}

// A multi-iteration buffer: groups of iterations 2..5 rolled out by policy
// versions 1..4 were never trained (the last GRPO checkpoint trained on
// iteration 1). Training v8 (continuing v7) with --max-stale 3 keeps the
// groups of versions 4..7 and drops the older ones, counting them; an AdaPR
// replay of an old group is read back from its stored trajectories.
func TestSelectTrainSetStaleness(t *testing.T) {
	var trajs []schemas.Trajectory
	trajs = append(trajs, group("a", 1, 1, 4, false)...) // trained already (v2's iteration)
	trajs = append(trajs, group("a", 2, 2, 4, false)...) // lag 5: dropped
	trajs = append(trajs, group("b", 3, 3, 4, false)...) // lag 4: dropped
	trajs = append(trajs, group("c", 4, 4, 4, false)...) // lag 3: kept
	trajs = append(trajs, group("d", 5, 6, 4, true)...)  // lag 1: kept, zero variance
	trajs = append(trajs, group("e", 5, 7, 2, false)...) // lag 0: kept
	cks := []schemas.Checkpoint{ck(1, -1, "sft"), ck(2, 1, "grpo"), ck(7, 1, "grpo")}
	replay := schemas.ReplayItem{Iteration: 5, TaskID: "a", GroupID: "a/it1", GroupIteration: 1, PolicyVersion: 1, Replays: 1, Replayed: true,
		State: schemas.ReplayLive, Trajectories: []string{"a/it1/0", "a/it1/1", "a/it1/2", "a/it1/3"}}
	l, m := trainLake(t, trajs, cks, []schemas.ReplayItem{replay})
	ctx := context.Background()
	set, err := SelectTrainSet(ctx, l, m, 7, 8, 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range set.Groups {
		got = append(got, fmt.Sprintf("%s:%s:lag%d:%v", g.GroupID, g.Channel, g.Lag, g.Kept))
		if g.Version != 8 {
			t.Fatalf("group row version %d, want 8", g.Version)
		}
	}
	want := "a/it1:adapr:lag6:false a/it2:fresh:lag5:false b/it3:fresh:lag4:false c/it4:fresh:lag3:true d/it5:fresh:lag1:true e/it5:fresh:lag0:true"
	if strings.Join(got, " ") != want {
		t.Fatalf("groups:\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
	if set.DroppedGroups != 3 || set.Dropped != 12 || len(set.Trajectories) != 10 || set.Newest != 5 {
		t.Fatalf("dropped %d groups (%d rollouts), kept %d rollouts, newest %d", set.DroppedGroups, set.Dropped, len(set.Trajectories), set.Newest)
	}
	// A wider window keeps the replay (lag 6), trained from its stored rollouts.
	set, err = SelectTrainSet(ctx, l, m, 7, 8, 6)
	if err != nil || set.Replayed != 1 || set.DroppedGroups != 0 || len(set.Trajectories) != 22 {
		t.Fatalf("max-stale 6: %+v %v", set, err)
	}
	if _, err := SelectTrainSet(ctx, l, m, 7, 8, -1); err == nil || !strings.Contains(err.Error(), "--max-stale") {
		t.Fatalf("max-stale -1: %v", err)
	}
	// A rollout from a policy newer than the one trained is an error naming it.
	if _, err := SelectTrainSet(ctx, l, m, 6, 7, 3); err == nil || !strings.Contains(err.Error(), "e/it5/0") {
		t.Fatalf("future policy: %v", err)
	}
}

// A replay whose trajectories were garbage-collected, or a buffer row
// naming a group without rollouts, is an error naming the id.
func TestSelectTrainSetReplayErrors(t *testing.T) {
	trajs := append(group("a", 1, 1, 2, false), group("b", 2, 2, 2, false)...)
	cks := []schemas.Checkpoint{ck(1, -1, "sft"), ck(2, 1, "grpo")}
	gone := schemas.ReplayItem{Iteration: 2, TaskID: "a", GroupID: "a/it1", GroupIteration: 1, PolicyVersion: 1, Replays: 1, Replayed: true,
		State: schemas.ReplayLive, Trajectories: []string{"a/it1/0", "a/it1/1", "a/it1/9"}}
	l, m := trainLake(t, trajs, cks, []schemas.ReplayItem{gone})
	if _, err := SelectTrainSet(context.Background(), l, m, 2, 3, 3); err == nil || !strings.Contains(err.Error(), "a/it1/9") || !strings.Contains(err.Error(), "garbage") {
		t.Fatalf("gc'd replay: %v", err)
	}
	missing := gone
	missing.GroupID, missing.Trajectories = "zz/it1", []string{"zz/it1/0"}
	l, m = trainLake(t, trajs, cks, []schemas.ReplayItem{missing})
	if _, err := SelectTrainSet(context.Background(), l, m, 2, 3, 3); err == nil || !strings.Contains(err.Error(), "zz/it1") {
		t.Fatalf("missing group: %v", err)
	}
}

// rft keeps at most --per-task successes a task: by default those of
// smallest seed-keyed hash, with --pick shortest the fewest steps first
// (ties by that hash). Demonstrations, failures and another task's single
// success are kept or dropped the same way under both.
func TestImitatedPicks(t *testing.T) {
	var trajs []schemas.Trajectory
	for i, steps := range []int32{7, 3, 9, 3, 5, 12} { // task a: six successes, two of 3 steps
		trajs = append(trajs, schemas.Trajectory{TrajectoryID: fmt.Sprintf("a/%d", i), TaskID: "a", GroupID: "a/it1", Policy: "checkpoint",
			Iteration: 1, Reward: 1, Outcome: schemas.OutcomeSuccess, Source: "rollout", Steps: steps})
	}
	trajs = append(trajs,
		schemas.Trajectory{TrajectoryID: "a/fail", TaskID: "a", GroupID: "a/it1", Policy: "checkpoint", Iteration: 1, Outcome: schemas.OutcomeFailure, Source: "rollout", Steps: 1},
		schemas.Trajectory{TrajectoryID: "b/0", TaskID: "b", GroupID: "b/it2", Policy: "checkpoint", Iteration: 2, Reward: 1, Outcome: schemas.OutcomeSuccess, Source: "rollout", Steps: 20},
		schemas.Trajectory{TrajectoryID: "demo", TaskID: "c", GroupID: "c/demo", Policy: "oracle", Outcome: schemas.OutcomeSuccess, Source: "warmstart", Steps: 4})
	l, m := trainLake(t, trajs, nil, nil)
	ctx := context.Background()
	key := func(seed int64, id string) string { return schemas.HashBytes([]byte(fmt.Sprintf("%d/%s", seed, id))) }
	for _, tc := range []struct {
		pick    string
		perTask int
		seed    int64
		want    func() []string
	}{
		{PickShortest, 1, 1, func() []string { // of the two 3-step ones, the smaller hash
			if key(1, "a/1") < key(1, "a/3") {
				return []string{"a/1"}
			}
			return []string{"a/3"}
		}},
		{PickShortest, 3, 1, func() []string { return []string{"a/1", "a/3", "a/4"} }},
		{PickRandom, 2, 5, func() []string {
			ids := []string{"a/0", "a/1", "a/2", "a/3", "a/4", "a/5"}
			slices.SortFunc(ids, func(x, y string) int { return strings.Compare(key(5, x), key(5, y)) })
			return ids[:2]
		}},
		{PickShortest, 0, 1, func() []string { return []string{"a/0", "a/1", "a/2", "a/3", "a/4", "a/5"} }},
	} {
		picked, demos, successes, newest, err := imitated(ctx, l, m, true, Params{Pick: tc.pick, PerTask: tc.perTask, Seed: tc.seed})
		if err != nil {
			t.Fatal(err)
		}
		want := append(tc.want(), "b/0", "demo")
		if got := slices.Sorted(maps.Keys(picked)); !slices.Equal(got, slices.Sorted(slices.Values(want))) ||
			demos != 1 || successes != len(want)-1 || newest != 2 {
			t.Fatalf("pick %q, per task %d, seed %d: picked %v (demos %d, successes %d, newest %d), want %v",
				tc.pick, tc.perTask, tc.seed, got, demos, successes, newest, want)
		}
	}
}
