package query

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cualake/cualake/internal/treehash"
	"github.com/cualake/cualake/pipeline/outfile"
)

func oneRow() *Result {
	return &Result{Columns: []string{"n"}, Types: []string{"BIGINT"}, Rows: [][]any{{int64(7)}}}
}

// lakeHashes maps every file of the lake folder to its hash.
func lakeHashes(t *testing.T, dir string) map[string]string {
	t.Helper()
	h, err := treehash.Of(dir)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func sameHashes(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestWriteFileRefusesTheLakesOwnFiles(t *testing.T) {
	_, dir, m := fixture(t, 3)
	before := lakeHashes(t, dir)
	var data string
	for p := range before {
		if strings.HasSuffix(p, ".parquet") {
			data = p
		}
	}
	if _, ok := before[filepath.Join(dir, "snapshots", m.ID+".json")]; !ok || data == "" {
		t.Fatalf("fixture lake lacks its manifest or data file: %v", before)
	}
	for _, p := range []string{
		filepath.Join(dir, "refs", "heads", "main"),
		filepath.Join(dir, "snapshots", m.ID+".json"),
		filepath.Join(dir, "lake.json"),
		data,
		filepath.Join(dir, "new.csv"),
	} {
		err := WriteFile(p, "csv", oneRow(), dir)
		if !errors.Is(err, outfile.ErrInsideLake) || !strings.Contains(err.Error(), p) {
			t.Errorf("--out %s: %v", p, err)
		}
	}
	if !sameHashes(before, lakeHashes(t, dir)) {
		t.Fatal("the lake's files changed")
	}
}

func TestWriteFileToDevNullAndThroughLinks(t *testing.T) {
	if err := WriteFile("/dev/null", "csv", oneRow()); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat("/dev/null"); err != nil || st.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is %v after --out /dev/null (%v)", st.Mode(), err)
	}
	base := t.TempDir()
	target := filepath.Join(base, "target.csv")
	os.WriteFile(target, []byte("old"), 0o644)
	link := filepath.Join(base, "link.csv")
	os.Symlink("target.csv", link)
	if err := WriteFile(link, "csv", oneRow()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "n\n7\n" {
		t.Fatalf("link target holds %q", b)
	}
	if st, _ := os.Lstat(link); st.Mode()&fs.ModeSymlink == 0 {
		t.Fatal("--out replaced the link")
	}
	dangling := filepath.Join(base, "dangling.csv")
	os.Symlink("missing.csv", dangling)
	if err := WriteFile(dangling, "csv", oneRow()); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("dangling link: %v", err)
	}
	if st, _ := os.Lstat(dangling); st.Mode()&fs.ModeSymlink == 0 {
		t.Fatal("--out replaced the dangling link")
	}
}

func TestWriteFileModeFollowsTheUmask(t *testing.T) {
	p := filepath.Join(t.TempDir(), "out.parquet")
	if err := WriteFile(p, "parquet", oneRow()); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(p); err != nil || st.Mode() != outfile.FileMode() {
		t.Fatalf("--out file mode %v (%v), want %v", st.Mode(), err, outfile.FileMode())
	}
}

func TestExportNeverDestroys(t *testing.T) {
	ctx := context.Background()
	l, dir, m := fixture(t, 3)
	base := t.TempDir()
	file := filepath.Join(base, "release")
	os.WriteFile(file, []byte("user data"), 0o644)
	full := filepath.Join(base, "full")
	os.Mkdir(full, 0o755)
	os.WriteFile(filepath.Join(full, "keep"), []byte("k"), 0o644)
	// The old Export removed dir+".tmp-export" as its own.
	sibling := filepath.Join(base, "full.tmp-export")
	os.Mkdir(sibling, 0o755)
	os.WriteFile(filepath.Join(sibling, "mine"), []byte("m"), 0o644)
	for _, p := range []string{file, full, dir, filepath.Join(dir, "release")} {
		if err := Export(ctx, l, m, p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("export to %s: %v", p, err)
		}
	}
	for p, want := range map[string]string{file: "user data", filepath.Join(full, "keep"): "k", filepath.Join(sibling, "mine"): "m"} {
		if b, err := os.ReadFile(p); err != nil || string(b) != want {
			t.Errorf("%s now holds %q (%v)", p, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "release")); err == nil {
		t.Error("export wrote into the lake")
	}
	// An empty folder is filled; its staging folder is gone after.
	empty := filepath.Join(base, "empty")
	os.Mkdir(empty, 0o755)
	if err := Export(ctx, l, m, empty); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(empty, "SHA256SUMS")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(empty, "manifest.json")); st.Mode() != outfile.FileMode() {
		t.Errorf("manifest.json mode %v", st.Mode())
	}
	es, _ := os.ReadDir(base)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "empty,full,full.tmp-export,release" {
		t.Fatalf("beside the exports: %v", names)
	}
}
