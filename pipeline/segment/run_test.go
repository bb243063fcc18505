package segment

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/chat"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/segment/internal/synth"
	"github.com/cualake/cualake/pipeline/tokenizer"
	"github.com/cualake/cualake/schemas"
)

// commitData writes d into a new lake at dir. With split, odd and even
// trajectories go to two commits, so trajectories and steps each span two
// interleaved files that the stage must merge.
func commitData(t testing.TB, dir string, d synth.Data, split bool) (*lake.Lake, *lake.Manifest) {
	t.Helper()
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, dir, true)
	if err != nil {
		t.Fatal(err)
	}
	parts := [][2][]int{{nil, nil}}
	if split {
		parts = [][2][]int{{nil, nil}, {nil, nil}}
	}
	idx := map[string]int{}
	for i, tr := range d.Trajectories {
		k := 0
		if split {
			k = i % 2
		}
		idx[tr.TrajectoryID] = k
		parts[k][0] = append(parts[k][0], i)
	}
	for i, st := range d.Steps {
		k, ok := idx[st.TrajectoryID]
		if !ok {
			k = 0
		}
		parts[k][1] = append(parts[k][1], i)
	}
	var m *lake.Manifest
	for k, p := range parts {
		tx, err := l.Begin(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		var trs []schemas.Trajectory
		for _, i := range p[0] {
			trs = append(trs, d.Trajectories[i])
		}
		var sts []schemas.Step
		for _, i := range p[1] {
			sts = append(sts, d.Steps[i])
		}
		if k == 0 {
			must(t, lake.ReplaceTable(ctx, tx, schemas.Tasks, d.Tasks))
			if d.Blobs != nil {
				must(t, lake.ReplaceTable(ctx, tx, schemas.Blobs, d.Blobs))
			}
		}
		must(t, lake.AppendTable(ctx, tx, schemas.Trajectories, trs))
		must(t, lake.AppendTable(ctx, tx, schemas.Steps, sts))
		if m, err = tx.Commit(ctx, lake.CommitInfo{Stage: "fixture"}); err != nil {
			t.Fatal(err)
		}
	}
	return l, m
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func config(enc tokenizer.Encoder, prm Params) Config {
	if prm.Image == (ImageSpec{}) {
		prm.Image = chat.DefaultImageSpec()
	}
	if prm.System == "" {
		prm.System = DefaultSystem
	}
	return Config{Params: prm, Tokenizer: enc, TokenizerInfo: TokenizerInfo{File: "fake.json", SHA256: strings.Repeat("ab", 32)}}
}

func smallData(enc tokenizer.Encoder, n int) synth.Data {
	return synth.Generate(enc, synth.Options{Seed: 5, Trajectories: n, Turns: 17, VaryTurns: true, Screenshots: 3, Width: 96, Height: 64, GroupSize: 4})
}

// TestRunDeterministicAndComplete runs every mode with 1 and 4 workers on
// trajectories spread over two interleaved files: the data files are
// byte-identical, several of them, rows in key order, every response
// token trained once with its log-probability, item counts as predicted.
func TestRunDeterministicAndComplete(t *testing.T) {
	enc := newFakeEncoder()
	d := smallData(enc, 60)
	l, _ := commitData(t, filepath.Join(t.TempDir(), "lake"), d, true)
	ctx := context.Background()
	for _, prm := range []Params{{Mode: ModeTrajectory}, {Mode: ModeStep, Window: 3}, {Mode: ModeWindow, K: 2, Delta: 3}, {Mode: ModeWindow, K: 5, Delta: 5}} {
		// Each mode runs on the previous one's snapshot (replacing its
		// segments), every worker count on the same input.
		m, err := l.At(ctx, lake.MainRef)
		must(t, err)
		var first *Result
		for _, workers := range []int{1, 4, 3} {
			prm.Workers, prm.FileRows = workers, 16
			res, err := Run(ctx, l, m, config(enc, prm))
			if err != nil {
				t.Fatalf("%+v: %v", prm, err)
			}
			if first == nil {
				first = res
				continue
			}
			if !slices.Equal(res.Files, first.Files) || res.Summary != first.Summary || res.Manifest.ID != first.Manifest.ID {
				t.Fatalf("%s: %d workers gave other files, summary or snapshot than 1 worker", prm.Mode, workers)
			}
		}
		s := first.Summary
		t.Logf("%s: %d items, %d tokens, %d files", prm.Mode, s.Items, s.Tokens, s.Files)
		if len(first.Files) < 2 || s.Files != len(first.Files) {
			t.Fatalf("%s: want several files, got %d", prm.Mode, len(first.Files))
		}
		if s.Items != s.Expected.Items || s.Trajectories+s.Empty != len(d.Trajectories) || s.Rejected != 0 {
			t.Fatalf("%s: summary %+v", prm.Mode, s)
		}
		for i, f := range first.Files {
			if want := min(16, s.Items-16*int64(i)); f.Rows != want {
				t.Fatalf("%s: file %d holds %d rows, want %d", prm.Mode, i, f.Rows, want)
			}
		}
		// Read the files back as the committed table.
		m2 := first.Manifest
		if m2.Parent != m.ID || m2.Stage != Stage || !slices.Equal(m2.Tables[schemas.Segments.Name].Files, first.Files) {
			t.Fatalf("%s: commit %+v", prm.Mode, m2)
		}
		if _, ok := m2.Tables[schemas.Rejects.Name]; ok {
			t.Fatalf("%s: a run without --quarantine wrote a rejects table", prm.Mode)
		}
		rows, err := lake.ReadTable(ctx, l, m2, schemas.Segments)
		must(t, err)
		if int64(len(rows)) != s.Items {
			t.Fatalf("%s: %d rows, summary says %d", prm.Mode, len(rows), s.Items)
		}
		checkRows(t, prm, d, rows)
	}
}

// checkRows checks the segments of every trajectory against its steps.
func checkRows(t *testing.T, prm Params, d synth.Data, rows []schemas.Segment) {
	t.Helper()
	byTraj := map[string][]schemas.Segment{}
	for i, r := range rows {
		if i > 0 && schemas.Segments.Less(&r, &rows[i-1]) {
			t.Fatalf("rows out of key order at %d", i)
		}
		byTraj[r.TrajectoryID] = append(byTraj[r.TrajectoryID], r)
	}
	steps := map[string][]schemas.Step{}
	for _, st := range d.Steps {
		steps[st.TrajectoryID] = append(steps[st.TrajectoryID], st)
	}
	for _, tr := range d.Trajectories {
		segs := byTraj[tr.TrajectoryID]
		sts := steps[tr.TrajectoryID]
		if len(segs) != ExpectedItems(prm, len(sts)) {
			t.Fatalf("%s %s: %d items for %d turns", prm.Mode, tr.TrajectoryID, len(segs), len(sts))
		}
		var ids, want []int32
		var lps, wantLp []float32
		for _, st := range sts {
			want = append(want, st.ResponseIDs...)
			wantLp = append(wantLp, st.Logprobs...)
		}
		for k, sg := range segs {
			if sg.Index != int32(k) || sg.Reward != tr.Reward || sg.GroupID != tr.GroupID || sg.PolicyVersion != tr.PolicyVersion ||
				sg.TrajectorySteps != int32(len(sts)) || sg.Mode != string(prm.Mode) || !sg.HasLogprobs || sg.TaskID != tr.TaskID {
				t.Fatalf("%s %s item %d: metadata %+v", prm.Mode, tr.TrajectoryID, k, sg)
			}
			if prm.Mode == ModeWindow && sg.Images > int32(prm.K+prm.Delta) {
				t.Fatalf("%s: %d images", sg.SegmentID, sg.Images)
			}
			// each vision block names its turn's screenshot, turns in order
			if len(sg.ImageBlobs) != int(sg.Images) {
				t.Fatalf("%s: %d image blobs for %d images", sg.SegmentID, len(sg.ImageBlobs), sg.Images)
			}
			next := 0
			for _, h := range sg.ImageBlobs {
				for next < len(sts) && sts[next].Observation != h {
					next++
				}
				if next == len(sts) {
					t.Fatalf("%s: image blobs %v are not the turns' screenshots in order", sg.SegmentID, sg.ImageBlobs)
				}
				next++
			}
			for i, m := range sg.LossMask {
				if m == 1 {
					ids = append(ids, sg.InputIDs[i])
					lps = append(lps, sg.Logprobs[i])
				}
			}
		}
		if !slices.Equal(ids, want) || !slices.Equal(lps, wantLp) {
			t.Fatalf("%s %s: trained tokens are not the responses", prm.Mode, tr.TrajectoryID)
		}
	}
}

// TestRunBadInput: without --quarantine the first bad trajectory (in key
// order) fails the run with an error naming it and its step; with it, the
// bad trajectories become rejects and the rest is segmented.
func TestRunBadInput(t *testing.T) {
	enc := newFakeEncoder()
	d := synth.Generate(enc, synth.Options{Seed: 5, Trajectories: 12, Turns: 5, Screenshots: 3, Width: 96, Height: 64, GroupSize: 4})
	for i := range d.Steps {
		st := &d.Steps[i]
		switch {
		case st.TrajectoryID == "traj-0000003" && st.Step == 2:
			st.Observation = strings.Repeat("0", 64) // no such blob
		case st.TrajectoryID == "traj-0000005" && st.Step == 1:
			st.ResponseIDs[0] = int32(enc.VocabSize() + 5)
		}
	}
	d.Trajectories[7].TaskID = "no-such-task"
	d.Steps = append(d.Steps, schemas.Step{TrajectoryID: "traj-0000004x", Step: 0, ActionKind: "wait"}) // orphan
	schemas.Steps.Sort(d.Steps)
	l, m := commitData(t, filepath.Join(t.TempDir(), "lake"), d, false)
	ctx := context.Background()
	prm := Params{Mode: ModeWindow, K: 2, Delta: 2, Workers: 3}
	_, err := Run(ctx, l, m, config(enc, prm))
	var te *Error
	if !errors.As(err, &te) || te.TrajectoryID != "traj-0000003" || te.Step != 2 ||
		!strings.Contains(err.Error(), `trajectory "traj-0000003" step 2: observation: screenshot blob 0000`) {
		t.Fatalf("want the missing blob of traj-0000003 step 2, got %v", err)
	}
	prm.Quarantine = true
	res, err := Run(ctx, l, m, config(enc, prm))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Rejects {
		got = append(got, r.Source+" "+r.Field)
		if r.Stage != Stage || r.Table != "segments" || r.Reason == "" || r.Raw == "" {
			t.Fatalf("reject %+v", r)
		}
	}
	want := []string{"trajectories/traj-0000003 observation", "trajectories/traj-0000004x trajectory_id",
		"trajectories/traj-0000005 response_ids", "trajectories/traj-0000007 task_id"}
	if !slices.Equal(got, want) {
		t.Fatalf("rejects %v, want %v", got, want)
	}
	if res.Summary.Rejected != 4 || res.Summary.Trajectories != 9 {
		t.Fatalf("summary %+v", res.Summary)
	}
	m2 := res.Manifest
	rj, err := lake.ReadTable(ctx, l, m2, schemas.Rejects)
	must(t, err)
	if len(rj) != 4 {
		t.Fatalf("%d rejects committed", len(rj))
	}
	// A second run on that snapshot replaces, not duplicates, its rejects
	// (and, with the same output, commits nothing new).
	res2, err := Run(ctx, l, m2, config(enc, prm))
	must(t, err)
	if rj, _ := lake.ReadTable(ctx, l, res2.Manifest, schemas.Rejects); len(rj) != 4 || res2.Manifest.ID != m2.ID {
		t.Fatalf("%d rejects after a second run (snapshot %s, first %s)", len(rj), res2.Manifest.ID, m2.ID)
	}
}

// TestRunWithoutImages: imported logs without screenshots and without
// recorded ids: --image-tokens sizes the screenshots, responses are
// tokenized from their text and items say they carry no log-probabilities.
func TestRunWithoutImages(t *testing.T) {
	enc := newFakeEncoder()
	d := synth.Generate(enc, synth.Options{Seed: 9, Trajectories: 10, Turns: 6, Width: 64, Height: 64, TextOnly: true})
	d.Blobs = nil
	l, m := commitData(t, filepath.Join(t.TempDir(), "lake"), d, false)
	ctx := context.Background()
	_, err := Run(ctx, l, m, config(enc, Params{Mode: ModeStep, Window: 2}))
	if err == nil || !strings.Contains(err.Error(), "not in the blobs table (set --image-tokens") {
		t.Fatalf("want a missing blob error, got %v", err)
	}
	prm := Params{Mode: ModeStep, Window: 2, Image: ImageSpec{FixedTokens: 7}}
	res, err := Run(ctx, l, m, config(enc, prm))
	must(t, err)
	if res.Summary.Items != 60 || res.Summary.WithoutLogprobs != 60 || res.Summary.ImageTokens != 7*res.Summary.Images {
		t.Fatalf("summary %+v", res.Summary)
	}
	rows, err := lake.ReadTable(ctx, l, res.Manifest, schemas.Segments)
	must(t, err)
	for _, r := range rows {
		if r.HasLogprobs || slices.ContainsFunc(r.Logprobs, func(f float32) bool { return f != 0 }) {
			t.Fatalf("%s: logprobs claimed for an imported log", r.SegmentID)
		}
	}
}

// TestRunMemoryDoesNotGrow: the stage streams, so segmenting 8 times more
// trajectories must not take more memory. Live heap is sampled after forced
// collections: the peak of the raw heap mostly measures how late the GC
// collects the Parquet writers' garbage (a fresh zstd encoder of 16 MB and
// more per file written).
func TestRunMemoryDoesNotGrow(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	enc := newFakeEncoder()
	peak := func(n int) float64 {
		d := synth.Generate(enc, synth.Options{Seed: 3, Trajectories: n, Turns: 30, Screenshots: 2, Width: 64, Height: 64})
		l, m := commitData(t, filepath.Join(t.TempDir(), "lake"), d, false)
		d = synth.Data{}
		prm := Params{Mode: ModeWindow, K: 5, Delta: 5, Workers: 1, FileRows: 32, Image: ImageSpec{FixedTokens: 300}}
		stop, done := make(chan struct{}), make(chan struct{})
		var live uint64
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				live = max(live, ms.HeapAlloc)
			}
		}()
		res, err := Run(context.Background(), l, m, config(enc, prm))
		close(stop)
		<-done
		must(t, err)
		mb := float64(live) / (1 << 20)
		t.Logf("%d trajectories: %d items, %d tokens, %d files, live heap peak %.1f MB", n, res.Summary.Items, res.Summary.Tokens, len(res.Files), mb)
		return mb
	}
	small, large := peak(150), peak(1200)
	// Eight times the trajectories; the bound allows the larger input row
	// groups the Parquet reader holds and the noise of sampling the heap
	// every 100 ms (a peak may fall between samples), not growth with the
	// data, which would be about eight-fold.
	if large > 2*small+64 {
		t.Fatalf("live heap grew from %.1f MB (150 trajectories) to %.1f MB (1200)", small, large)
	}
}

// TestMergeAcrossFiles: rows of interleaved and disjoint appended files come
// out in key order, and a disjoint file is opened only when reached.
func TestMergeAcrossFiles(t *testing.T) {
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, filepath.Join(t.TempDir(), "lake"), true)
	must(t, err)
	var m *lake.Manifest
	for _, ids := range [][]string{{"b1", "b3", "b5"}, {"z1", "z2"}, {"b2", "b4"}, {"a0"}} {
		var rows []schemas.Trajectory
		for _, id := range ids {
			rows = append(rows, schemas.Trajectory{TrajectoryID: id, TaskID: "t", GroupID: "g", Outcome: "success"})
		}
		tx, _ := l.Begin(ctx, "")
		must(t, lake.AppendTable(ctx, tx, schemas.Trajectories, rows))
		m, err = tx.Commit(ctx, lake.CommitInfo{Stage: "fixture"})
		must(t, err)
	}
	mg := mergeTable(ctx, l, m, schemas.Trajectories, 2, schemas.Trajectories.Less)
	defer mg.Close()
	var got []string
	for {
		r, ok := mg.Next()
		if !ok {
			break
		}
		got = append(got, r.TrajectoryID)
		if r.TrajectoryID == "b5" && (len(mg.pending) != 1 || mg.pending[0].first.TrajectoryID != "z1") {
			t.Fatalf("the z file should still be closed at b5")
		}
	}
	must(t, mg.Err())
	if want := []string{"a0", "b1", "b2", "b3", "b4", "b5", "z1", "z2"}; !slices.Equal(got, want) {
		t.Fatalf("merged %v, want %v", got, want)
	}
}
