package lake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cualake/cualake/schemas"
)

func newLake(t *testing.T) (*Lake, string) {
	t.Helper()
	dir := t.TempDir()
	l, err := OpenDir(context.Background(), dir, true)
	if err != nil {
		t.Fatal(err)
	}
	l.Now = func() time.Time { return time.Unix(0, 0) }
	return l, dir
}

func fixtureTasks(n int) []schemas.Task {
	var out []schemas.Task
	for i := n - 1; i >= 0; i-- { // reverse order: the writer must sort
		out = append(out, schemas.Task{TaskID: fmt.Sprintf("t%03d", i), Domain: []string{"files", "sheet"}[i%2], App: "x",
			Instruction: fmt.Sprintf("do thing %d", i), Setup: "[]", Judge: `{"func":"exact_match"}`, Feasible: true,
			Source: schemas.SourceSeed, Abilities: []string{"a"}, Split: "train"})
	}
	return out
}

// TestCommitRefusesADamagedCarriedTable: a commit that carries forward a
// table whose file is truncated or missing (a stage that does not read it)
// fails naming the file, and the branch stays where it was.
func TestCommitRefusesADamagedCarriedTable(t *testing.T) {
	ctx := context.Background()
	l, dir := newLake(t)
	m := commitTasks(t, l, fixtureTasks(4), "tasks")
	fpath := filepath.Join(dir, filepath.FromSlash(m.Tables["tasks"].Files[0].Path))
	data, err := os.ReadFile(fpath)
	if err != nil {
		t.Fatal(err)
	}
	commitBlob := func() error {
		tx, err := l.Begin(ctx, "")
		if err != nil {
			return err
		}
		if err := AppendTable(ctx, tx, schemas.Blobs, []schemas.Blob{blobRow("b")}); err != nil {
			return err
		}
		_, err = tx.Commit(ctx, CommitInfo{Stage: "blobs"})
		return err
	}
	for _, c := range []struct {
		damage func() error
		want   string
	}{
		{func() error { return os.WriteFile(fpath, data[:len(data)/2], 0o644) }, fmt.Sprintf("is %d bytes, its manifest says %d", len(data)/2, len(data))},
		{func() error { return os.Remove(fpath) }, "is missing"},
	} {
		if err := c.damage(); err != nil {
			t.Fatal(err)
		}
		err := commitBlob()
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "table tasks: file "+m.Tables["tasks"].Files[0].Path) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("commit over a damaged table: %v, want %q", err, c.want)
		}
		if head, _ := l.At(ctx, ""); head.ID != m.ID {
			t.Fatalf("a refused commit moved main to %s", head.ID)
		}
	}
	if err := os.WriteFile(fpath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := commitBlob(); err != nil {
		t.Fatalf("after repair: %v", err)
	}
}

func commitTasks(t *testing.T, l *Lake, rows []schemas.Task, stage string) *Manifest {
	t.Helper()
	ctx := context.Background()
	tx, err := l.Begin(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := ReplaceTable(ctx, tx, schemas.Tasks, rows); err != nil {
		t.Fatal(err)
	}
	m, err := tx.Commit(ctx, CommitInfo{Stage: stage, Params: map[string]int{"n": len(rows)}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCommitReadRoundTrip(t *testing.T) {
	ctx := context.Background()
	l, _ := newLake(t)
	m := commitTasks(t, l, fixtureTasks(10), "test")
	if m.Parent != "" || m.Tables["tasks"].Rows != 10 {
		t.Fatalf("manifest: %+v", m)
	}
	head, _ := l.Head(ctx)
	if head != m.ID {
		t.Fatalf("head %s, want %s", head, m.ID)
	}
	got, err := ReadTable(ctx, l, m, schemas.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 || got[0].TaskID != "t000" || got[9].TaskID != "t009" || got[3].Abilities[0] != "a" {
		t.Fatalf("rows not read back sorted: %+v", got[:2])
	}
}

func TestSameRowsSameBytes(t *testing.T) {
	l1, _ := newLake(t)
	l2, _ := newLake(t)
	m1 := commitTasks(t, l1, fixtureTasks(50), "test")
	rows := fixtureTasks(50)
	rows[0], rows[10] = rows[10], rows[0] // input order must not matter
	m2 := commitTasks(t, l2, rows, "test")
	if m1.ID != m2.ID || m1.Tables["tasks"].Files[0].SHA256 != m2.Tables["tasks"].Files[0].SHA256 {
		t.Fatalf("same rows gave different snapshots: %s vs %s", m1.ID, m2.ID)
	}
	// Wall-clock time is not part of the id.
	l2.Now = func() time.Time { return time.Unix(1e9, 0) }
	m3 := commitTasks(t, l2, fixtureTasks(51), "test")
	l1.Now = func() time.Time { return time.Unix(2e9, 0) }
	m4 := commitTasks(t, l1, fixtureTasks(51), "test")
	if m3.ID != m4.ID {
		t.Fatalf("commit time changed the snapshot id")
	}
}

func TestTimeTravelTagsAndLog(t *testing.T) {
	ctx := context.Background()
	l, _ := newLake(t)
	m1 := commitTasks(t, l, fixtureTasks(3), "one")
	if _, err := l.Tag(ctx, "release/2026-11", m1.ID[:10]); err != nil {
		t.Fatal(err)
	}
	m2 := commitTasks(t, l, fixtureTasks(5), "two")
	if m2.Parent != m1.ID {
		t.Fatalf("parent %s, want %s", m2.Parent, m1.ID)
	}
	old, err := l.At(ctx, "release/2026-11")
	if err != nil || old.ID != m1.ID {
		t.Fatalf("tag resolves to %v, %v", old, err)
	}
	rows, _ := ReadTable(ctx, l, old, schemas.Tasks)
	if len(rows) != 3 {
		t.Fatalf("time travel read %d rows, want 3", len(rows))
	}
	if _, err := l.Tag(ctx, "release/2026-11", m2.ID); !errors.Is(err, ErrExist) {
		t.Fatalf("moving a tag: %v", err)
	}
	log, _ := l.Log(ctx, "", 0)
	if len(log) != 2 || log[0].ID != m2.ID || log[1].ID != m1.ID {
		t.Fatalf("log: %d entries", len(log))
	}
	if _, err := l.At(ctx, "nope"); !errors.Is(err, ErrNotExist) || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("unknown ref: %v", err)
	}
}

func TestAppendSharesFiles(t *testing.T) {
	ctx := context.Background()
	l, _ := newLake(t)
	m1 := commitTasks(t, l, fixtureTasks(3), "one")
	tx, _ := l.Begin(ctx, "")
	blobs := []schemas.Blob{{Hash: schemas.HashBytes([]byte("x")), Mime: "text/plain", Size: 1, Bytes: []byte("x")}}
	if err := AppendTable(ctx, tx, schemas.Blobs, blobs); err != nil {
		t.Fatal(err)
	}
	m2, err := tx.Commit(ctx, CommitInfo{Stage: "blobs"})
	if err != nil {
		t.Fatal(err)
	}
	if m2.Tables["tasks"].Files[0] != m1.Tables["tasks"].Files[0] || m2.Tables["blobs"].Rows != 1 {
		t.Fatalf("carry-over broken: %+v", m2.Tables)
	}
	if strings.Join(m2.Changed, ",") != "blobs" {
		t.Fatalf("changed = %v", m2.Changed)
	}
}

func TestInvalidRowsCommitNothing(t *testing.T) {
	ctx := context.Background()
	l, dir := newLake(t)
	rows := fixtureTasks(3)
	rows[1].Source = "bogus"
	tx, _ := l.Begin(ctx, "")
	err := ReplaceTable(ctx, tx, schemas.Tasks, rows)
	if !errors.Is(err, schemas.ErrInvalidRow) || !strings.Contains(err.Error(), "source") {
		t.Fatalf("want invalid row naming source, got %v", err)
	}
	if head, _ := l.Head(ctx); head != "" {
		t.Fatal("a failed write moved the head")
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "snapshots")); len(entries) != 0 {
		t.Fatal("a failed write left a manifest")
	}
	dup := fixtureTasks(2)
	dup[1].TaskID = dup[0].TaskID
	if err := ReplaceTable(ctx, tx, schemas.Tasks, dup); err == nil || !strings.Contains(err.Error(), "duplicate key") {
		t.Fatalf("duplicate keys: %v", err)
	}
}

func TestBadManifestsAndFiles(t *testing.T) {
	ctx := context.Background()
	l, dir := newLake(t)
	m := commitTasks(t, l, fixtureTasks(4), "one")
	mpath := filepath.Join(dir, "snapshots", m.ID+".json")
	orig, _ := os.ReadFile(mpath)

	// Altered manifest: the id no longer matches the content.
	os.WriteFile(mpath, []byte(strings.Replace(string(orig), `"stage": "one"`, `"stage": "two"`, 1)), 0o644)
	if _, err := l.Snapshot(ctx, m.ID); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), m.ID) {
		t.Fatalf("altered manifest: %v", err)
	}
	// Malformed JSON.
	os.WriteFile(mpath, []byte("{not json"), 0o644)
	if _, err := l.Snapshot(ctx, m.ID); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "snapshots/") {
		t.Fatalf("malformed manifest: %v", err)
	}
	// Unknown schema version: rebuild a manifest whose hash is consistent.
	bad := *m
	bad.Tables = map[string]TableFiles{"tasks": {SchemaVersion: 99, Files: m.Tables["tasks"].Files, Rows: 4}}
	bad.ID, _ = bad.ContentHash()
	body, _ := bad.Encode()
	if _, err := DecodeManifest("x.json", body); err == nil || !strings.Contains(err.Error(), "schema version 99") {
		t.Fatalf("unknown schema version: %v", err)
	}
	os.WriteFile(mpath, orig, 0o644)

	// Missing and altered data files.
	fpath := filepath.Join(dir, filepath.FromSlash(m.Tables["tasks"].Files[0].Path))
	data, _ := os.ReadFile(fpath)
	altered := append([]byte{}, data...)
	altered[len(altered)-1] ^= 0xff
	os.WriteFile(fpath, altered, 0o644)
	rep, err := l.Verify(ctx, nil)
	if err != nil || rep.OK() || !strings.Contains(rep.Problems[0].Problem, "sha256") {
		t.Fatalf("verify missed an altered file: %+v %v", rep, err)
	}
	os.Remove(fpath)
	if _, err := ReadTable(ctx, l, m, schemas.Tasks); !errors.Is(err, ErrNotExist) || !strings.Contains(err.Error(), m.Tables["tasks"].Files[0].Path) {
		t.Fatalf("missing file: %v", err)
	}
	rep, _ = l.Verify(ctx, nil)
	if rep.OK() {
		t.Fatal("verify passed with a missing file")
	}
	os.WriteFile(fpath, data, 0o644)
	if rep, _ = l.Verify(ctx, nil); !rep.OK() {
		t.Fatalf("verify after repair: %+v", rep.Problems)
	}
}

func TestConflictAndRebase(t *testing.T) {
	ctx := context.Background()
	l, _ := newLake(t)
	commitTasks(t, l, fixtureTasks(2), "base")

	// Two writers on the same parent touching the same table: one conflicts.
	a, _ := l.Begin(ctx, "")
	b, _ := l.Begin(ctx, "")
	ReplaceTable(ctx, a, schemas.Tasks, fixtureTasks(3))
	ReplaceTable(ctx, b, schemas.Tasks, fixtureTasks(4))
	if _, err := a.Commit(ctx, CommitInfo{Stage: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Commit(ctx, CommitInfo{Stage: "b"}); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "tasks") {
		t.Fatalf("want conflict on tasks, got %v", err)
	}
	// Disjoint tables: the second rebases and both updates survive.
	c, _ := l.Begin(ctx, "")
	d, _ := l.Begin(ctx, "")
	ReplaceTable(ctx, c, schemas.Tasks, fixtureTasks(5))
	AppendTable(ctx, d, schemas.Blobs, []schemas.Blob{{Hash: schemas.HashBytes(nil), Mime: "x", Bytes: []byte{}}})
	if _, err := c.Commit(ctx, CommitInfo{Stage: "c"}); err != nil {
		t.Fatal(err)
	}
	md, err := d.Commit(ctx, CommitInfo{Stage: "d"})
	if err != nil {
		t.Fatalf("disjoint commit should rebase: %v", err)
	}
	if md.Tables["tasks"].Rows != 5 || md.Tables["blobs"].Rows != 1 {
		t.Fatalf("rebase lost an update: %+v", md.Tables)
	}
}

// TestConcurrentCommitters runs many goroutines appending to disjoint and
// shared tables; every commit either lands or reports a conflict, and the
// final head holds every landed update.
func TestConcurrentCommitters(t *testing.T) {
	ctx := context.Background()
	l, _ := newLake(t)
	commitTasks(t, l, fixtureTasks(1), "base")
	var wg sync.WaitGroup
	var mu sync.Mutex
	landed := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			tx, err := l.Begin(ctx, "")
			if err != nil {
				t.Error(err)
				return
			}
			b := []byte(fmt.Sprint(i))
			AppendTable(ctx, tx, schemas.Blobs, []schemas.Blob{{Hash: schemas.HashBytes(b), Mime: "x", Size: int64(len(b)), Bytes: b}})
			_, err = tx.Commit(ctx, CommitInfo{Stage: fmt.Sprint("w", i)})
			if err != nil && !errors.Is(err, ErrConflict) {
				t.Error(err)
			}
			if err == nil {
				mu.Lock()
				landed++
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	head, _ := l.At(ctx, "")
	if int(head.Tables["blobs"].Rows) != landed {
		t.Fatalf("head has %d blobs but %d commits landed: an update was lost", head.Tables["blobs"].Rows, landed)
	}
	if landed == 0 {
		t.Fatal("no commit landed")
	}
}

func TestGCRemovesOnlyUnreferenced(t *testing.T) {
	ctx := context.Background()
	l, dir := newLake(t)
	m := commitTasks(t, l, fixtureTasks(2), "one")
	orphan := filepath.Join(dir, "data", "tasks", strings.Repeat("a", 64)+".parquet")
	os.WriteFile(orphan, []byte("junk"), 0o644)
	os.MkdirAll(filepath.Join(dir, "tmp"), 0o755)
	os.WriteFile(filepath.Join(dir, "tmp", "tasks.tmp-123"), []byte("partial"), 0o644)
	rep, err := l.GC(ctx, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Removed) != 2 || rep.Kept != 1 {
		t.Fatalf("gc: %+v", rep)
	}
	if _, err := ReadTable(ctx, l, m, schemas.Tasks); err != nil {
		t.Fatalf("gc removed a live file: %v", err)
	}
}

// TestKillDuringCommit kills a committing child process at many points and
// checks that the lake always opens at a committed snapshot and verifies.
func TestKillDuringCommit(t *testing.T) {
	if os.Getenv("CUALAKE_CRASH_CHILD") != "" {
		crashChild()
		return
	}
	if testing.Short() {
		t.Skip("kill loop skipped in -short mode")
	}
	ctx := context.Background()
	_, dir := newLake(t)
	// 12 kills at growing delays, then, on a loaded machine where no child
	// got as far as a commit in those, longer ones until one has landed.
	landed := false
	for i := 0; i < 12 || (!landed && i < 40); i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillDuringCommit$")
		cmd.Env = append(os.Environ(), "CUALAKE_CRASH_CHILD="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		delay := time.Duration(20+i*15) * time.Millisecond
		if i >= 12 {
			delay = time.Duration(200+(i-12)*100) * time.Millisecond
		}
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		l, err := OpenDir(ctx, dir, false)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := l.Verify(ctx, nil)
		if err != nil || !rep.OK() {
			t.Fatalf("after kill %d: verify: %+v %v", i, rep, err)
		}
		if m, err := l.At(ctx, ""); err == nil {
			if _, err := ReadTable(ctx, l, m, schemas.Tasks); err != nil {
				t.Fatalf("after kill %d: head unreadable: %v", i, err)
			}
			landed = true
		} else if !errors.Is(err, ErrNotExist) {
			t.Fatal(err)
		}
	}
	l, _ := OpenDir(ctx, dir, false)
	if _, err := l.GC(ctx, false, 0); err != nil {
		t.Fatal(err)
	}
	if rep, _ := l.Verify(ctx, nil); !rep.OK() {
		t.Fatalf("after gc: %+v", rep.Problems)
	}
	if log, _ := l.Log(ctx, "", 0); len(log) == 0 {
		t.Fatal("no commit ever landed during the kill loop")
	}
}

// crashChild commits forever until killed.
func crashChild() {
	ctx := context.Background()
	l, err := OpenDir(ctx, os.Getenv("CUALAKE_CRASH_CHILD"), false)
	if err != nil {
		os.Exit(2)
	}
	for i := 1; ; i++ {
		tx, err := l.Begin(ctx, "")
		if err != nil {
			os.Exit(3)
		}
		if err := ReplaceTable(ctx, tx, schemas.Tasks, fixtureTasks(200+i)); err != nil {
			os.Exit(4)
		}
		if _, err := tx.Commit(ctx, CommitInfo{Stage: "crash"}); err != nil {
			os.Exit(5)
		}
	}
}

func TestBlobHashesAndBlob(t *testing.T) {
	ctx := context.Background()
	l, _ := newLake(t)
	tx, _ := l.Begin(ctx, "")
	var blobs []schemas.Blob
	for i := 0; i < 100; i++ {
		b := []byte(fmt.Sprint("blob", i))
		blobs = append(blobs, schemas.Blob{Hash: schemas.HashBytes(b), Mime: "text/plain", Size: int64(len(b)), Bytes: b})
	}
	AppendTable(ctx, tx, schemas.Blobs, blobs)
	m, err := tx.Commit(ctx, CommitInfo{Stage: "b"})
	if err != nil {
		t.Fatal(err)
	}
	hs, err := BlobHashes(ctx, l, m)
	if err != nil || len(hs) != 100 || !hs[schemas.HashBytes([]byte("blob7"))] {
		t.Fatalf("hashes: %d %v", len(hs), err)
	}
	b, err := Blob(ctx, l, m, schemas.HashBytes([]byte("blob42")))
	if err != nil || string(b.Bytes) != "blob42" {
		t.Fatalf("blob: %v %v", b, err)
	}
	if _, err := Blob(ctx, l, m, "ff"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("missing blob: %v", err)
	}
}

func TestNoChangeCommitIsNoOp(t *testing.T) {
	l, _ := newLake(t)
	m1 := commitTasks(t, l, fixtureTasks(3), "one")
	m2 := commitTasks(t, l, fixtureTasks(3), "again")
	if m2.ID != m1.ID {
		t.Fatal("a commit that changes no data made a new snapshot")
	}
	if log, _ := l.Log(context.Background(), "", 0); len(log) != 1 {
		t.Fatalf("log has %d entries", len(log))
	}
}

func blobRow(s string) schemas.Blob {
	return schemas.Blob{Hash: schemas.HashBytes([]byte(s)), Mime: "text/plain", Size: int64(len(s)), Bytes: []byte(s)}
}

// TestContentAddressedAppendsCommute: two commits on one parent that both
// only append disjoint hashes to blobs land in either order with every row
// kept (the async loop's rollout and train); the same hash appended by both,
// an append over a replace, and appends to a keyed table that is not
// content-addressed still conflict.
func TestContentAddressedAppendsCommute(t *testing.T) {
	ctx := context.Background()
	l, _ := newLake(t)
	commitTasks(t, l, fixtureTasks(2), "base")
	begin := func() *Txn {
		tx, err := l.Begin(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		return tx
	}
	a, b := begin(), begin()
	if err := AppendTable(ctx, a, schemas.Blobs, []schemas.Blob{blobRow("screenshot")}); err != nil {
		t.Fatal(err)
	}
	if err := AppendTable(ctx, b, schemas.Blobs, []schemas.Blob{blobRow("checkpoint"), blobRow("tree")}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Commit(ctx, CommitInfo{Stage: "rollout"}); err != nil {
		t.Fatal(err)
	}
	mb, err := b.Commit(ctx, CommitInfo{Stage: "train"})
	if err != nil {
		t.Fatalf("disjoint blob appends must rebase: %v", err)
	}
	if got := mb.Tables["blobs"].Rows; got != 3 {
		t.Fatalf("blobs after both appends: %d rows, want 3", got)
	}
	hashes, err := BlobHashes(ctx, l, mb)
	if err != nil || len(hashes) != 3 {
		t.Fatalf("blob hashes %v %v", hashes, err)
	}

	// The same hash from both: rebasing would duplicate a row.
	c, d := begin(), begin()
	AppendTable(ctx, c, schemas.Blobs, []schemas.Blob{blobRow("same")})
	AppendTable(ctx, d, schemas.Blobs, []schemas.Blob{blobRow("same"), blobRow("other")})
	if _, err := c.Commit(ctx, CommitInfo{Stage: "c"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(ctx, CommitInfo{Stage: "d"}); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "blobs") {
		t.Fatalf("a hash appended by both must conflict, got %v", err)
	}

	// A replace meanwhile: the append's base is gone.
	e, f := begin(), begin()
	ReplaceTable(ctx, e, schemas.Blobs, []schemas.Blob{blobRow("only")})
	AppendTable(ctx, f, schemas.Blobs, []schemas.Blob{blobRow("more")})
	if _, err := e.Commit(ctx, CommitInfo{Stage: "e"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Commit(ctx, CommitInfo{Stage: "f"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("an append over a concurrent replace must conflict, got %v", err)
	}

	// Keyed but not content-addressed: appends still conflict.
	g, h := begin(), begin()
	AppendTable(ctx, g, schemas.Tasks, fixtureTasks(3)[2:])
	more := fixtureTasks(4)[3:]
	AppendTable(ctx, h, schemas.Tasks, more)
	if _, err := g.Commit(ctx, CommitInfo{Stage: "g"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Commit(ctx, CommitInfo{Stage: "h"}); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "tasks") {
		t.Fatalf("appends to tasks must conflict, got %v", err)
	}
}

// TestNestedLakeRefused: a lake cannot be opened or initialised inside
// another lake's folder (lake init --lake X/data made one that gc on X
// would delete), and gc never deletes a folder holding a lake marker of its
// own, as one made by an older cualake.
func TestNestedLakeRefused(t *testing.T) {
	ctx := context.Background()
	outer, dir := newLake(t)
	commitTasks(t, outer, fixtureTasks(2), "base")
	for _, sub := range []string{"data", "data/x/y", "elsewhere"} {
		_, err := OpenDir(ctx, filepath.Join(dir, sub), true)
		if !errors.Is(err, ErrNestedLake) || !strings.Contains(err.Error(), dir+" holds the lake marker lake.json") {
			t.Errorf("init inside %s: %v, want ErrNestedLake naming the outer lake", sub, err)
		}
	}
	// An unrelated lake.json above a folder does not make it a nested lake.
	other := filepath.Join(t.TempDir(), "proj")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "lake.json"), []byte(`{"name": "not a cualake lake"}`), 0o644)
	if _, err := OpenDir(ctx, filepath.Join(other, "L"), true); err != nil {
		t.Errorf("a lake below an unrelated lake.json: %v", err)
	}
	// A nested lake made by hand (or an older cualake): gc keeps all of it.
	inner := filepath.Join(dir, "data", "inner")
	if _, err := Init(ctx, mustLocal(t, inner)); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(inner, "tmp"), 0o755)
	os.WriteFile(filepath.Join(inner, "tmp", "stage.partial"), []byte("x"), 0o644)
	if _, err := OpenDir(ctx, inner, false); !errors.Is(err, ErrNestedLake) {
		t.Errorf("open the nested lake: %v, want ErrNestedLake", err)
	}
	rep, err := outer.GC(ctx, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Removed {
		if strings.Contains(r, "inner") {
			t.Errorf("gc removed %s of the nested lake", r)
		}
	}
	for _, f := range []string{"lake.json", "tmp/stage.partial"} {
		if _, err := os.Stat(filepath.Join(inner, f)); err != nil {
			t.Errorf("nested lake's %s: %v", f, err)
		}
	}
}

func mustLocal(t *testing.T, dir string) *Local {
	t.Helper()
	s, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
