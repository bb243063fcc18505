package segment

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/segment/internal/synth"
	"github.com/cualake/cualake/pipeline/shard"
	"github.com/cualake/cualake/schemas"
)

// shardInput commits d into a new lake at dir; with prior, a second commit
// adds rejects of another stage and of an earlier segment run.
func shardInput(t *testing.T, dir string, d synth.Data, prior bool) (*lake.Lake, *lake.Manifest) {
	t.Helper()
	l, m := commitData(t, dir, d, true)
	if !prior {
		return l, m
	}
	ctx := context.Background()
	tx, err := l.Begin(ctx, m.ID)
	must(t, err)
	var rj []schemas.Reject
	for i := 0; i < 5; i++ {
		rj = append(rj, schemas.Reject{Stage: "import", Source: fmt.Sprintf("logs/run-%d.jsonl", i), Line: int32(10 * i), Table: "steps",
			Field: "action", Reason: "unknown action", Raw: "{}"})
	}
	rj = append(rj, schemas.Reject{Stage: Stage, Source: "trajectories/traj-0000099", Line: -1, Table: "segments", Field: "task_id",
		Reason: "an earlier run's", Raw: "{}"})
	must(t, lake.ReplaceTable(ctx, tx, schemas.Rejects, rj))
	m, err = tx.Commit(ctx, lake.CommitInfo{Stage: "fixture", Message: "rejects"})
	must(t, err)
	return l, m
}

// badData breaks a few trajectories (a missing screenshot, a token id
// beyond the vocabulary, an unknown task, two runs of orphan steps): five
// rejects.
func badData(enc *fakeEncoder, d synth.Data) synth.Data {
	d.Steps[10].Observation = strings.Repeat("0", 64)
	for i := len(d.Steps) - 10; i < len(d.Steps); i++ {
		if st := &d.Steps[i]; st.TrajectoryID != d.Steps[10].TrajectoryID && len(st.ResponseIDs) > 0 {
			st.ResponseIDs[0] = int32(enc.VocabSize() + 5)
			break
		}
	}
	d.Trajectories[17].TaskID = "no-such-task"
	d.Steps = append(d.Steps, schemas.Step{TrajectoryID: "traj-0000004x", Step: 0, ActionKind: "wait"},
		schemas.Step{TrajectoryID: "traj-0000031x", Step: 0, ActionKind: "wait"})
	schemas.Steps.Sort(d.Steps)
	return d
}

// TestRunShardedEqualsUnsharded: N = 1, 2, 3, 7 shards merged commit the
// snapshot an unsharded run commits (same files, same id), for the
// segments and for the rejects table in each of its cases: quarantined
// trajectories next to other stages' rejects and an earlier segment run's;
// an earlier run's rejects dropped without --quarantine; no rejects table
// at all; an empty one with --quarantine.
func TestRunShardedEqualsUnsharded(t *testing.T) {
	enc := newFakeEncoder()
	good := smallData(enc, 30)
	bad := badData(enc, smallData(enc, 30))
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		d       synth.Data
		prior   bool
		prm     Params
		rejects int // -1: no rejects table
	}{
		{"quarantine", bad, true, Params{Mode: ModeWindow, K: 2, Delta: 3, Quarantine: true}, 5 + 5},
		{"drop-old-rejects", good, true, Params{Mode: ModeStep, Window: 2}, 5},
		{"no-rejects", good, false, Params{Mode: ModeTrajectory}, -1},
		{"quarantine-nothing", good, false, Params{Mode: ModeWindow, K: 5, Delta: 5, Quarantine: true}, 0},
	} {
		tc.prm.Workers, tc.prm.FileRows = 3, 8
		cfg := config(enc, tc.prm)
		l, in := shardInput(t, filepath.Join(t.TempDir(), "ref"), tc.d, tc.prior)
		ref, err := Run(ctx, l, in, cfg)
		must(t, err)
		want := ref.Manifest
		rj, err := lake.ReadTable(ctx, l, want, schemas.Rejects)
		must(t, err)
		if _, ok := want.Tables[schemas.Rejects.Name]; (tc.rejects < 0 && ok) || (tc.rejects >= 0 && len(rj) != tc.rejects) {
			t.Fatalf("%s: %d rejects (table present: %v), want %d", tc.name, len(rj), ok, tc.rejects)
		}
		for _, r := range rj {
			if r.Source == "trajectories/traj-0000099" {
				t.Fatalf("%s: an earlier segment run's reject survived", tc.name)
			}
		}
		if len(ref.Files) < 3 {
			t.Fatalf("%s: %d files; want several", tc.name, len(ref.Files))
		}
		for _, n := range []int{1, 2, 3, 7} {
			l, m := shardInput(t, filepath.Join(t.TempDir(), fmt.Sprint("n", n)), tc.d, tc.prior)
			if m.ID != in.ID {
				t.Fatalf("inputs differ: %s %s", m.ID, in.ID)
			}
			var items int64
			var rejected int
			for i := n - 1; i >= 0; i-- {
				c := cfg
				c.Shard = shard.Spec{Index: i, Count: n}
				res, err := Run(ctx, l, m, c)
				if err != nil {
					t.Fatalf("%s: shard %d/%d: %v", tc.name, i, n, err)
				}
				if res.Fragment == nil || res.Manifest != nil {
					t.Fatalf("%s: shard %d/%d committed", tc.name, i, n)
				}
				if head, _ := l.Head(ctx); head != m.ID {
					t.Fatalf("%s: shard %d/%d moved main", tc.name, i, n)
				}
				items += res.Summary.Items
				rejected += res.Summary.Rejected
				if res.Summary.Files != len(res.Files) || int64(len(res.Files)) != (res.Summary.Items+7)/8 {
					t.Fatalf("%s: shard %d/%d: %d files for %d items", tc.name, i, n, len(res.Files), res.Summary.Items)
				}
			}
			if items != ref.Summary.Items || rejected != ref.Summary.Rejected {
				t.Fatalf("%s N=%d: shards made %d items, %d rejects; unsharded %d, %d", tc.name, n, items, rejected, ref.Summary.Items, ref.Summary.Rejected)
			}
			mr, err := shard.Merge(ctx, l, shard.MergeOptions{Stage: Stage, Input: m.ID, Shards: n, Clean: true})
			if err != nil {
				t.Fatalf("%s N=%d: merge: %v", tc.name, n, err)
			}
			if mr.Snapshot != want.ID {
				got := mr.Manifest
				t.Fatalf("%s N=%d: merged snapshot %s, unsharded %s\nsegments %v\nwant     %v\nrejects %v\nwant    %v", tc.name, n, mr.Snapshot, want.ID,
					got.Tables["segments"].Files, want.Tables["segments"].Files, got.Tables["rejects"], want.Tables["rejects"])
			}
			if !slices.Equal(mr.Manifest.Tables[schemas.Segments.Name].Files, ref.Files) {
				t.Fatalf("%s N=%d: other segments files", tc.name, n)
			}
		}
	}
}

// TestRunShardOwnsItsTrajectories: a shard segments exactly its
// trajectories, quarantines exactly its bad ones, counts the others in its
// progress, and a re-run shard writes the same fragment.
func TestRunShardOwnsItsTrajectories(t *testing.T) {
	enc := newFakeEncoder()
	d := badData(enc, smallData(enc, 40))
	l, m := shardInput(t, filepath.Join(t.TempDir(), "lake"), d, false)
	ctx := context.Background()
	cfg := config(enc, Params{Mode: ModeStep, Window: 2, Workers: 2, Quarantine: true})
	spec := shard.Spec{Index: 1, Count: 3}
	cfg.Shard = spec
	done := 0
	cfg.Progress = func(n int) { done = n }
	res, err := Run(ctx, l, m, cfg)
	must(t, err)
	orphans := 0
	for _, id := range []string{"traj-0000004x", "traj-0000031x"} {
		if spec.Owns(id) {
			orphans++
		}
	}
	// Progress counts every trajectory and this shard's runs of orphan steps.
	if done != len(d.Trajectories)+orphans {
		t.Fatalf("progress %d, want %d trajectories + %d orphans", done, len(d.Trajectories), orphans)
	}
	rows := readFragment(t, ctx, l, res.Fragment.Tables[schemas.Segments.Name].Files)
	for _, r := range rows {
		if !spec.Owns(r.TrajectoryID) {
			t.Fatalf("shard %s segmented %s", spec, r.TrajectoryID)
		}
	}
	for _, r := range res.Rejects {
		if !spec.Owns(strings.TrimPrefix(r.Source, "trajectories/")) {
			t.Fatalf("shard %s rejected %s", spec, r.Source)
		}
	}
	owned := 0
	for _, tr := range d.Trajectories {
		if spec.Owns(tr.TrajectoryID) {
			owned++
		}
	}
	if got := res.Summary.Trajectories + res.Summary.Empty + res.Summary.Rejected; got != owned+orphans || res.Summary.Rejected == 0 {
		t.Fatalf("shard %s: %d trajectories accounted for (%d rejected), owns %d + %d orphans", spec, got, res.Summary.Rejected, owned, orphans)
	}
	again, err := Run(ctx, l, m, cfg)
	must(t, err)
	if again.Fragment.Key() != res.Fragment.Key() || !slices.Equal(again.Files, res.Files) {
		t.Fatal("a re-run shard wrote another fragment")
	}
}

// readFragment reads a fragment's segments files through a scratch
// manifest.
func readFragment(t *testing.T, ctx context.Context, l *lake.Lake, files []lake.File) []schemas.Segment {
	t.Helper()
	var rows int64
	for _, f := range files {
		rows += f.Rows
	}
	m := &lake.Manifest{Tables: map[string]lake.TableFiles{schemas.Segments.Name: {SchemaVersion: schemas.Segments.Version, Files: files, Rows: rows}}}
	out, err := lake.ReadTable(ctx, l, m, schemas.Segments)
	must(t, err)
	return out
}
