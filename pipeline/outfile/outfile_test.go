package outfile_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/outfile"
	"github.com/cualake/cualake/schemas"
)

func write(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

func mustWriteFile(t *testing.T, p, s string, mode fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func readString(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// names lists dir's entries, so a test can see that no temporary file is
// left behind.
func names(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return strings.Join(out, ",")
}

func currentUmask() fs.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return fs.FileMode(m)
}

func TestWriteNewFileGetsUmaskMode(t *testing.T) {
	want := 0o666 &^ currentUmask()
	if outfile.FileMode() != want || outfile.DirMode() != 0o777&^currentUmask() {
		t.Fatalf("FileMode %v DirMode %v under umask %v", outfile.FileMode(), outfile.DirMode(), currentUmask())
	}
	p := filepath.Join(t.TempDir(), "sub", "out.csv")
	if err := outfile.Write(p, write("a\n")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode() != want || readString(t, p) != "a\n" {
		t.Fatalf("new file: %v %v, want mode %v", st.Mode(), err, want)
	}
	if n := names(t, filepath.Dir(p)); n != "out.csv" {
		t.Fatalf("left behind: %s", n)
	}
}

// TestUmask027 runs the checks in a child process started under umask 027,
// since the package reads the umask once at start.
func TestUmask027(t *testing.T) {
	if os.Getenv("OUTFILE_CHILD") == "umask" {
		dir := os.Getenv("OUTFILE_DIR")
		if err := outfile.WriteBytes(filepath.Join(dir, "f"), []byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := outfile.WriteDir(filepath.Join(dir, "d"), func(s string) error { return os.WriteFile(filepath.Join(s, "x"), nil, 0o666) }); err != nil {
			t.Fatal(err)
		}
		return
	}
	dir := t.TempDir()
	out, err := child(t, "umask", dir, "umask 027")
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for name, want := range map[string]fs.FileMode{"f": 0o640, "d": fs.ModeDir | 0o750, "d/x": 0o640} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || st.Mode() != want {
			t.Errorf("%s under umask 027: %v %v, want %v", name, st.Mode(), err, want)
		}
	}
}

// child reruns this test binary's test named by mode in a shell that first
// runs setup, with stdout captured.
func child(t *testing.T, mode, dir, setup string) (string, error) {
	t.Helper()
	run := map[string]string{"umask": "TestUmask027", "stdout": "TestWriteToDevStdout"}[mode]
	cmd := exec.Command("sh", "-c", setup+` && exec "$0" -test.run='^`+run+`$' -test.count=1`, os.Args[0])
	cmd.Env = append(os.Environ(), "OUTFILE_CHILD="+mode, "OUTFILE_DIR="+dir)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	return buf.String(), err
}

func TestWriteReplacesRegularFileKeepingItsMode(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.json")
	mustWriteFile(t, p, "old", 0o600)
	if err := outfile.Write(p, write("new")); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(p)
	if readString(t, p) != "new" || st.Mode() != 0o600 {
		t.Fatalf("replaced file: %q %v", readString(t, p), st.Mode())
	}
	if n := names(t, dir); n != "out.json" {
		t.Fatalf("left behind: %s", n)
	}
}

func TestWriteFailureLeavesTheOldFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.json")
	mustWriteFile(t, p, "old", 0o644)
	err := outfile.Write(p, func(w io.Writer) error {
		io.WriteString(w, "half")
		return errors.New("boom")
	})
	if err == nil || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), p) {
		t.Fatalf("failed write: %v", err)
	}
	if readString(t, p) != "old" || names(t, dir) != "out.json" {
		t.Fatalf("after a failed write: %q, folder %s", readString(t, p), names(t, dir))
	}
}

func TestWriteRefusesADirectory(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out")
	os.Mkdir(p, 0o755)
	mustWriteFile(t, filepath.Join(p, "keep"), "k", 0o644)
	err := outfile.Write(p, write("x"))
	if !errors.Is(err, outfile.ErrExists) || !strings.Contains(err.Error(), p) {
		t.Fatalf("write onto a directory: %v", err)
	}
	if readString(t, filepath.Join(p, "keep")) != "k" || names(t, dir) != "out" {
		t.Fatal("the directory changed")
	}
}

func TestWriteThroughDevNull(t *testing.T) {
	if err := outfile.Write("/dev/null", write("discarded")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Lstat("/dev/null")
	if err != nil || st.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is no longer a character device: %v %v", st.Mode(), err)
	}
}

func TestWriteThroughFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	// Opened read-write, the reader never blocks and the writer's open
	// finds a reader; the bytes wait in the pipe's buffer.
	r, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := outfile.Write(p, write("through the pipe")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	n, err := r.Read(buf)
	if err != nil || string(buf[:n]) != "through the pipe" {
		t.Fatalf("read %q %v", buf[:n], err)
	}
	st, _ := os.Lstat(p)
	if st.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v", st.Mode())
	}
}

// TestWriteToDevStdout checks, in a child whose stdout is a pipe, that
// /dev/stdout (-> /proc/self/fd/1 -> pipe:[n]) is written through.
func TestWriteToDevStdout(t *testing.T) {
	if os.Getenv("OUTFILE_CHILD") == "stdout" {
		if err := outfile.Write("/dev/stdout", write("<<to stdout>>\n")); err != nil {
			t.Fatal(err)
		}
		return
	}
	out, err := child(t, "stdout", "", "true")
	if err != nil || !strings.Contains(out, "<<to stdout>>") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if st, err := os.Lstat("/dev/stdout"); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("/dev/stdout changed: %v %v", st.Mode(), err)
	}
}

func TestWriteFollowsASymlink(t *testing.T) {
	base := t.TempDir()
	os.Mkdir(filepath.Join(base, "real"), 0o755)
	os.Mkdir(filepath.Join(base, "links"), 0o755)
	target := filepath.Join(base, "real", "data.csv")
	mustWriteFile(t, target, "old", 0o640)
	link := filepath.Join(base, "links", "out.csv")
	if err := os.Symlink("../real/data.csv", link); err != nil {
		t.Fatal(err)
	}
	if err := outfile.Write(link, write("new")); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Lstat(link)
	if st.Mode()&fs.ModeSymlink == 0 {
		t.Fatal("the link was replaced")
	}
	tst, _ := os.Stat(target)
	if readString(t, target) != "new" || tst.Mode() != 0o640 {
		t.Fatalf("target: %q %v", readString(t, target), tst.Mode())
	}
	if names(t, filepath.Join(base, "real")) != "data.csv" || names(t, filepath.Join(base, "links")) != "out.csv" {
		t.Fatal("temporary files left behind")
	}
}

func TestWriteRefusesADanglingSymlink(t *testing.T) {
	base := t.TempDir()
	link := filepath.Join(base, "out.csv")
	os.Symlink("missing/data.csv", link)
	err := outfile.Write(link, write("x"))
	if err == nil || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("dangling link: %v", err)
	}
	if names(t, base) != "out.csv" {
		t.Fatalf("folder now holds %s", names(t, base))
	}
	if st, _ := os.Lstat(link); st.Mode()&fs.ModeSymlink == 0 {
		t.Fatal("the link was replaced")
	}
}

// newLake makes a lake in dir with one commit, so it has a ref, a manifest
// and a data file.
func newLake(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, dir, true)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := l.Begin(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := lake.ReplaceTable(ctx, tx, schemas.Tasks, []schemas.Task{{TaskID: "t1", Domain: "files", Setup: "[]", Judge: "{}", Source: "seed"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx, lake.CommitInfo{Stage: "fixture"}); err != nil {
		t.Fatal(err)
	}
}

func TestWriteRefusesPathsInsideALake(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "lake")
	newLake(t, dir)
	ref := filepath.Join(dir, "refs", "heads", "main")
	before := readString(t, ref)
	os.Symlink(filepath.Join(dir, "refs"), filepath.Join(base, "into-lake"))
	os.Symlink(ref, filepath.Join(base, "main-link"))
	for _, p := range []string{
		ref,
		filepath.Join(dir, "lake.json"),
		filepath.Join(dir, "new.csv"),
		filepath.Join(dir, "data", "new", "deeper.csv"),
		filepath.Join(base, "into-lake", "heads", "main"), // through a folder link
		filepath.Join(base, "main-link"),                  // a link to a lake file
	} {
		err := outfile.Write(p, write("x"))
		if !errors.Is(err, outfile.ErrInsideLake) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: %v", p, err)
		}
	}
	if readString(t, ref) != before {
		t.Fatal("the ref changed")
	}
	for _, p := range []string{"new.csv", "data/new"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s was created in the lake", p)
		}
	}
	// A lake named by the caller is refused even without its marker.
	plain := filepath.Join(base, "plain")
	os.Mkdir(plain, 0o755)
	if err := outfile.Write(filepath.Join(plain, "x.csv"), write("x"), plain); !errors.Is(err, outfile.ErrInsideLake) {
		t.Fatalf("inside a named lake: %v", err)
	}
	// An unrelated lake.json is no lake.
	mustWriteFile(t, filepath.Join(plain, "lake.json"), `{"kind":"other"}`, 0o644)
	if err := outfile.Write(filepath.Join(plain, "x.csv"), write("x")); err != nil {
		t.Fatalf("beside an unrelated lake.json: %v", err)
	}
	// Beside the lake is fine.
	if err := outfile.Write(filepath.Join(base, "x.csv"), write("x"), dir); err != nil {
		t.Fatalf("beside the lake: %v", err)
	}
}

func fillWith(files map[string]string) func(string) error {
	return func(staging string) error {
		for name, body := range files {
			p := filepath.Join(staging, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
				return err
			}
			if err := os.WriteFile(p, []byte(body), 0o666); err != nil {
				return err
			}
		}
		return nil
	}
}

func TestWriteDirIntoAbsentAndEmptyFolders(t *testing.T) {
	base := t.TempDir()
	for _, tc := range []struct {
		name  string
		setup func(p string)
		mode  fs.FileMode
	}{
		{"absent/nested", func(string) {}, outfile.DirMode()},
		{"empty", func(p string) { os.Mkdir(p, 0o700) }, 0o700},
	} {
		p := filepath.Join(base, tc.name)
		tc.setup(p)
		if err := outfile.WriteDir(p, fillWith(map[string]string{"a/b.txt": "b", "c.txt": "c"})); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		st, _ := os.Stat(p)
		if readString(t, filepath.Join(p, "a", "b.txt")) != "b" || st.Mode().Perm() != tc.mode {
			t.Fatalf("%s: mode %v", tc.name, st.Mode())
		}
	}
	if n, m := names(t, base), names(t, filepath.Join(base, "absent")); n != "absent,empty" || m != "nested" {
		t.Fatalf("left behind: %s / %s", n, m)
	}
	// A link to an empty folder is followed and kept.
	os.Mkdir(filepath.Join(base, "target"), 0o755)
	link := filepath.Join(base, "link")
	os.Symlink("target", link)
	if err := outfile.WriteDir(link, fillWith(map[string]string{"x": "x"})); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Lstat(link); st.Mode()&fs.ModeSymlink == 0 || readString(t, filepath.Join(base, "target", "x")) != "x" {
		t.Fatal("link to an empty folder not followed")
	}
}

func TestWriteDirRefusesToDestroy(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "file")
	mustWriteFile(t, file, "user data", 0o644)
	full := filepath.Join(base, "full")
	os.Mkdir(full, 0o755)
	mustWriteFile(t, filepath.Join(full, "keep"), "k", 0o644)
	// The old exporter removed this sibling; it is not ours.
	sibling := filepath.Join(base, "full.tmp-export")
	os.Mkdir(sibling, 0o755)
	mustWriteFile(t, filepath.Join(sibling, "mine"), "m", 0o644)
	dangling := filepath.Join(base, "dangling")
	os.Symlink("nowhere", dangling)
	for _, p := range []string{file, full, dangling} {
		called := false
		err := outfile.WriteDir(p, func(string) error { called = true; return nil })
		if err == nil || called || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v (fill called: %v)", p, err, called)
		}
	}
	if readString(t, file) != "user data" || readString(t, filepath.Join(full, "keep")) != "k" || readString(t, filepath.Join(sibling, "mine")) != "m" {
		t.Fatal("user data changed")
	}
	if n := names(t, base); n != "dangling,file,full,full.tmp-export" {
		t.Fatalf("folder now holds %s", n)
	}
}

func TestWriteDirFailureRemovesOnlyItsStaging(t *testing.T) {
	base := t.TempDir()
	empty := filepath.Join(base, "empty")
	os.Mkdir(empty, 0o755)
	for _, p := range []string{filepath.Join(base, "absent"), empty} {
		err := outfile.WriteDir(p, func(s string) error {
			fillWith(map[string]string{"partial": "p"})(s)
			return fmt.Errorf("boom")
		})
		if err == nil || err.Error() != "boom" {
			t.Fatalf("%s: %v", p, err)
		}
	}
	if n := names(t, base); n != "empty" || names(t, empty) != "" {
		t.Fatalf("after failures: %s / %s", n, names(t, empty))
	}
}

func TestWriteDirRefusesInsideALake(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "lake")
	newLake(t, dir)
	for _, p := range []string{dir, filepath.Join(dir, "release"), filepath.Join(dir, "data")} {
		if err := outfile.WriteDir(p, fillWith(nil)); !errors.Is(err, outfile.ErrInsideLake) {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "release")); err == nil {
		t.Fatal("release made inside the lake")
	}
}
