package shard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]Spec{"": {}, "0/1": {0, 1}, "2/7": {2, 7}, " 3 / 4 ": {3, 4}} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"1", "a/b", "3/3", "-1/2", "0/0", "1/2/3"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q): no error", bad)
		}
	}
}

func TestShardsPartitionKeys(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7} {
		count := map[string]int{}
		for i := 0; i < n; i++ {
			s := Spec{i, n}
			for k := 0; k < 500; k++ {
				if s.Owns(fmt.Sprint("task-", k)) {
					count[fmt.Sprint("task-", k)]++
				}
			}
		}
		for k := 0; k < 500; k++ {
			if count[fmt.Sprint("task-", k)] != 1 {
				t.Fatalf("n=%d: key %d owned by %d shards", n, k, count[fmt.Sprint("task-", k)])
			}
		}
	}
	// The hash is part of the format: pin it.
	if Of("files-rename-003", 7) != Of("files-rename-003", 7) || Of("a", 1) != 0 {
		t.Fatal("Of is not stable")
	}
}

func TestEveryTableMerges(t *testing.T) {
	for _, info := range schemas.All() {
		if mergers[info.Name] == nil {
			t.Errorf("table %s has no merger: add registerTable(schemas.X) to merge.go", info.Name)
		}
	}
}

func TestWholeInputStagesRefuseShards(t *testing.T) {
	if err := CheckShardable("sample", Spec{0, 2}); err == nil || !strings.Contains(err.Error(), "cannot be sharded") {
		t.Fatalf("sample: %v", err)
	}
	if err := CheckShardable("train", Spec{}); err != nil {
		t.Fatalf("unsharded train: %v", err)
	}
	if err := CheckShardable("rollout", Spec{1, 2}); err != nil {
		t.Fatalf("rollout: %v", err)
	}
}

func newLake(t *testing.T) *lake.Lake {
	t.Helper()
	l, err := lake.OpenDir(context.Background(), t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	l.Now = func() time.Time { return time.Unix(0, 0) }
	return l
}

// fakeStage is a stage keyed by task: each task gives a trajectory, a few
// steps and screenshots, some shared between tasks (so shards overlap in
// blobs), and every run records the pool (a shared replaced table).
func fakeStage(t *testing.T, l *lake.Lake, in string, spec Spec, seed int64) *Result {
	t.Helper()
	ctx := context.Background()
	tx, err := l.Begin(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	var pool []schemas.Task
	for i := 0; i < 40; i++ {
		pool = append(pool, schemas.Task{TaskID: fmt.Sprintf("task-%02d", i), Domain: "files", App: "x", Instruction: "do it",
			Setup: "[]", Judge: "{}", Feasible: true, Source: schemas.SourceSeed, Abilities: []string{}, Split: "train"})
	}
	o := NewOutput(l, tx, spec)
	tasks := NewTable(o, schemas.Tasks, TableOptions{Chunk: 16, Replace: true, Shared: true})
	trajs := NewTable(o, schemas.Trajectories, TableOptions{Chunk: 9})
	steps := NewTable(o, schemas.Steps, TableOptions{Chunk: 13})
	blobs := NewTable(o, schemas.Blobs, TableOptions{Chunk: 5, Dedup: true})
	verifs := NewTable(o, schemas.Verifications, TableOptions{}) // never written: no change
	_ = verifs
	if err := tasks.Add(pool...); err != nil {
		t.Fatal(err)
	}
	mine := Filter(spec, pool, func(t *schemas.Task) string { return t.TaskID })
	for i := len(mine) - 1; i >= 0; i-- { // arbitrary order: the writer sorts
		task := mine[i]
		id := task.TaskID + "@it000#00"
		tr := schemas.Trajectory{TrajectoryID: id, TaskID: task.TaskID, GroupID: task.TaskID + "@it000", Policy: "oracle",
			Seed: seed, Steps: 3, Outcome: schemas.OutcomeSuccess, Reward: 1, Source: "rollout"}
		if err := trajs.Add(tr); err != nil {
			t.Fatal(err)
		}
		for s := int32(0); s < 3; s++ {
			var k int
			fmt.Sscanf(task.TaskID, "task-%d", &k)
			img := []byte(fmt.Sprint("screenshot ", (k+int(s))%7)) // shared across tasks
			hash := schemas.HashBytes(img)
			x, y := int32(1), int32(2)
			st := schemas.Step{TrajectoryID: id, Step: s, ActionKind: "click", X: &x, Y: &y, Observation: hash}
			if err := steps.Add(st); err != nil {
				t.Fatal(err)
			}
			if err := blobs.Add(schemas.Blob{Hash: hash, Mime: "image/png", Bytes: img, Size: int64(len(img)), Width: 1, Height: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	res, err := o.Finish(ctx, lake.CommitInfo{Stage: "fake", Seed: seed, Params: map[string]any{"tasks": len(pool)}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestMergeEqualsUnsharded(t *testing.T) {
	ctx := context.Background()
	ref := newLake(t)
	want := fakeStage(t, ref, "", Spec{}, 1).Manifest
	if want.Tables["trajectories"].Rows != 40 || len(want.Tables["steps"].Files) < 2 {
		t.Fatalf("fixture: %+v", want.Tables)
	}
	if _, ok := want.Tables["verifications"]; ok {
		t.Fatal("an empty appended table changed the snapshot")
	}
	for _, n := range []int{1, 2, 3, 7} {
		l := newLake(t)
		for i := n - 1; i >= 0; i-- {
			res := fakeStage(t, l, "", Spec{i, n}, 1)
			if res.Manifest != nil || res.Fragment == nil {
				t.Fatalf("sharded run committed: %+v", res)
			}
		}
		if head, _ := l.Head(ctx); head != "" {
			t.Fatalf("n=%d: a shard moved main to %s", n, head)
		}
		res, err := Merge(ctx, l, MergeOptions{Stage: "fake", Input: "empty", Clean: true})
		if err != nil {
			t.Fatalf("n=%d: merge: %v", n, err)
		}
		if res.Snapshot != want.ID {
			t.Errorf("n=%d: merged snapshot %s, unsharded %s", n, res.Snapshot, want.ID)
			for name, tf := range res.Manifest.Tables {
				t.Logf("  %s: %+v\n  want %+v", name, tf.Files, want.Tables[name].Files)
			}
		}
		if keys, _ := l.Storage().List(ctx, FragmentsDir); len(keys) != 0 {
			t.Errorf("n=%d: --clean left %v", n, keys)
		}
		rep, err := l.Verify(ctx, nil)
		if err != nil || !rep.OK() {
			t.Fatalf("n=%d: verify: %+v %v", n, rep, err)
		}
	}
}

func TestMergeOnSnapshotAndRerun(t *testing.T) {
	ctx := context.Background()
	ref := newLake(t)
	base := fakeStage(t, ref, "", Spec{}, 1).Manifest
	want := fakeStage(t, ref, base.ID, Spec{}, 2).Manifest

	l := newLake(t)
	if got := fakeStage(t, l, "", Spec{}, 1).Manifest; got.ID != base.ID {
		t.Fatal("fixture is not deterministic")
	}
	for i := 0; i < 3; i++ {
		fakeStage(t, l, base.ID, Spec{i, 3}, 2)
	}
	// A re-run shard replaces its own fragment, and nothing else changes.
	before, _ := l.Storage().List(ctx, FragmentsDir)
	fakeStage(t, l, base.ID, Spec{1, 3}, 2)
	after, _ := l.Storage().List(ctx, FragmentsDir)
	if strings.Join(before, ",") != strings.Join(after, ",") {
		t.Fatalf("re-run changed the fragment set:\n%v\n%v", before, after)
	}
	// A commit meanwhile on a disjoint table: the merge rebases like an
	// unsharded commit would.
	res, err := Merge(ctx, l, MergeOptions{Stage: "fake", Input: base.ID[:10], Shards: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Snapshot != want.ID {
		t.Fatalf("merged %s, unsharded %s", res.Snapshot, want.ID)
	}
	// Merging again commits nothing new.
	again, err := Merge(ctx, l, MergeOptions{Stage: "fake", Input: base.ID, Shards: 3})
	if err != nil || again.Snapshot != want.ID {
		t.Fatalf("second merge: %v %v", again, err)
	}
}

func TestMergeRefusals(t *testing.T) {
	ctx := context.Background()
	l := newLake(t)
	st := l.Storage()
	fakeStage(t, l, "", Spec{0, 3}, 1)
	fakeStage(t, l, "", Spec{2, 3}, 1)
	expect := func(what string, opt MergeOptions, want string) {
		t.Helper()
		_, err := Merge(ctx, l, opt)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: got %v, want an error containing %q", what, err, want)
		}
		if head, _ := l.Head(ctx); head != "" {
			t.Fatalf("%s: a refused merge committed", what)
		}
	}
	expect("missing", MergeOptions{Stage: "fake", Input: "empty"}, "shard(s) 1 of 3 missing")
	expect("wrong input", MergeOptions{Stage: "fake", Input: strings.Repeat("a", 64)}, "snapshot")
	expect("wrong stage", MergeOptions{Stage: "other", Input: "empty"}, "no fragments of stage other")
	expect("wrong N", MergeOptions{Stage: "fake", Input: "empty", Shards: 2}, "no fragments of stage fake on input (empty lake) with 2 shards")

	// Duplicated: shard 0's fragment copied into shard 1's place.
	set, _ := List(ctx, l, "fake")
	if len(set) != 1 {
		t.Fatalf("sets: %+v", set)
	}
	b, err := st.Get(ctx, set[0].Dir+"shard-0-of-3.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutIfAbsent(ctx, set[0].Dir+"shard-1-of-3.json", b); err != nil {
		t.Fatal(err)
	}
	expect("duplicated", MergeOptions{Stage: "fake", Input: "empty"}, "holds shard 0 of 3: a duplicated")

	// Built with different parameters: a shard of another seed put in place.
	if err := st.Delete(ctx, set[0].Dir+"shard-1-of-3.json"); err != nil {
		t.Fatal(err)
	}
	other := fakeStage(t, l, "", Spec{1, 3}, 99).Fragment
	expect("two runs", MergeOptions{Stage: "fake", Input: "empty"}, "pick one with --params")
	ob, _ := st.Get(ctx, other.Key())
	if err := st.PutIfAbsent(ctx, set[0].Dir+"shard-1-of-3.json", ob); err != nil {
		t.Fatal(err)
	}
	expect("other params", MergeOptions{Stage: "fake", Input: "empty", Params: set[0].ParamsHash}, "built with different parameters")

	// Re-running the shard repairs it.
	fakeStage(t, l, "", Spec{1, 3}, 1)
	if _, err := Merge(ctx, l, MergeOptions{Stage: "fake", Input: "empty", Params: set[0].ParamsHash[:6]}); err != nil {
		t.Fatalf("after re-run: %v", err)
	}
	// Fragments whose key sets overlap (bad sharding) are refused too.
	l2 := newLake(t)
	fakeStage(t, l2, "", Spec{0, 2}, 1)
	f1 := fakeStage(t, l2, "", Spec{0, 2}, 1).Fragment
	fb, _ := l2.Storage().Get(ctx, f1.Key())
	fb = []byte(strings.Replace(string(fb), `"shard": 0`, `"shard": 1`, 1))
	if err := l2.Storage().PutIfAbsent(ctx, strings.Replace(f1.Key(), "shard-0", "shard-1", 1), fb); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(ctx, l2, MergeOptions{Stage: "fake", Input: "empty"}); !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "same key") {
		t.Fatalf("overlapping shards: %v", err)
	}
}
