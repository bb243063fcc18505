package exporter

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/outfile"
	"github.com/cualake/cualake/schemas"
)

// smallLake holds two tasks cualake made, and returns its folder too.
func smallLake(t *testing.T) (*lake.Lake, string, *lake.Manifest) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	l, err := lake.OpenDir(ctx, dir, true)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := l.Begin(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	rows := []schemas.Task{
		{TaskID: "a", Domain: "os", Instruction: "do a", Setup: "[]", Judge: "{}", Source: schemas.SourceSeed},
		{TaskID: "b", Domain: "chrome", Instruction: "do b", Setup: "[]", Judge: "{}", Source: schemas.SourceSeed},
	}
	if err := lake.ReplaceTable(ctx, tx, schemas.Tasks, rows); err != nil {
		t.Fatal(err)
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "fixture"})
	if err != nil {
		t.Fatal(err)
	}
	return l, dir, m
}

func TestOSWorldTasksNeverDestroys(t *testing.T) {
	ctx := context.Background()
	l, dir, m := smallLake(t)
	base := t.TempDir()
	file := filepath.Join(base, "file")
	os.WriteFile(file, []byte("user data"), 0o644)
	full := filepath.Join(base, "full") // holds no examples/, but is not empty
	os.Mkdir(full, 0o755)
	os.WriteFile(filepath.Join(full, "test_all.json"), []byte("mine"), 0o644)
	for _, p := range []string{file, full, filepath.Join(dir, "pool")} {
		if _, err := OSWorldTasks(ctx, l, m, p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("export to %s: %v", p, err)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "user data" {
		t.Errorf("file now holds %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(full, "test_all.json")); string(b) != "mine" {
		t.Errorf("full/test_all.json now holds %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "pool")); err == nil {
		t.Error("export wrote into the lake")
	}
	empty := filepath.Join(base, "empty")
	os.Mkdir(empty, 0o755)
	rep, err := OSWorldTasks(ctx, l, m, empty)
	if err != nil || rep.Tasks != 2 || rep.Dir != empty {
		t.Fatalf("export into an empty folder: %+v %v", rep, err)
	}
	st, err := os.Stat(filepath.Join(empty, "examples", "os", "a.json"))
	if err != nil || st.Mode() != outfile.FileMode() {
		t.Fatalf("exported task: %v %v", st, err)
	}
	es, _ := os.ReadDir(base)
	if len(es) != 3 {
		t.Fatalf("%d entries beside the exports, want 3 (no staging left)", len(es))
	}
}

func TestVerlOutNeverDestroys(t *testing.T) {
	ctx := context.Background()
	l, dir, m := smallLake(t)
	ref := filepath.Join(dir, "refs", "heads", "main")
	head, _ := os.ReadFile(ref)
	for _, p := range []string{ref, filepath.Join(dir, "pool.parquet")} {
		if _, err := Verl(ctx, l, m, p, VerlOptions{TextOnly: true}); !errors.Is(err, outfile.ErrInsideLake) {
			t.Errorf("export verl %s: %v", p, err)
		}
	}
	if b, _ := os.ReadFile(ref); string(b) != string(head) {
		t.Fatal("the ref changed")
	}
	if _, err := os.Stat(filepath.Join(dir, "pool.parquet")); err == nil {
		t.Fatal("export verl wrote into the lake")
	}
	base := t.TempDir()
	if _, err := Verl(ctx, l, m, base, VerlOptions{TextOnly: true}); !errors.Is(err, outfile.ErrExists) {
		t.Fatalf("export verl onto a folder: %v", err)
	}
	// A FIFO is written through, not replaced.
	fifo := filepath.Join(base, "pool.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(fifo, os.O_RDWR, 0) // never blocks; the file waits in the pipe buffer
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if rep, err := Verl(ctx, l, m, fifo, VerlOptions{TextOnly: true}); err != nil || rep.Rows != 2 {
		t.Fatalf("export verl to a FIFO: %+v %v", rep, err)
	}
	buf := make([]byte, 4)
	if n, _ := r.Read(buf); n != 4 || string(buf) != "PAR1" {
		t.Fatalf("FIFO got %q", buf[:n])
	}
	if st, _ := os.Lstat(fifo); st.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatal("the FIFO was replaced")
	}
	out := filepath.Join(base, "pool.parquet")
	if _, err := Verl(ctx, l, m, out, VerlOptions{TextOnly: true}); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(out); st.Mode() != outfile.FileMode() {
		t.Fatalf("pool.parquet mode %v, want %v", st.Mode(), outfile.FileMode())
	}
}
