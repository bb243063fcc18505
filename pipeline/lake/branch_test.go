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

// commitOn replaces tasks with n rows on the branch the handle is bound to.
func commitOn(t *testing.T, l *Lake, ref string, n int, stage string) (*Manifest, error) {
	t.Helper()
	ctx := context.Background()
	tx, err := l.Begin(ctx, ref)
	if err != nil {
		return nil, err
	}
	if err := ReplaceTable(ctx, tx, schemas.Tasks, fixtureTasks(n)); err != nil {
		t.Fatal(err)
	}
	return tx.Commit(ctx, CommitInfo{Stage: stage})
}

func mustHead(t *testing.T, l *Lake, branch string) string {
	t.Helper()
	id, err := l.BranchHead(context.Background(), branch)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestBranchCreateListDelete(t *testing.T) {
	ctx := context.Background()
	l, dir := newLake(t)
	base := commitTasks(t, l, fixtureTasks(3), "base")
	if _, err := l.Tag(ctx, "v1", base.ID); err != nil {
		t.Fatal(err)
	}
	for name, from := range map[string]string{"exp/a": "", "exp/b/s1": "v1", "c": base.ID[:8]} {
		id, err := l.CreateBranch(ctx, name, from)
		if err != nil || id != base.ID {
			t.Fatalf("create %s from %q: %s %v", name, from, id, err)
		}
	}
	if _, err := l.CreateBranch(ctx, "d", "exp/a"); err != nil {
		t.Fatalf("create from a branch: %v", err)
	}
	// Same snapshot again: a no-op; elsewhere: refused.
	if _, err := l.CreateBranch(ctx, "exp/a", ""); err != nil {
		t.Fatalf("re-create at the same snapshot: %v", err)
	}
	next := commitTasks(t, l, fixtureTasks(4), "next")
	if _, err := l.CreateBranch(ctx, "exp/a", next.ID); !errors.Is(err, ErrExist) || !strings.Contains(err.Error(), "already exists at") {
		t.Fatalf("re-create elsewhere: %v", err)
	}
	bs, err := l.Branches(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"main": next.ID, "exp/a": base.ID, "exp/b/s1": base.ID, "c": base.ID, "d": base.ID}
	if fmt.Sprint(bs) != fmt.Sprint(want) {
		t.Fatalf("branches %v, want %v", bs, want)
	}
	// Resolve and At read branch names.
	if id, err := l.Resolve(ctx, "exp/b/s1"); err != nil || id != base.ID {
		t.Fatalf("resolve branch: %s %v", id, err)
	}
	if log, err := l.Log(ctx, "exp/a", 0); err != nil || len(log) != 1 {
		t.Fatalf("log of a branch: %d %v", len(log), err)
	}
	id, err := l.DeleteBranch(ctx, "exp/b/s1")
	if err != nil || id != base.ID {
		t.Fatalf("delete: %s %v", id, err)
	}
	if _, err := l.Resolve(ctx, "exp/b/s1"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("resolve a deleted branch: %v", err)
	}
	if _, err := l.DeleteBranch(ctx, "exp/b/s1"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("delete twice: %v", err)
	}
	// The deleted branch's folders are gone, so its prefix can be a branch.
	if _, err := os.Stat(filepath.Join(dir, "refs/heads/exp/b")); !os.IsNotExist(err) {
		t.Fatalf("refs/heads/exp/b left behind: %v", err)
	}
	if _, err := l.CreateBranch(ctx, "exp/b", ""); err != nil {
		t.Fatalf("create the deleted branch's folder as a branch: %v", err)
	}
	if _, err := l.DeleteBranch(ctx, "main"); !errors.Is(err, ErrInvalidRefName) {
		t.Fatalf("delete main: %v", err)
	}
	// The snapshot only the deleted branch named is still there.
	if _, err := l.Snapshot(ctx, base.ID); err != nil {
		t.Fatal(err)
	}
	if rep, err := l.Verify(ctx, nil); err != nil || !rep.OK() {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

func TestBranchNamesRefused(t *testing.T) {
	ctx := context.Background()
	l, _ := newLake(t)
	base := commitTasks(t, l, fixtureTasks(3), "base")
	if _, err := l.Tag(ctx, "release/1", base.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := l.CreateBranch(ctx, "exp/a", ""); err != nil {
		t.Fatal(err)
	}
	for name, why := range map[string]string{
		"":                       "empty",
		"main":                   "main is the main branch",
		"a b":                    "space",
		"../x":                   "'..'",
		"x/../y":                 "'..'",
		"/x":                     "empty path component",
		"x/":                     "empty path component",
		"x//y":                   "empty path component",
		".hidden":                "starts with '.'",
		"x.lock":                 ".lock",
		"deadbeef":               "hex digits",
		"a\nb":                   "control character",
		"a*b":                    "'*'",
		"main/x":                 "refs/heads/main exists",
		"exp":                    "refs/heads/exp/a exists, so exp is a folder",
		"exp/a/more":             "refs/heads/exp/a exists, so exp/a cannot be a folder",
		"release/1":              "a tag of that name exists",
		"-x":                     "start with a letter or digit",
		"x.tmp-1":                ".tmp-",
		strings.Repeat("a", 129): "longer than 128",
	} {
		_, err := l.CreateBranch(ctx, name, "")
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("branch %q: %v, want an error saying %q", name, err, why)
		}
	}
	// A tag cannot take a branch's name either.
	if _, err := l.Tag(ctx, "exp/a", base.ID); !errors.Is(err, ErrExist) || !strings.Contains(err.Error(), "a branch of that name exists") {
		t.Fatalf("tag named like a branch: %v", err)
	}
	if _, err := l.OnBranch("a b"); !errors.Is(err, ErrInvalidRefName) {
		t.Fatalf("OnBranch with a bad name: %v", err)
	}
	// A name both a branch and a tag (written behind cualake's back) is ambiguous.
	if err := l.store.PutIfAbsent(ctx, tagsDir+"exp/a", formatRef(base.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Resolve(ctx, "exp/a"); err == nil || !strings.Contains(err.Error(), "both a branch") {
		t.Fatalf("branch and tag of one name: %v", err)
	}
}

func TestBranchCommitMovesOnlyItsBranch(t *testing.T) {
	ctx := context.Background()
	l, _ := newLake(t)
	base := commitTasks(t, l, fixtureTasks(3), "base")
	for _, b := range []string{"a", "b/c"} {
		if _, err := l.CreateBranch(ctx, b, ""); err != nil {
			t.Fatal(err)
		}
	}
	onA, err := l.OnBranch("a")
	if err != nil {
		t.Fatal(err)
	}
	m1, err := commitOn(t, onA, "", 5, "on-a")
	if err != nil {
		t.Fatal(err)
	}
	if m1.Parent != base.ID || mustHead(t, l, "a") != m1.ID || mustHead(t, l, "main") != base.ID || mustHead(t, l, "b/c") != base.ID {
		t.Fatalf("after a commit on a: a=%s main=%s b/c=%s", mustHead(t, l, "a"), mustHead(t, l, "main"), mustHead(t, l, "b/c"))
	}
	// "" on the bound handle is a's head; on the plain handle, main's.
	if h, _ := onA.Head(ctx); h != m1.ID {
		t.Fatalf("bound head %s", h)
	}
	if m, _ := l.At(ctx, ""); m.ID != base.ID {
		t.Fatalf("plain At(\"\") %s, want main", m.ID)
	}
	// Begin on a branch name commits to it from a plain handle.
	m2, err := commitOn(t, l, "b/c", 7, "on-bc")
	if err != nil {
		t.Fatal(err)
	}
	if mustHead(t, l, "b/c") != m2.ID || mustHead(t, l, "a") != m1.ID || mustHead(t, l, "main") != base.ID {
		t.Fatal("a commit begun on b/c moved another branch")
	}
	// A bound handle starting from another snapshot still commits to its branch.
	tx, err := onA.Begin(ctx, "b/c")
	if err != nil || tx.Branch() != "a" || tx.Parent() != m2.ID {
		t.Fatalf("begin on a from b/c: %v %v", tx, err)
	}
	// A commit on main does not move the branches.
	m3 := commitTasks(t, l, fixtureTasks(9), "on-main")
	if mustHead(t, l, "main") != m3.ID || mustHead(t, l, "a") != m1.ID || mustHead(t, l, "b/c") != m2.ID {
		t.Fatal("a commit on main moved a branch")
	}
	// A missing branch: no transaction.
	gone, _ := l.OnBranch("gone")
	if _, err := gone.Begin(ctx, ""); !errors.Is(err, ErrNotExist) || !strings.Contains(err.Error(), "lake branch create gone") {
		t.Fatalf("begin on a missing branch: %v", err)
	}
	// A branch deleted between Begin and Commit: the commit fails, no ref moves.
	tx, err = onA.Begin(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := ReplaceTable(ctx, tx, schemas.Tasks, fixtureTasks(11)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.DeleteBranch(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx, CommitInfo{Stage: "late"}); !errors.Is(err, ErrNotExist) || !strings.Contains(err.Error(), "deleted") {
		t.Fatalf("commit on a deleted branch: %v", err)
	}
	if _, err := l.BranchHead(ctx, "a"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("the deleted branch came back: %v", err)
	}
}

// TestConcurrentBranchCommits runs two committers per branch on two
// branches (one replacing tasks, one appending blobs, so that commits on a
// branch rebase onto each other) and checks that every branch's history is
// linear, holds exactly its own commits, and that main never moved.
func TestConcurrentBranchCommits(t *testing.T) {
	ctx := context.Background()
	l, _ := newLake(t)
	base := commitTasks(t, l, fixtureTasks(3), "base")
	branches := []string{"x/one", "x/two"}
	const n = 8
	var mu sync.Mutex
	made := map[string]map[string]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, 4*n)
	for _, b := range branches {
		if _, err := l.CreateBranch(ctx, b, ""); err != nil {
			t.Fatal(err)
		}
		made[b] = map[string]bool{}
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go func(b string, w int) {
				defer wg.Done()
				h, err := l.OnBranch(b)
				if err != nil {
					errs <- err
					return
				}
				for i := 0; i < n; i++ {
					tx, err := h.Begin(ctx, "")
					if err != nil {
						errs <- err
						return
					}
					stage := fmt.Sprintf("%s-w%d-%d", b, w, i)
					if w == 0 {
						err = ReplaceTable(ctx, tx, schemas.Tasks, fixtureTasks(10+i+len(b)*100))
					} else {
						blob := []byte(stage)
						err = AppendTable(ctx, tx, schemas.Blobs, []schemas.Blob{{Hash: schemas.HashBytes(blob), Mime: "text/plain", Size: int64(len(blob)), Bytes: blob}})
					}
					if err != nil {
						errs <- err
						return
					}
					m, err := tx.Commit(ctx, CommitInfo{Stage: stage})
					if err != nil {
						errs <- fmt.Errorf("%s: %w", stage, err)
						return
					}
					mu.Lock()
					made[b][m.ID] = true
					mu.Unlock()
				}
			}(b, w)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if mustHead(t, l, "main") != base.ID {
		t.Fatal("main moved")
	}
	for _, b := range branches {
		log, err := l.Log(ctx, b, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != 2*n+1 || log[len(log)-1].ID != base.ID {
			t.Fatalf("%s: %d snapshots in its history, want %d ending at the base", b, len(log), 2*n+1)
		}
		for _, m := range log[:len(log)-1] {
			if !made[b][m.ID] || !strings.HasPrefix(m.Stage, b+"-") {
				t.Fatalf("%s's history holds %s (%s), not one of its commits", b, short(m.ID), m.Stage)
			}
		}
		if len(made[b]) != 2*n {
			t.Fatalf("%s: %d distinct commits, want %d", b, len(made[b]), 2*n)
		}
		head, err := l.At(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		if head.Tables[schemas.Blobs.Info().Name].Rows != n {
			t.Fatalf("%s: %d blobs at the head, want %d (a rebase lost an append)", b, head.Tables[schemas.Blobs.Info().Name].Rows, n)
		}
	}
}

// TestKillDuringBranchCommit kills a child committing to main and two
// branches in turn, at many points, and checks that every branch is at a
// committed snapshot whose history is complete back to the base.
func TestKillDuringBranchCommit(t *testing.T) {
	if os.Getenv("CUALAKE_BRANCH_CRASH_CHILD") != "" {
		branchCrashChild()
		return
	}
	ctx := context.Background()
	l, dir := newLake(t)
	base := commitTasks(t, l, fixtureTasks(3), "base")
	for _, b := range []string{"k/one", "k/two"} {
		if _, err := l.CreateBranch(ctx, b, ""); err != nil {
			t.Fatal(err)
		}
	}
	prev := map[string]int{}
	// Kill at varying points; go on past 10 kills until commits landed on
	// every branch (a slow machine starts the child late).
	for i := 0; i < 10 || (prev["k/one"] < 3 || prev["k/two"] < 3) && i < 40; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillDuringBranchCommit$")
		cmd.Env = append(os.Environ(), "CUALAKE_BRANCH_CRASH_CHILD="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(30+(i%10)*25) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		l, err := OpenDir(ctx, dir, false)
		if err != nil {
			t.Fatal(err)
		}
		if rep, err := l.Verify(ctx, nil); err != nil || !rep.OK() {
			t.Fatalf("after kill %d: verify: %+v %v", i, rep, err)
		}
		for _, b := range []string{"main", "k/one", "k/two"} {
			log, err := l.Log(ctx, b, 0)
			if err != nil {
				t.Fatalf("after kill %d: %s: %v", i, b, err)
			}
			if log[len(log)-1].ID != base.ID || len(log) < prev[b] {
				t.Fatalf("after kill %d: %s has %d snapshots (had %d), ending at %s", i, b, len(log), prev[b], short(log[len(log)-1].ID))
			}
			for _, m := range log[:len(log)-1] {
				if want := b + "-"; !strings.HasPrefix(m.Stage, want) {
					t.Fatalf("after kill %d: %s's history holds %s", i, b, m.Stage)
				}
			}
			if _, err := ReadTable(ctx, l, log[0], schemas.Tasks); err != nil {
				t.Fatalf("after kill %d: %s's head unreadable: %v", i, b, err)
			}
			prev[b] = len(log)
		}
	}
	if prev["k/one"] < 3 || prev["k/two"] < 3 {
		t.Fatalf("too few commits landed on the branches during the kill loop: %v", prev)
	}
	if _, err := l.GC(ctx, false, 0); err != nil {
		t.Fatal(err)
	}
	if rep, _ := l.Verify(ctx, nil); !rep.OK() {
		t.Fatalf("after gc: %+v", rep.Problems)
	}
}

// branchCrashChild commits to main and both branches in turn until killed.
func branchCrashChild() {
	ctx := context.Background()
	l, err := OpenDir(ctx, os.Getenv("CUALAKE_BRANCH_CRASH_CHILD"), false)
	if err != nil {
		os.Exit(2)
	}
	// Start at a different branch each run: each child lives for a few
	// commits only.
	for i := os.Getpid(); ; i++ {
		b := []string{"main", "k/one", "k/two"}[i%3]
		h, err := l.OnBranch(b)
		if err != nil {
			os.Exit(3)
		}
		tx, err := h.Begin(ctx, "")
		if err != nil {
			os.Exit(3)
		}
		if err := ReplaceTable(ctx, tx, schemas.Tasks, fixtureTasks(200+i%50)); err != nil {
			os.Exit(4)
		}
		if _, err := tx.Commit(ctx, CommitInfo{Stage: fmt.Sprintf("%s-%d", b, i)}); err != nil {
			os.Exit(5)
		}
	}
}

func TestGCKeepsWhatOnlyABranchReaches(t *testing.T) {
	ctx := context.Background()
	l, dir := newLake(t)
	commitTasks(t, l, fixtureTasks(3), "base")
	if _, err := l.CreateBranch(ctx, "keep/me", ""); err != nil {
		t.Fatal(err)
	}
	onB, _ := l.OnBranch("keep/me")
	mb, err := commitOn(t, onB, "", 50, "branch-only")
	if err != nil {
		t.Fatal(err)
	}
	commitTasks(t, l, fixtureTasks(60), "main-moves-on")
	for round, del := range []bool{false, true} {
		if del {
			if _, err := l.DeleteBranch(ctx, "keep/me"); err != nil {
				t.Fatal(err)
			}
		}
		rep, err := l.GC(ctx, false, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Removed) != 0 {
			t.Fatalf("round %d: gc removed %v", round, rep.Removed)
		}
		rows, err := ReadTable(ctx, l, mb, schemas.Tasks)
		if err != nil || len(rows) != 50 {
			t.Fatalf("round %d: the branch's data: %d rows, %v", round, len(rows), err)
		}
	}
	// gc refuses a corrupt branch, and a branch whose history lost a manifest.
	if _, err := l.CreateBranch(ctx, "keep/me", mb.ID); err != nil {
		t.Fatal(err)
	}
	ref := filepath.Join(dir, "refs/heads/keep/me")
	good, _ := os.ReadFile(ref)
	os.WriteFile(ref, []byte("nonsense\n"), 0o644)
	if _, err := l.GC(ctx, true, 0); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "refs/heads/keep/me") {
		t.Fatalf("gc over a corrupt branch: %v", err)
	}
	os.WriteFile(ref, good, 0o644)
	if err := os.Remove(filepath.Join(dir, snapshotKey(mb.ID))); err != nil {
		t.Fatal(err)
	}
	if _, err := l.GC(ctx, true, 0); !errors.Is(err, ErrNotExist) || !strings.Contains(err.Error(), "refs/heads/keep/me reaches snapshot") {
		t.Fatalf("gc over a branch with a missing manifest: %v", err)
	}
}

// TestUnknownBranchRefused: Log on a branch that does not exist is an error
// naming it (it printed "no snapshots yet", as for an empty main), and a
// name that is only a folder of branches says so instead of "corrupt".
func TestUnknownBranchRefused(t *testing.T) {
	ctx := context.Background()
	l, _ := newLake(t)
	if log, err := l.Log(ctx, "", 0); err != nil || len(log) != 0 {
		t.Fatalf("log of an empty main: %d %v, want none and no error", len(log), err)
	}
	commitTasks(t, l, fixtureTasks(3), "base")
	for _, name := range []string{"exp/tiny/a", "exp/tiny/b"} {
		if _, err := l.CreateBranch(ctx, name, ""); err != nil {
			t.Fatal(err)
		}
	}
	nosuch, err := l.OnBranch("nosuch")
	if err != nil {
		t.Fatal(err)
	}
	if log, err := nosuch.Log(ctx, "", 0); !errors.Is(err, ErrNotExist) || !strings.Contains(err.Error(), "branch nosuch of lake") {
		t.Errorf("log of branch nosuch: %d snapshots, %v; want ErrNotExist naming the branch", len(log), err)
	}
	folder, _ := l.OnBranch("exp/tiny")
	for what, err := range map[string]error{
		"head": func() error { _, err := folder.Head(ctx); return err }(),
		"log":  func() error { _, err := folder.Log(ctx, "", 0); return err }(),
	} {
		if !errors.Is(err, ErrNotExist) || errors.Is(err, ErrCorrupt) ||
			!strings.Contains(err.Error(), "there is no branch of that name, only branches under it: exp/tiny/a, exp/tiny/b") {
			t.Errorf("%s of branch exp/tiny: %v; want ErrNotExist listing the branches under it", what, err)
		}
	}
	if _, err := l.Resolve(ctx, "exp/tiny"); !errors.Is(err, ErrNotExist) || errors.Is(err, ErrCorrupt) ||
		!strings.Contains(err.Error(), "it is only a folder of refs: branches exp/tiny/a, exp/tiny/b") {
		t.Errorf("resolve exp/tiny: %v; want ErrNotExist listing the branches under it", err)
	}
}
