package shard

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// orderedStage writes 100 trajectories (key order) through an OrderedTable,
// or through NewTable when sorted is set, keeping the shard's.
func orderedStage(t *testing.T, l *lake.Lake, spec Spec, sorted bool) *Result {
	t.Helper()
	ctx := context.Background()
	tx, err := l.Begin(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	info := lake.CommitInfo{Stage: "ordered", Params: map[string]any{"n": 100}}
	o := NewOutput(l, tx, spec)
	opt := TableOptions{Chunk: 7, Replace: true}
	var add func(...schemas.Trajectory) error
	if sorted {
		add = NewTable(o, schemas.Trajectories, opt).Add
	} else {
		ot, err := NewOrderedTable(ctx, o, schemas.Trajectories, opt, info, 3)
		if err != nil {
			t.Fatal(err)
		}
		var released atomic.Int64
		ot.Release = func(rows []schemas.Trajectory) { released.Add(int64(len(rows))) }
		add = ot.Add
		defer func() {
			if released.Load() != ot.Rows() {
				t.Errorf("released %d of %d rows", released.Load(), ot.Rows())
			}
		}()
	}
	for i := 0; i < 100; i++ {
		id := fmt.Sprintf("traj-%03d", i)
		if !spec.Owns(id) {
			continue
		}
		if err := add(schemas.Trajectory{TrajectoryID: id, TaskID: "t", GroupID: "g", Outcome: schemas.OutcomeSuccess, Source: "rollout"}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := o.Finish(ctx, info)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestOrderedTableShardsEqualSorted: an OrderedTable writes the files NewTable
// writes, unsharded and merged from N = 1, 2, 3, 7 fragments.
func TestOrderedTableShardsEqualSorted(t *testing.T) {
	ctx := context.Background()
	want := orderedStage(t, newLake(t), Spec{}, true).Manifest
	if got := orderedStage(t, newLake(t), Spec{}, false).Manifest; got.ID != want.ID {
		t.Fatalf("ordered %v, sorted %v", got.Tables, want.Tables)
	}
	if n := len(want.Tables[schemas.Trajectories.Name].Files); n != 15 {
		t.Fatalf("%d files, want 15", n)
	}
	for _, n := range []int{1, 2, 3, 7} {
		l := newLake(t)
		for i := 0; i < n; i++ {
			orderedStage(t, l, Spec{i, n}, false)
		}
		res, err := Merge(ctx, l, MergeOptions{Stage: "ordered", Input: "empty", Shards: n, Clean: true})
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if res.Snapshot != want.ID {
			t.Fatalf("n=%d: merged %s, unsharded %s", n, res.Snapshot, want.ID)
		}
	}
}

func TestOrderedTableRefusals(t *testing.T) {
	ctx := context.Background()
	l := newLake(t)
	tx, _ := l.Begin(ctx, "")
	info := lake.CommitInfo{Stage: "ordered"}
	o := NewOutput(l, tx, Spec{Index: 0, Count: 2})
	if _, err := NewOrderedTable(ctx, o, schemas.Trajectories, TableOptions{}, info, 1); err == nil {
		t.Fatal("no chunk: no error")
	}
	ot, err := NewOrderedTable(ctx, o, schemas.Trajectories, TableOptions{Chunk: 2}, info, 1)
	if err != nil {
		t.Fatal(err)
	}
	row := func(id string) schemas.Trajectory {
		return schemas.Trajectory{TrajectoryID: id, TaskID: "t", GroupID: "g", Outcome: schemas.OutcomeSuccess, Source: "rollout"}
	}
	if err := ot.Add(row("b"), row("c")); err != nil {
		t.Fatal(err)
	}
	if err := ot.Add(row("a")); err == nil || !strings.Contains(err.Error(), "key order") {
		t.Fatalf("out of order: %v", err)
	}
	if err := ot.Add(row("c")); err == nil || !strings.Contains(err.Error(), "duplicate key") {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := o.Finish(ctx, lake.CommitInfo{Stage: "ordered", Message: "other"}); err == nil {
		t.Fatal("Finish with other commit info: no error")
	}
	// Dedup keeps one copy of equal keys.
	tx, _ = l.Begin(ctx, "")
	o = NewOutput(l, tx, Spec{})
	ot, _ = NewOrderedTable(ctx, o, schemas.Trajectories, TableOptions{Chunk: 2, Dedup: true, Replace: true}, info, 2)
	if err := ot.Add(row("a"), row("a"), row("b"), row("c"), row("c")); err != nil {
		t.Fatal(err)
	}
	res, err := o.Finish(ctx, info)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	rows, _ := lake.ReadTable(ctx, l, res.Manifest, schemas.Trajectories)
	for _, r := range rows {
		ids = append(ids, r.TrajectoryID)
	}
	if !slices.Equal(ids, []string{"a", "b", "c"}) || len(res.Manifest.Tables[schemas.Trajectories.Name].Files) != 2 {
		t.Fatalf("dedup: %v in %d files", ids, len(res.Manifest.Tables[schemas.Trajectories.Name].Files))
	}
}
