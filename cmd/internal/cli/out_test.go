package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cualake/cualake/internal/treehash"
)

// folderHashes maps every file under dir to its hash.
func folderHashes(t *testing.T, dir string) map[string]string {
	t.Helper()
	h, err := treehash.Of(dir)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func sameFolder(t *testing.T, before map[string]string, dir string) bool {
	t.Helper()
	after := folderHashes(t, dir)
	if len(after) != len(before) {
		return false
	}
	for p, h := range before {
		if after[p] != h {
			return false
		}
	}
	return true
}

func outLake(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "lake")
	t.Setenv("CUALAKE_LAKE", dir)
	if _, err := run(t, "lake", "init"); err != nil {
		t.Fatal(err)
	}
	commitFixture(t, dir, 3)
	return dir
}

func TestQueryOutRefusedInsideTheLake(t *testing.T) {
	dir := outLake(t)
	before := folderHashes(t, dir)
	for _, p := range []string{filepath.Join(dir, "refs", "heads", "main"), filepath.Join(dir, "lake.json"), filepath.Join(dir, "x.csv")} {
		out, err := run(t, "query", "--out", p, "--format", "csv", "select 1 as n")
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "lake") {
			t.Errorf("query --out %s: %v\n%s", p, err, out)
		}
	}
	if !sameFolder(t, before, dir) {
		t.Fatal("query --out changed the lake")
	}
	if _, err := run(t, "lake", "verify"); err != nil {
		t.Fatalf("verify after refused --out: %v", err)
	}
}

func TestQueryOutDevNullStaysADevice(t *testing.T) {
	outLake(t)
	if out, err := run(t, "query", "--out", "/dev/null", "--format", "csv", "select count(*) from tasks"); err != nil {
		t.Fatalf("query --out /dev/null: %v\n%s", err, out)
	}
	st, err := os.Lstat("/dev/null")
	if err != nil || st.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is %v after query --out /dev/null (%v)", st.Mode(), err)
	}
}

func TestLakeExportNeverDestroys(t *testing.T) {
	outLake(t)
	base := t.TempDir()
	file := filepath.Join(base, "release")
	if err := os.WriteFile(file, []byte("user data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "lake", "export", file); err == nil || !strings.Contains(err.Error(), file) {
		t.Fatalf("lake export onto a file: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "user data" {
		t.Fatalf("the file now holds %q (%v)", b, err)
	}
	full := filepath.Join(base, "full")
	os.MkdirAll(filepath.Join(full, "sub"), 0o755)
	os.WriteFile(filepath.Join(full, "sub", "keep.txt"), []byte("k"), 0o644)
	os.WriteFile(filepath.Join(full, "SHA256SUMS"), []byte("mine"), 0o644)
	before := folderHashes(t, full)
	if out, err := run(t, "lake", "export", full); err == nil || !strings.Contains(err.Error(), full) || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("lake export onto a non-empty folder: %v\n%s", err, out)
	}
	if !sameFolder(t, before, full) {
		t.Fatal("lake export changed a non-empty folder")
	}
	// A folder named like the old fixed staging name is the user's, not
	// the exporter's.
	sibling := filepath.Join(base, "new.tmp-export")
	os.Mkdir(sibling, 0o755)
	os.WriteFile(filepath.Join(sibling, "mine"), []byte("m"), 0o644)
	if out, err := run(t, "lake", "export", filepath.Join(base, "new")); err != nil {
		t.Fatalf("lake export into a new folder: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(sibling, "mine")); err != nil || string(b) != "m" {
		t.Fatalf("lake export removed %s (%v)", sibling, err)
	}
	es, _ := os.ReadDir(base)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "full,new,new.tmp-export,release" {
		t.Fatalf("beside the exports: %v", names)
	}
}
