package lake

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cualake/cualake/pipeline/outfile"
)

func TestMarkerIsWhatOutfileLooksFor(t *testing.T) {
	if markerKey != outfile.LakeMarker {
		t.Fatalf("lake marker %q, outfile refuses outputs beside %q", markerKey, outfile.LakeMarker)
	}
}

// checkModes commits into a fresh lake and checks that every file and
// folder in it has the mode the process's umask gives (os.CreateTemp alone
// would leave 0600, unreadable to the rest of a group sharing the lake).
func checkModes(t *testing.T) {
	l, dir := newLake(t)
	commitTasks(t, l, fixtureTasks(5), "seed")
	if _, err := l.Tag(t.Context(), "v1", ""); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		want := outfile.FileMode()
		if st.IsDir() {
			want = fs.ModeDir | outfile.DirMode()
		}
		if st.Mode() != want {
			rel, _ := filepath.Rel(dir, p)
			t.Errorf("%s: mode %v, want %v", rel, st.Mode(), want)
		}
		n++
		return nil
	})
	if err != nil || n < 5 {
		t.Fatalf("walked %d entries: %v", n, err)
	}
}

func TestLakeFilesFollowTheUmask(t *testing.T) {
	if os.Getenv("CUALAKE_UMASK_CHILD") != "" {
		checkModes(t)
		return
	}
	checkModes(t)
	// Again under umask 027 (files 0640, folders 0750), in a child since
	// the umask is read once at start.
	cmd := exec.Command("sh", "-c", `umask 027 && exec "$0" -test.run='^TestLakeFilesFollowTheUmask$' -test.count=1 -test.v`, os.Args[0])
	cmd.Env = append(os.Environ(), "CUALAKE_UMASK_CHILD=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil || !bytes.Contains(out.Bytes(), []byte("--- PASS: TestLakeFilesFollowTheUmask")) {
		t.Fatalf("under umask 027: %v\n%s", err, out.String())
	}
}
