package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func snapshotFiles(t *testing.T, dir string) int {
	t.Helper()
	e, err := os.ReadDir(filepath.Join(dir, "snapshots"))
	if err != nil {
		t.Fatal(err)
	}
	return len(e)
}

// TestVerifyCorruptRef: a main ref with a CRLF makes verify exit 4 naming
// the ref, and the commands that read main fail instead of working around it.
func TestVerifyCorruptRef(t *testing.T) {
	dir := initLake(t)
	id := commitFixture(t, dir, 3)
	if err := os.WriteFile(filepath.Join(dir, "refs", "heads", "main"), []byte(id+"\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "lake", "verify")
	if ExitCode(err) != ExitVerifyFailed || !strings.Contains(out, "PROBLEM refs/heads/main") || !strings.Contains(out, "CRLF") {
		t.Fatalf("verify with a CRLF main: %s %v (code %d)", out, err, ExitCode(err))
	}
	for _, args := range [][]string{{"lake", "log"}, {"lake", "gc", "--dry-run"}, {"lake", "init"}, {"query", "select 1"}} {
		if _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), "refs/heads/main") {
			t.Errorf("%v over a corrupt main: %v", args, err)
		}
	}
}

// TestMissingMainCannotFork: with main deleted from a lake holding a
// history, verify exits 4 naming the lost head, log does not claim an empty
// lake, and neither init nor an import starts a second root unless told
// to with --new-history.
func TestMissingMainCannotFork(t *testing.T) {
	dir := initLake(t)
	jsonl := filepath.Join(repoPath(t, "pipeline", "importer", "testdata", "jsonl"), "rollouts.jsonl")
	out, err := run(t, "import", "jsonl", "--json", jsonl)
	var rep map[string]any
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || rep["committed"] != true {
		t.Fatalf("import: %s %v", out, err)
	}
	head := rep["snapshot"].(string)
	if err := os.Remove(filepath.Join(dir, "refs", "heads", "main")); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, "lake", "verify")
	if ExitCode(err) != ExitVerifyFailed || !strings.Contains(out, "dangling history") || !strings.Contains(out, head) {
		t.Fatalf("verify without main: %s %v (code %d)", out, err, ExitCode(err))
	}
	if out, err := run(t, "lake", "log"); err == nil || strings.Contains(out, "no snapshots") {
		t.Fatalf("log without main: %s %v", out, err)
	}
	n := snapshotFiles(t, dir)
	if out, err := run(t, "import", "jsonl", jsonl); err == nil || !strings.Contains(err.Error(), "--new-history") {
		t.Fatalf("import onto a dangling history: %s %v", out, err)
	}
	if _, err := run(t, "lake", "init"); err == nil || !strings.Contains(err.Error(), "--new-history") {
		t.Fatalf("init on a dangling history: %v", err)
	}
	if snapshotFiles(t, dir) != n {
		t.Fatal("a refused command wrote a manifest")
	}
	if _, err := os.Stat(filepath.Join(dir, "refs", "heads", "main")); !os.IsNotExist(err) {
		t.Fatalf("a refused command wrote main: %v", err)
	}

	// Asked for, an import starts a new root.
	out, err = run(t, "import", "jsonl", "--json", "--new-history", jsonl)
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || rep["committed"] != true {
		t.Fatalf("import --new-history: %s %v", out, err)
	}
	if out, err := run(t, "lake", "show", "--json"); err != nil || !strings.Contains(out, `"parent": ""`) {
		t.Fatalf("show after import --new-history: %s %v", out, err)
	}
	if _, err := run(t, "lake", "verify"); err != nil {
		t.Fatalf("verify after a new history: %v", err)
	}

	// So does lake init, with an empty root.
	if err := os.Remove(filepath.Join(dir, "refs", "heads", "main")); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "lake", "init", "--new-history"); err != nil || !strings.Contains(out, "new history") {
		t.Fatalf("init --new-history: %s %v", out, err)
	}
	if out, err := run(t, "lake", "log", "--json"); err != nil || strings.Count(out, `"id"`) != 1 || !strings.Contains(out, `"stage": "init"`) {
		t.Fatalf("log after init --new-history: %s %v", out, err)
	}
	if _, err := run(t, "lake", "verify"); err != nil {
		t.Fatalf("verify after init --new-history: %v", err)
	}
}

// TestTagNameRefusals: the CLI refuses bad tag names with the reason.
func TestTagNameRefusals(t *testing.T) {
	dir := initLake(t)
	id := commitFixture(t, dir, 2)
	for name, why := range map[string]string{"x.tmp-1": ".tmp-", "x.lock": ".lock", id[:8]: "hex", "a//b": "empty path component"} {
		if _, err := run(t, "lake", "tag", name, id); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("tag %q: %v, want a refusal saying %q", name, err, why)
		}
	}
}
