package lake

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cualake/cualake/schemas"
)

func countSnapshots(t *testing.T, l *Lake) int {
	t.Helper()
	ids, err := l.Snapshots(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return len(ids)
}

func hasProblem(rep *VerifyReport, key string, words ...string) bool {
	for _, p := range rep.Problems {
		if p.Key != key {
			continue
		}
		ok := true
		for _, w := range words {
			ok = ok && strings.Contains(p.Problem, w)
		}
		if ok {
			return true
		}
	}
	return false
}

// TestCorruptMainFailsEverything writes main in each malformed way: every
// command that reads it fails with ErrCorrupt naming the ref and what is
// wrong, no commit lands or leaves a manifest, verify reports it and gc
// refuses.
func TestCorruptMainFailsEverything(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, body, why string
		dir             bool
	}{
		{name: "empty", body: "", why: "empty"},
		{name: "newline only", body: "\n", why: "whitespace"},
		{name: "crlf", body: "ID\r\n", why: "CRLF"},
		{name: "no newline", body: "ID", why: "no trailing newline"},
		{name: "leading space", body: " ID\n", why: "whitespace"},
		{name: "two lines", body: "ID\nID\n", why: "2 lines"},
		{name: "upper case", body: "UPPER\n", why: "lowercase"},
		{name: "short id", body: "abc123\n", why: "not a 64-hex"},
		{name: "directory", dir: true, why: "directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, dir := newLake(t)
			m1 := commitTasks(t, l, fixtureTasks(3), "one")
			main := filepath.Join(dir, "refs", "heads", "main")
			if tc.dir {
				os.Remove(main)
				if err := os.MkdirAll(filepath.Join(main, "x"), 0o755); err != nil {
					t.Fatal(err)
				}
			} else {
				body := strings.ReplaceAll(tc.body, "ID", m1.ID)
				body = strings.ReplaceAll(body, "UPPER", strings.ToUpper(m1.ID))
				if err := os.WriteFile(main, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			isCorrupt := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "refs/heads/main") || !strings.Contains(err.Error(), tc.why) {
					t.Fatalf("%s: %v, want ErrCorrupt naming refs/heads/main and %q", what, err, tc.why)
				}
			}
			_, err := l.Head(ctx)
			isCorrupt("Head", err)
			_, err = l.Log(ctx, "", 0)
			isCorrupt("Log", err)
			_, err = l.Begin(ctx, "")
			isCorrupt("Begin", err)
			// A transaction begun on an explicit snapshot must not commit
			// over the corrupt ref either, nor leave a manifest behind.
			tx, err := l.Begin(ctx, m1.ID)
			if err != nil {
				t.Fatal(err)
			}
			if err := ReplaceTable(ctx, tx, schemas.Tasks, fixtureTasks(4)); err != nil {
				t.Fatal(err)
			}
			before := countSnapshots(t, l)
			_, err = tx.Commit(ctx, CommitInfo{Stage: "two"})
			isCorrupt("Commit", err)
			if n := countSnapshots(t, l); n != before {
				t.Fatalf("a refused commit left %d manifest(s)", n-before)
			}
			rep, err := l.Verify(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !hasProblem(rep, "refs/heads/main", tc.why) {
				t.Fatalf("verify does not report the corrupt ref: %+v", rep.Problems)
			}
			if _, err := l.GC(ctx, true, 0); err == nil || !strings.Contains(err.Error(), "refs/heads/main") {
				t.Fatalf("gc ran over a corrupt main: %v", err)
			}
		})
	}
}

// TestMissingMainIsDanglingHistory removes main from lakes with one and
// with several snapshots: it is a dangling history, not an empty lake.
func TestMissingMainIsDanglingHistory(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{1, 3} {
		l, dir := newLake(t)
		var last *Manifest
		for i := 0; i < n; i++ {
			last = commitTasks(t, l, fixtureTasks(3+i), "one")
		}
		if err := os.Remove(filepath.Join(dir, "refs", "heads", "main")); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Head(ctx); !errors.Is(err, ErrDanglingHistory) {
			t.Fatalf("%d snapshots: Head without main: %v, want ErrDanglingHistory", n, err)
		}
		if log, err := l.Log(ctx, "", 0); !errors.Is(err, ErrDanglingHistory) {
			t.Fatalf("%d snapshots: log says %d entries, %v", n, len(log), err)
		}
		if _, err := l.Begin(ctx, ""); !errors.Is(err, ErrDanglingHistory) || !strings.Contains(err.Error(), "--new-history") {
			t.Fatalf("%d snapshots: Begin on a dangling history: %v", n, err)
		}
		rep, err := l.Verify(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !hasProblem(rep, "refs/heads/main", "dangling", last.ID) {
			t.Fatalf("%d snapshots: verify does not name the dangling leaf %s: %+v", n, last.ID, rep.Problems)
		}
		if _, err := l.GC(ctx, true, 0); !errors.Is(err, ErrDanglingHistory) {
			t.Fatalf("%d snapshots: gc on a dangling history: %v", n, err)
		}
		before := countSnapshots(t, l)
		// Only an explicit new history starts a root there.
		tx, err := l.Begin(ctx, "", NewHistory())
		if err != nil {
			t.Fatal(err)
		}
		if err := ReplaceTable(ctx, tx, schemas.Tasks, fixtureTasks(1)); err != nil {
			t.Fatal(err)
		}
		m, err := tx.Commit(ctx, CommitInfo{Stage: "restart"})
		if err != nil {
			t.Fatal(err)
		}
		if m.Parent != "" || countSnapshots(t, l) != before+1 {
			t.Fatalf("new history: parent %q, %d snapshots", m.Parent, countSnapshots(t, l))
		}
		if rep, err := l.Verify(ctx, nil); err != nil || !rep.OK() {
			t.Fatalf("verify after a new history: %+v %v", rep, err)
		}
	}
}

// TestRootCommitRefusesDanglingHistory: a transaction begun on an empty
// lake may not start a root once a history appeared and lost its main.
func TestRootCommitRefusesDanglingHistory(t *testing.T) {
	ctx := context.Background()
	l, dir := newLake(t)
	tx, err := l.Begin(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := ReplaceTable(ctx, tx, schemas.Tasks, fixtureTasks(1)); err != nil {
		t.Fatal(err)
	}
	commitTasks(t, l, fixtureTasks(5), "other")
	os.Remove(filepath.Join(dir, "refs", "heads", "main"))
	before := countSnapshots(t, l)
	if _, err := tx.Commit(ctx, CommitInfo{Stage: "late"}); !errors.Is(err, ErrDanglingHistory) {
		t.Fatalf("root commit on a dangling history: %v", err)
	}
	if countSnapshots(t, l) != before {
		t.Fatal("the refused root commit left a manifest")
	}
	if _, err := os.Stat(filepath.Join(dir, "refs", "heads", "main")); !os.IsNotExist(err) {
		t.Fatalf("the refused root commit wrote main: %v", err)
	}
}

// TestCrashedFirstCommitIsNotDangling: a crash between the first manifest
// and the first ref leaves a parentless manifest and no main. That lake
// never had a history; it verifies and takes a new first commit.
func TestCrashedFirstCommitIsNotDangling(t *testing.T) {
	ctx := context.Background()
	src, _ := newLake(t)
	m := commitTasks(t, src, fixtureTasks(3), "first")
	l, dir := newLake(t)
	for _, f := range m.Tables["tasks"].Files {
		b, _ := os.ReadFile(filepath.Join(src.Storage().(*Local).Root(), f.Path))
		os.MkdirAll(filepath.Dir(filepath.Join(dir, f.Path)), 0o755)
		os.WriteFile(filepath.Join(dir, f.Path), b, 0o644)
	}
	body, _ := m.Encode()
	os.MkdirAll(filepath.Join(dir, "snapshots"), 0o755)
	os.WriteFile(filepath.Join(dir, "snapshots", m.ID+".json"), body, 0o644)

	if head, err := l.Head(ctx); err != nil || head != "" {
		t.Fatalf("Head after a crashed first commit: %q %v", head, err)
	}
	if rep, err := l.Verify(ctx, nil); err != nil || !rep.OK() {
		t.Fatalf("verify after a crashed first commit: %+v %v", rep, err)
	}
	m2 := commitTasks(t, l, fixtureTasks(4), "again")
	if m2.Parent != "" {
		t.Fatalf("first commit has parent %s", m2.Parent)
	}
	if _, err := os.Stat(filepath.Join(dir, "refs", "roots", m2.ID)); err != nil {
		t.Fatalf("the first commit recorded no root: %v", err)
	}
}

// TestGCRefusesBrokenHistory: gc must not delete the files of a snapshot a
// ref reaches whose manifest (or an ancestor's) is missing.
func TestGCRefusesBrokenHistory(t *testing.T) {
	ctx := context.Background()
	l, dir := newLake(t)
	m1 := commitTasks(t, l, fixtureTasks(3), "one")
	m2 := commitTasks(t, l, fixtureTasks(5), "two")
	if _, err := l.Tag(ctx, "first", m1.ID); err != nil {
		t.Fatal(err)
	}
	f2 := filepath.Join(dir, filepath.FromSlash(m2.Tables["tasks"].Files[0].Path))
	// The head's manifest is missing.
	os.Rename(filepath.Join(dir, "snapshots", m2.ID+".json"), filepath.Join(dir, "m2.json"))
	if _, err := l.GC(ctx, false, 0); err == nil || !strings.Contains(err.Error(), m2.ID) || !strings.Contains(err.Error(), "refs/heads/main") {
		t.Fatalf("gc with the head's manifest missing: %v", err)
	}
	if _, err := os.Stat(f2); err != nil {
		t.Fatalf("gc deleted a file of the head: %v", err)
	}
	os.Rename(filepath.Join(dir, "m2.json"), filepath.Join(dir, "snapshots", m2.ID+".json"))
	// An ancestor's manifest is missing: main and the tag both reach it.
	os.Rename(filepath.Join(dir, "snapshots", m1.ID+".json"), filepath.Join(dir, "m1.json"))
	if _, err := l.GC(ctx, false, 0); err == nil || !strings.Contains(err.Error(), m1.ID) {
		t.Fatalf("gc with an ancestor's manifest missing: %v", err)
	}
	os.Rename(filepath.Join(dir, "m1.json"), filepath.Join(dir, "snapshots", m1.ID+".json"))
	// A corrupt tag.
	os.WriteFile(filepath.Join(dir, "refs", "tags", "first"), []byte(m1.ID), 0o644)
	if _, err := l.GC(ctx, false, 0); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "refs/tags/first") {
		t.Fatalf("gc with a corrupt tag: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "refs", "tags", "first"), []byte(m1.ID+"\n"), 0o644)
	if _, err := l.GC(ctx, false, 0); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*Manifest{m1, m2} {
		if _, err := ReadTable(ctx, l, m, schemas.Tasks); err != nil {
			t.Fatalf("gc removed a file of %s: %v", m.ID, err)
		}
	}
}

// TestGCKeepsOrphanManifestFiles: files that only an unreachable manifest
// (a failed commit, an abandoned history) lists stay, so that snapshot
// still reads.
func TestGCKeepsOrphanManifestFiles(t *testing.T) {
	ctx := context.Background()
	l, _ := newLake(t)
	base := commitTasks(t, l, fixtureTasks(2), "base")
	a, _ := l.Begin(ctx, "")
	b, _ := l.Begin(ctx, "")
	ReplaceTable(ctx, a, schemas.Tasks, fixtureTasks(3))
	ReplaceTable(ctx, b, schemas.Tasks, fixtureTasks(4))
	if _, err := a.Commit(ctx, CommitInfo{Stage: "a"}); err != nil {
		t.Fatal(err)
	}
	// Write b's snapshot as an orphan, the way a crash after the
	// manifest leaves it.
	orphan := b.build(base.ID, base, CommitInfo{Stage: "b"}, []byte("{}"), []string{})
	orphan.ID, _ = orphan.ContentHash()
	body, _ := orphan.Encode()
	if err := l.Storage().PutIfAbsent(ctx, snapshotKey(orphan.ID), body); err != nil {
		t.Fatal(err)
	}
	if _, err := l.GC(ctx, false, 0); err != nil {
		t.Fatal(err)
	}
	if rows, err := ReadTable(ctx, l, orphan, schemas.Tasks); err != nil || len(rows) != 4 {
		t.Fatalf("gc removed a file of an unreachable snapshot: %d rows, %v", len(rows), err)
	}
}

// TestRefNames: one validator for every ref name, and each refusal says
// why.
func TestRefNames(t *testing.T) {
	ctx := context.Background()
	l, _ := newLake(t)
	m := commitTasks(t, l, fixtureTasks(2), "one")
	bad := map[string]string{
		"":                       "empty",
		"main":                   "main",
		"a..b":                   "..",
		"a/./b":                  "'.'",
		"./a":                    "'.'",
		"a/.hidden":              "'.'",
		"a//b":                   "empty path component",
		"/a":                     "empty path component",
		"a/":                     "empty path component",
		"x.lock":                 ".lock",
		"x.lock/y":               ".lock",
		"x.tmp-1":                ".tmp-",
		"a/b.tmp-7/c":            ".tmp-",
		"cafe":                   "hex",
		"DEADBEEF":               "hex",
		m.ID[:12]:                "hex",
		m.ID:                     "hex",
		"a b":                    "space",
		"a\tb":                   "control character",
		"a\x00b":                 "control character",
		"a\nb":                   "control character",
		"-x":                     "start with a letter or digit",
		"a*b":                    "'*'",
		"été":                    "'é'",
		strings.Repeat("x", 129): "longer than 128",
	}
	for name, why := range bad {
		_, err := l.Tag(ctx, name, m.ID)
		if !errors.Is(err, ErrInvalidRefName) || !strings.Contains(err.Error(), why) {
			t.Errorf("tag %q: %v, want ErrInvalidRefName saying %q", name, err, why)
		}
		if err := ValidateRefName(name); !errors.Is(err, ErrInvalidRefName) {
			t.Errorf("ValidateRefName(%q) = %v", name, err)
		}
	}
	for _, good := range []string{"v1", "release/2026-11", "run/0123456789ab/it02-rollout.started", "a.b_c-d", "abc", "2026-11", "x.locked", "mainline"} {
		if _, err := l.Tag(ctx, good, m.ID); err != nil {
			t.Errorf("tag %q refused: %v", good, err)
		}
	}
	tags, err := l.Tags(ctx)
	if err != nil || len(tags) != 8 {
		t.Fatalf("tags: %v %v", tags, err)
	}
}

// TestTagCannotShadowID: a ref that looks like a snapshot id (or prefix)
// always means the snapshot, even if a tag of that name sits on disk; verify
// reports such a tag.
func TestTagCannotShadowID(t *testing.T) {
	ctx := context.Background()
	l, dir := newLake(t)
	m1 := commitTasks(t, l, fixtureTasks(2), "one")
	m2 := commitTasks(t, l, fixtureTasks(3), "two")
	os.MkdirAll(filepath.Join(dir, "refs", "tags"), 0o755)
	os.WriteFile(filepath.Join(dir, "refs", "tags", m1.ID[:8]), []byte(m2.ID+"\n"), 0o644)
	if id, err := l.Resolve(ctx, m1.ID[:8]); err != nil || id != m1.ID {
		t.Fatalf("Resolve(%s) = %s %v, want the snapshot %s", m1.ID[:8], id, err, m1.ID)
	}
	rep, err := l.Verify(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !hasProblem(rep, "refs/tags/"+m1.ID[:8], "hex") {
		t.Fatalf("verify does not report the shadowing tag: %+v", rep.Problems)
	}
	if _, err := l.Resolve(ctx, "abcd"); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Fatalf("a 4-hex ref: %v", err)
	}
}

// TestGCSparesRefsNamedLikeTemporaries: gc never deletes under refs/, so a
// tag an older cualake let through with a temporary-looking name survives.
func TestGCSparesRefsNamedLikeTemporaries(t *testing.T) {
	ctx := context.Background()
	l, dir := newLake(t)
	m := commitTasks(t, l, fixtureTasks(2), "one")
	p := filepath.Join(dir, "refs", "tags", "x.tmp-1")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte(m.ID+"\n"), 0o644)
	if _, err := l.GC(ctx, false, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("gc deleted refs/tags/x.tmp-1: %v", err)
	}
}

// hookStore runs a hook once, just before the first listing of refs/.
type hookStore struct {
	*Local
	onRefs func()
}

func (h *hookStore) List(ctx context.Context, prefix string) ([]string, error) {
	if f := h.onRefs; f != nil && prefix == "refs/" {
		h.onRefs = nil
		f()
	}
	return h.Local.List(ctx, prefix)
}

// TestConcurrentFirstCommitIsNotDangling: another writer's first commit
// lands (main and its root record) between our read of a missing main and
// our look for a history. That is a moved main, not a dangling history.
func TestConcurrentFirstCommitIsNotDangling(t *testing.T) {
	ctx := context.Background()
	other, dir := newLake(t)
	hs := &hookStore{Local: other.Storage().(*Local)}
	l, err := Open(ctx, hs)
	if err != nil {
		t.Fatal(err)
	}
	var first *Manifest
	commitOther := func() {
		tx, err := other.Begin(ctx, "")
		if err != nil {
			t.Error(err)
			return
		}
		b := []byte("x")
		AppendTable(ctx, tx, schemas.Blobs, []schemas.Blob{{Hash: schemas.HashBytes(b), Mime: "x", Size: 1, Bytes: b}})
		if first, err = tx.Commit(ctx, CommitInfo{Stage: "other"}); err != nil {
			t.Error(err)
		}
	}
	// In Head (Begin).
	hs.onRefs = commitOther
	tx, err := l.Begin(ctx, "")
	if err != nil || first == nil || tx.Parent() != first.ID {
		t.Fatalf("Begin while a first commit lands: %v", err)
	}

	// In Commit: begun on the empty lake, the other first commit lands
	// while this one looks for a history.
	_, dir = newLake(t)
	other, _ = OpenDir(ctx, dir, false)
	hs = &hookStore{Local: other.Storage().(*Local)}
	l, _ = Open(ctx, hs)
	tx, err = l.Begin(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := ReplaceTable(ctx, tx, schemas.Tasks, fixtureTasks(2)); err != nil {
		t.Fatal(err)
	}
	hs.onRefs = commitOther
	m, err := tx.Commit(ctx, CommitInfo{Stage: "mine"})
	if err != nil || first == nil || m.Parent != first.ID {
		t.Fatalf("Commit while a first commit lands: %+v %v", m, err)
	}
}
