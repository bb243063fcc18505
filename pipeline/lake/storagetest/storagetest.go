// Package storagetest is the conformance suite every lake.Storage backend
// passes (the local folder, S3), plus helpers that start a loopback S3
// server (versitygw) for tests.
package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// Backend makes stores for the suite.
type Backend struct {
	// New returns an empty store at a fresh location.
	New func(t *testing.T) lake.Storage
	// Reopen returns a second handle on the same location, as another
	// process would open it (for a cached backend: with an empty cache).
	Reopen func(t *testing.T, s lake.Storage) lake.Storage
}

// Run runs the conformance suite against b.
func Run(t *testing.T, b Backend) {
	t.Run("Missing", func(t *testing.T) { testMissing(t, b) })
	t.Run("PutIfAbsent", func(t *testing.T) { testPutIfAbsent(t, b) })
	t.Run("ExclusiveCreateRace", func(t *testing.T) { testCreateRace(t, b) })
	t.Run("PutFile", func(t *testing.T) { testPutFile(t, b) })
	t.Run("CompareAndSwap", func(t *testing.T) { testCAS(t, b) })
	t.Run("CompareAndSwapRace", func(t *testing.T) { testCASRace(t, b) })
	t.Run("DeleteAndList", func(t *testing.T) { testList(t, b) })
	t.Run("LocalPath", func(t *testing.T) { testLocalPath(t, b) })
	t.Run("LakeCommits", func(t *testing.T) { testLakeCommits(t, b) })
	t.Run("LakeConflicts", func(t *testing.T) { testLakeConflicts(t, b) })
	t.Run("CorruptAndMissing", func(t *testing.T) { testCorrupt(t, b) })
	t.Run("Refs", func(t *testing.T) { testRefs(t, b) })
	t.Run("Branches", func(t *testing.T) { testBranches(t, b) })
}

func ctx() context.Context { return context.Background() }

func mustBytes(t *testing.T, s lake.Storage, key string, want []byte) {
	t.Helper()
	got, err := s.Get(ctx(), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("get %s: %q, want %q", key, got, want)
	}
}

func testMissing(t *testing.T, b Backend) {
	s := b.New(t)
	if _, err := s.Get(ctx(), "refs/heads/main"); !errors.Is(err, lake.ErrNotExist) {
		t.Fatalf("Get of a missing key: %v, want ErrNotExist", err)
	}
	if _, err := s.Open(ctx(), "data/tasks/x.parquet"); !errors.Is(err, lake.ErrNotExist) {
		t.Fatalf("Open of a missing key: %v, want ErrNotExist", err)
	}
	if _, err := s.Size(ctx(), "snapshots/x.json"); !errors.Is(err, lake.ErrNotExist) {
		t.Fatalf("Size of a missing key: %v, want ErrNotExist", err)
	}
	if err := s.Delete(ctx(), "nothing/here"); err != nil {
		t.Fatalf("Delete of a missing key: %v", err)
	}
	if keys, err := s.List(ctx(), "snapshots/"); err != nil || len(keys) != 0 {
		t.Fatalf("List of an empty store: %v %v", keys, err)
	}
	if _, err := lake.Open(ctx(), s); !errors.Is(err, lake.ErrNotALake) {
		t.Fatalf("Open of an empty store: %v, want ErrNotALake", err)
	}
	for _, bad := range []string{"../escape", "/abs", "a/../../b"} {
		if err := s.PutIfAbsent(ctx(), bad, []byte("x")); err == nil {
			t.Fatalf("PutIfAbsent(%q) accepted a key outside the lake", bad)
		}
	}
}

func testPutIfAbsent(t *testing.T, b Backend) {
	s := b.New(t)
	key := "snapshots/" + strings.Repeat("ab", 32) + ".json"
	if err := s.PutIfAbsent(ctx(), key, []byte("first")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx(), key, []byte("second")); !errors.Is(err, lake.ErrExist) {
		t.Fatalf("second exclusive create: %v, want ErrExist", err)
	}
	mustBytes(t, s, key, []byte("first"))
	if n, err := s.Size(ctx(), key); err != nil || n != 5 {
		t.Fatalf("Size: %d %v", n, err)
	}
	r, err := s.Open(ctx(), key)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || string(got) != "first" {
		t.Fatalf("Open: %q %v", got, err)
	}
	// Empty objects and nested keys are ordinary objects.
	if err := s.PutIfAbsent(ctx(), "refs/tags/release/2026-11", nil); err != nil {
		t.Fatal(err)
	}
	mustBytes(t, s, "refs/tags/release/2026-11", nil)
	// Another handle sees the object at once.
	mustBytes(t, b.Reopen(t, s), key, []byte("first"))
}

func testCreateRace(t *testing.T, b Backend) {
	s := b.New(t)
	for round := 0; round < 3; round++ {
		key := fmt.Sprintf("snapshots/race-%d.json", round)
		const writers = 12
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for i := 0; i < writers; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				st := s
				if i%2 == 1 {
					st = b.Reopen(t, s) // as if from another process
				}
				errs[i] = st.PutIfAbsent(ctx(), key, []byte("writer "+strconv.Itoa(i)))
			}(i)
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: writers %d and %d both created %s", round, winner, i, key)
			case err == nil:
				winner = i
			case !errors.Is(err, lake.ErrExist):
				t.Fatalf("round %d: writer %d: %v", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: nobody created %s", round, key)
		}
		mustBytes(t, s, key, []byte("writer "+strconv.Itoa(winner)))
	}
}

func writeTemp(t *testing.T, s lake.Storage, data []byte) string {
	t.Helper()
	if err := os.MkdirAll(s.TempDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(s.TempDir(), "suite.tmp-*")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

func testPutFile(t *testing.T, b Backend) {
	s := b.New(t)
	data := []byte("parquet bytes, pretend")
	key := "data/tasks/" + schemas.HashBytes(data) + ".parquet"
	if err := s.PutFile(ctx(), key, writeTemp(t, s, data)); err != nil {
		t.Fatal(err)
	}
	mustBytes(t, s, key, data)
	// The same content again is harmless (content-addressed files).
	if err := s.PutFile(ctx(), key, writeTemp(t, s, data)); err != nil {
		t.Fatalf("PutFile of an existing file with the same bytes: %v", err)
	}
	mustBytes(t, s, key, data)
	mustBytes(t, b.Reopen(t, s), key, data)
	// Any other key.
	if err := s.PutFile(ctx(), "fragments/x/y.json", writeTemp(t, s, []byte("{}"))); err != nil {
		t.Fatal(err)
	}
	mustBytes(t, s, "fragments/x/y.json", []byte("{}"))
}

func testCAS(t *testing.T, b Backend) {
	s := b.New(t)
	key := "refs/heads/main"
	if err := s.CompareAndSwap(ctx(), key, []byte("a\n"), []byte("b\n")); !errors.Is(err, lake.ErrConflict) {
		t.Fatalf("CAS on a missing key with prev: %v, want ErrConflict", err)
	}
	if err := s.CompareAndSwap(ctx(), key, nil, []byte("a\n")); err != nil {
		t.Fatalf("CAS create: %v", err)
	}
	if err := s.CompareAndSwap(ctx(), key, nil, []byte("x\n")); !errors.Is(err, lake.ErrConflict) {
		t.Fatalf("CAS create on an existing key: %v, want ErrConflict", err)
	}
	if err := s.CompareAndSwap(ctx(), key, []byte("zzz\n"), []byte("x\n")); !errors.Is(err, lake.ErrConflict) {
		t.Fatalf("CAS with a stale prev: %v, want ErrConflict", err)
	}
	mustBytes(t, s, key, []byte("a\n"))
	if err := s.CompareAndSwap(ctx(), key, []byte("a\n"), []byte("b\n")); err != nil {
		t.Fatal(err)
	}
	mustBytes(t, s, key, []byte("b\n"))
	// A swap back to an earlier value (ABA) is an ordinary swap.
	if err := s.CompareAndSwap(ctx(), key, []byte("b\n"), []byte("a\n")); err != nil {
		t.Fatal(err)
	}
	mustBytes(t, b.Reopen(t, s), key, []byte("a\n"))
}

// testCASRace increments a counter from several writers (half of them
// through other handles) with read-CAS-retry loops: with a linearizable
// compare-and-swap no increment is lost.
func testCASRace(t *testing.T, b Backend) {
	s := b.New(t)
	key := "refs/heads/counter"
	if err := s.CompareAndSwap(ctx(), key, nil, []byte("0")); err != nil {
		t.Fatal(err)
	}
	const writers, each = 6, 8
	var wg sync.WaitGroup
	errc := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			st := s
			if w%2 == 1 {
				st = b.Reopen(t, s)
			}
			for i := 0; i < each; i++ {
				for tries := 0; ; tries++ {
					cur, err := st.Get(ctx(), key)
					if err != nil {
						errc <- err
						return
					}
					n, _ := strconv.Atoi(string(cur))
					err = st.CompareAndSwap(ctx(), key, cur, []byte(strconv.Itoa(n+1)))
					if err == nil {
						break
					}
					if !errors.Is(err, lake.ErrConflict) || tries > 500 {
						errc <- fmt.Errorf("writer %d: %w", w, err)
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	mustBytes(t, s, key, []byte(strconv.Itoa(writers*each)))
}

func testList(t *testing.T, b Backend) {
	s := b.New(t)
	keys := []string{"refs/tags/a", "refs/tags/release/2026-11", "refs/tags/release/2026-12", "refs/heads/main",
		"snapshots/01.json", "snapshots/02.json", "snapshotsX/03.json"}
	for _, k := range keys {
		if err := s.PutIfAbsent(ctx(), k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 25; i++ {
		if err := s.PutIfAbsent(ctx(), fmt.Sprintf("data/steps/%02d.parquet", 24-i), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(prefix string, want ...string) {
		t.Helper()
		got, err := s.List(ctx(), prefix)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("List(%q) = %v, want %v", prefix, got, want)
		}
	}
	check("refs/tags/", "refs/tags/a", "refs/tags/release/2026-11", "refs/tags/release/2026-12")
	check("snapshots/", "snapshots/01.json", "snapshots/02.json")
	check("refs/heads/", "refs/heads/main")
	got, err := s.List(ctx(), "data/")
	if err != nil || len(got) != 25 || got[0] != "data/steps/00.parquet" || got[24] != "data/steps/24.parquet" {
		t.Fatalf("List(data/) = %v %v", got, err)
	}
	if err := s.Delete(ctx(), "refs/tags/a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx(), "refs/tags/a"); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
	check("refs/tags/", "refs/tags/release/2026-11", "refs/tags/release/2026-12")
	if _, err := s.Get(ctx(), "refs/tags/a"); !errors.Is(err, lake.ErrNotExist) {
		t.Fatalf("Get after Delete: %v", err)
	}
	check("nothing/")
}

func testLocalPath(t *testing.T, b Backend) {
	s := b.New(t)
	data := []byte("some immutable bytes")
	key := "data/blobs/" + schemas.HashBytes(data) + ".parquet"
	if err := s.PutIfAbsent(ctx(), key, data); err != nil {
		t.Fatal(err)
	}
	for _, st := range []lake.Storage{s, b.Reopen(t, s)} {
		p, err := st.LocalPath(ctx(), key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("LocalPath %s: %q %v", p, got, err)
		}
		if !filepath.IsAbs(p) {
			t.Fatalf("LocalPath %s is not absolute", p)
		}
	}
}

func tasks(n int, domain string) []schemas.Task {
	var out []schemas.Task
	for i := 0; i < n; i++ {
		out = append(out, schemas.Task{TaskID: fmt.Sprintf("t%03d", i), Domain: domain, App: "x", Instruction: "do it",
			Setup: "[]", Judge: "{}", Feasible: true, Source: schemas.SourceSeed, Abilities: []string{}, Split: "train"})
	}
	return out
}

func newLake(t *testing.T, s lake.Storage) *lake.Lake {
	t.Helper()
	l, err := lake.Init(ctx(), s)
	if err != nil {
		t.Fatal(err)
	}
	l.Now = func() time.Time { return time.Unix(0, 0) }
	return l
}

func commit(t *testing.T, l *lake.Lake, parent string, rows []schemas.Task) (*lake.Manifest, error) {
	t.Helper()
	tx, err := l.Begin(ctx(), parent)
	if err != nil {
		t.Fatal(err)
	}
	if err := lake.ReplaceTable(ctx(), tx, schemas.Tasks, rows); err != nil {
		t.Fatal(err)
	}
	return tx.Commit(ctx(), lake.CommitInfo{Stage: "suite", Params: map[string]int{"n": len(rows)}})
}

func testLakeCommits(t *testing.T, b Backend) {
	s := b.New(t)
	l := newLake(t, s)
	if _, err := lake.Init(ctx(), s); err != nil {
		t.Fatalf("Init is not idempotent: %v", err)
	}
	m1, err := commit(t, l, "", tasks(5, "files"))
	if err != nil {
		t.Fatal(err)
	}
	m2, err := commit(t, l, "", tasks(9, "sheet"))
	if err != nil {
		t.Fatal(err)
	}
	if m2.Parent != m1.ID {
		t.Fatalf("parent %s, want %s", m2.Parent, m1.ID)
	}
	if _, err := l.Tag(ctx(), "release/first", m1.ID); err != nil {
		t.Fatal(err)
	}
	// A second process sees everything.
	l2, err := lake.Open(ctx(), b.Reopen(t, s))
	if err != nil {
		t.Fatal(err)
	}
	got, err := lake.ReadTable(ctx(), l2, mustAt(t, l2, "release/first"), schemas.Tasks)
	if err != nil || len(got) != 5 || got[4].TaskID != "t004" {
		t.Fatalf("read tag from another handle: %d rows, %v", len(got), err)
	}
	if log, err := l2.Log(ctx(), "", 0); err != nil || len(log) != 2 {
		t.Fatalf("log: %d %v", len(log), err)
	}
	rep, err := l2.Verify(ctx(), nil)
	if err != nil || !rep.OK() || rep.Files != 2 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

func mustAt(t *testing.T, l *lake.Lake, ref string) *lake.Manifest {
	t.Helper()
	m, err := l.At(ctx(), ref)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func testLakeConflicts(t *testing.T, b Backend) {
	s := b.New(t)
	l := newLake(t, s)
	base, err := commit(t, l, "", tasks(3, "files"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := lake.Open(ctx(), b.Reopen(t, s))
	if err != nil {
		t.Fatal(err)
	}
	// Two writers on the same parent, the same table: the second loses.
	txA, _ := l.Begin(ctx(), base.ID)
	txB, _ := other.Begin(ctx(), base.ID)
	if err := lake.ReplaceTable(ctx(), txA, schemas.Tasks, tasks(4, "files")); err != nil {
		t.Fatal(err)
	}
	if err := lake.ReplaceTable(ctx(), txB, schemas.Tasks, tasks(6, "files")); err != nil {
		t.Fatal(err)
	}
	a, err := txA.Commit(ctx(), lake.CommitInfo{Stage: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := txB.Commit(ctx(), lake.CommitInfo{Stage: "b"}); !errors.Is(err, lake.ErrConflict) {
		t.Fatalf("second writer of the same table: %v, want ErrConflict", err)
	}
	// Disjoint tables: the commit rebases onto the moved head.
	txC, _ := other.Begin(ctx(), base.ID)
	if err := lake.AppendTable(ctx(), txC, schemas.Audits, []schemas.Audit{{Kind: "k", Metric: "m", Group: "g", Value: 1, Params: "{}"}}); err != nil {
		t.Fatal(err)
	}
	c, err := txC.Commit(ctx(), lake.CommitInfo{Stage: "c"})
	if err != nil {
		t.Fatalf("disjoint commit: %v", err)
	}
	if c.Parent != a.ID || c.Tables["tasks"].Rows != 4 {
		t.Fatalf("rebase: parent %s (want %s), tasks %d", c.Parent, a.ID, c.Tables["tasks"].Rows)
	}
	// Many concurrent committers of disjoint appends: none is lost.
	var wg sync.WaitGroup
	errc := make(chan error, 6)
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			h, err := lake.Open(ctx(), b.Reopen(t, s))
			if err != nil {
				errc <- err
				return
			}
			tx, err := h.Begin(ctx(), "")
			if err != nil {
				errc <- err
				return
			}
			if err := lake.AppendTable(ctx(), tx, schemas.Rejects, []schemas.Reject{{Stage: "suite", Source: fmt.Sprint("s", i), Line: 1, Field: "f", Reason: "r"}}); err != nil {
				errc <- err
				return
			}
			if _, err := tx.Commit(ctx(), lake.CommitInfo{Stage: fmt.Sprint("w", i)}); err != nil {
				errc <- err
			}
		}(i)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if !errors.Is(err, lake.ErrConflict) {
			t.Fatal(err)
		}
	}
	head := mustAt(t, l, "")
	rej, err := lake.ReadTable(ctx(), l, head, schemas.Rejects)
	if err != nil {
		t.Fatal(err)
	}
	log, _ := l.Log(ctx(), "", 0)
	if len(rej) != len(log)-3 {
		t.Fatalf("%d reject rows but %d appending commits: a commit was lost", len(rej), len(log)-3)
	}
}

func testCorrupt(t *testing.T, b Backend) {
	s := b.New(t)
	l := newLake(t, s)
	m, err := commit(t, l, "", tasks(20, "files"))
	if err != nil {
		t.Fatal(err)
	}
	f := m.Tables["tasks"].Files[0]
	// Overwrite the data file behind the lake's back (shorter bytes).
	good, err := s.Get(ctx(), f.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx(), f.Path); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx(), f.Path, good[:len(good)-7]); err != nil {
		t.Fatal(err)
	}
	fresh, err := lake.Open(ctx(), b.Reopen(t, s))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := fresh.Verify(ctx(), nil)
	if err != nil || rep.OK() || !strings.Contains(rep.Problems[0].Problem, "bytes") {
		t.Fatalf("verify of a corrupted file: %+v %v", rep, err)
	}
	if _, err := lake.ReadTable(ctx(), fresh, m, schemas.Tasks); !errors.Is(err, lake.ErrCorrupt) {
		t.Fatalf("read of a corrupted file: %v, want ErrCorrupt", err)
	}
	// Missing data file.
	if err := s.Delete(ctx(), f.Path); err != nil {
		t.Fatal(err)
	}
	fresh2, _ := lake.Open(ctx(), b.Reopen(t, s))
	if _, err := lake.ReadTable(ctx(), fresh2, m, schemas.Tasks); !errors.Is(err, lake.ErrNotExist) {
		t.Fatalf("read of a missing file: %v, want ErrNotExist", err)
	}
	if rep, err := fresh2.Verify(ctx(), nil); err != nil || rep.OK() {
		t.Fatalf("verify of a missing file: %+v %v", rep, err)
	}
	// A corrupted manifest is refused.
	key := "snapshots/" + m.ID + ".json"
	body, _ := s.Get(ctx(), key)
	if err := s.Delete(ctx(), key); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx(), key, bytes.Replace(body, []byte(`"rows": 20`), []byte(`"rows": 21`), 1)); err != nil {
		t.Fatal(err)
	}
	fresh3, _ := lake.Open(ctx(), b.Reopen(t, s))
	if _, err := fresh3.Snapshot(ctx(), m.ID); !errors.Is(err, lake.ErrCorrupt) {
		t.Fatalf("corrupted manifest: %v, want ErrCorrupt", err)
	}
}

func setRef(t *testing.T, s lake.Storage, key string, body []byte) {
	t.Helper()
	if err := s.Delete(ctx(), key); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx(), key, body); err != nil {
		t.Fatal(err)
	}
}

// testRefs: a malformed main fails commits at once without leaving a
// manifest, a lost main is a dangling history that only NewHistory
// commits over, and gc refuses both, on every backend.
func testRefs(t *testing.T, b Backend) {
	s := b.New(t)
	l := newLake(t, s)
	m1, err := commit(t, l, "", tasks(3, "files"))
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		ids, err := l.Snapshots(ctx())
		if err != nil {
			t.Fatal(err)
		}
		return len(ids)
	}
	for _, body := range []string{"", m1.ID, m1.ID + "\r\n", " " + m1.ID + "\n"} {
		setRef(t, s, "refs/heads/main", []byte(body))
		fresh, err := lake.Open(ctx(), b.Reopen(t, s))
		if err != nil {
			t.Fatal(err)
		}
		tx, err := fresh.Begin(ctx(), m1.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := lake.ReplaceTable(ctx(), tx, schemas.Tasks, tasks(4, "files")); err != nil {
			t.Fatal(err)
		}
		before := count()
		if _, err := tx.Commit(ctx(), lake.CommitInfo{Stage: "over"}); !errors.Is(err, lake.ErrCorrupt) || !strings.Contains(err.Error(), "refs/heads/main") {
			t.Fatalf("commit over main %q: %v, want ErrCorrupt", body, err)
		}
		if count() != before {
			t.Fatalf("commit over main %q left a manifest", body)
		}
		if rep, err := fresh.Verify(ctx(), nil); err != nil || rep.OK() {
			t.Fatalf("verify with main %q: %+v %v", body, rep, err)
		}
		if _, err := fresh.GC(ctx(), true, 0); !errors.Is(err, lake.ErrCorrupt) {
			t.Fatalf("gc with main %q: %v", body, err)
		}
	}
	if err := s.Delete(ctx(), "refs/heads/main"); err != nil {
		t.Fatal(err)
	}
	fresh, err := lake.Open(ctx(), b.Reopen(t, s))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Begin(ctx(), ""); !errors.Is(err, lake.ErrDanglingHistory) {
		t.Fatalf("Begin without main: %v, want ErrDanglingHistory", err)
	}
	if rep, err := fresh.Verify(ctx(), nil); err != nil || rep.OK() || !strings.Contains(rep.Problems[0].Problem, m1.ID) {
		t.Fatalf("verify without main: %+v %v", rep, err)
	}
	if _, err := fresh.GC(ctx(), true, 0); !errors.Is(err, lake.ErrDanglingHistory) {
		t.Fatalf("gc without main: %v", err)
	}
	tx, err := fresh.Begin(ctx(), "", lake.NewHistory())
	if err != nil {
		t.Fatal(err)
	}
	if err := lake.ReplaceTable(ctx(), tx, schemas.Tasks, tasks(1, "sheet")); err != nil {
		t.Fatal(err)
	}
	root, err := tx.Commit(ctx(), lake.CommitInfo{Stage: "restart"})
	if err != nil || root.Parent != "" {
		t.Fatalf("new history: %+v %v", root, err)
	}
	mustBytes(t, s, "refs/heads/main", []byte(root.ID+"\n"))
	if rep, err := fresh.Verify(ctx(), nil); err != nil || !rep.OK() {
		t.Fatalf("verify after a new history: %+v %v", rep, err)
	}
	// The old snapshot stays readable by id, and gc keeps its files.
	if _, err := fresh.GC(ctx(), false, 0); err != nil {
		t.Fatal(err)
	}
	if rows, err := lake.ReadTable(ctx(), fresh, mustAt(t, fresh, m1.ID), schemas.Tasks); err != nil || len(rows) != 3 {
		t.Fatalf("the abandoned history after gc: %d rows, %v", len(rows), err)
	}
}

// testBranches: branches with '/' in their names are created, listed,
// committed to (moving only themselves, also from concurrent writers on
// two branches), resolved by another handle and deleted without losing
// data, on every backend.
func testBranches(t *testing.T, b Backend) {
	s := b.New(t)
	l := newLake(t, s)
	base, err := commit(t, l, "", tasks(3, "files"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"exp/a/s1", "exp/b/s1"} {
		if _, err := l.CreateBranch(ctx(), name, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.CreateBranch(ctx(), "exp/a", ""); !errors.Is(err, lake.ErrInvalidRefName) {
		t.Fatalf("a branch named like another's folder: %v", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, name := range []string{"exp/a/s1", "exp/b/s1"} {
		wg.Add(1)
		go func(i int, name string) {
			defer wg.Done()
			h, err := l.OnBranch(name)
			if err != nil {
				errs[i] = err
				return
			}
			for j := 0; j < 4; j++ {
				tx, err := h.Begin(ctx(), "")
				if err == nil {
					err = lake.ReplaceTable(ctx(), tx, schemas.Tasks, tasks(4+j+10*i, name))
				}
				if err == nil {
					_, err = tx.Commit(ctx(), lake.CommitInfo{Stage: name})
				}
				if err != nil {
					errs[i] = err
					return
				}
			}
		}(i, name)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	l2, err := lake.Open(ctx(), b.Reopen(t, s))
	if err != nil {
		t.Fatal(err)
	}
	bs, err := l2.Branches(ctx())
	if err != nil || len(bs) != 3 || bs["main"] != base.ID {
		t.Fatalf("branches: %v %v", bs, err)
	}
	for i, name := range []string{"exp/a/s1", "exp/b/s1"} {
		log, err := l2.Log(ctx(), name, 0)
		if err != nil || len(log) != 5 || log[4].ID != base.ID {
			t.Fatalf("%s: %d snapshots %v", name, len(log), err)
		}
		for _, m := range log[:4] {
			if m.Stage != name {
				t.Fatalf("%s's history holds a commit of %s", name, m.Stage)
			}
		}
		if log[0].Tables["tasks"].Rows != int64(7+10*i) {
			t.Fatalf("%s head: %d rows", name, log[0].Tables["tasks"].Rows)
		}
	}
	head, err := l2.Resolve(ctx(), "exp/a/s1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l2.DeleteBranch(ctx(), "exp/a/s1"); err != nil {
		t.Fatal(err)
	}
	if rep, err := l2.GC(ctx(), false, 0); err != nil || len(rep.Removed) != 0 {
		t.Fatalf("gc after deleting a branch: %+v %v", rep, err)
	}
	m, err := l2.Snapshot(ctx(), head)
	if err != nil {
		t.Fatal(err)
	}
	if rows, err := lake.ReadTable(ctx(), l2, m, schemas.Tasks); err != nil || len(rows) != 7 {
		t.Fatalf("the deleted branch's head: %d rows %v", len(rows), err)
	}
	if rep, err := l2.Verify(ctx(), nil); err != nil || !rep.OK() {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}
