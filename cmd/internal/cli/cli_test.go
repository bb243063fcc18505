package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// run executes one cualake command line in-process.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	app := App()
	var out, errOut bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errOut
	err := RunArgs(context.Background(), app, append([]string{"cualake"}, args...))
	return out.String() + errOut.String(), err
}

func commitFixture(t *testing.T, dir string, n int) string {
	t.Helper()
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	var rows []schemas.Task
	for i := 0; i < n; i++ {
		rows = append(rows, schemas.Task{TaskID: fmt.Sprintf("t%d", i), Domain: "files", Setup: "[]", Judge: "{}", Source: "seed"})
	}
	tx, _ := l.Begin(ctx, "")
	if err := lake.ReplaceTable(ctx, tx, schemas.Tasks, rows); err != nil {
		t.Fatal(err)
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "fixture", Params: map[string]int{"n": n}})
	if err != nil {
		t.Fatal(err)
	}
	return m.ID
}

func TestLakeCommandsEndToEnd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	t.Setenv("CUALAKE_LAKE", dir)
	if _, err := run(t, "query", "select 1"); err == nil || !strings.Contains(err.Error(), "lake init") {
		t.Fatalf("query on a missing lake: %v", err)
	}
	if out, err := run(t, "lake", "init"); err != nil || !strings.Contains(out, "lake ready") {
		t.Fatalf("init: %s %v", out, err)
	}
	if out, _ := run(t, "lake", "log"); !strings.Contains(out, "no snapshots") {
		t.Fatalf("log of empty lake: %s", out)
	}
	first := commitFixture(t, dir, 3)
	second := commitFixture(t, dir, 5)
	out, err := run(t, "lake", "log", "--json")
	var log []map[string]any
	if err != nil || json.Unmarshal([]byte(out), &log) != nil || len(log) != 2 || log[0]["id"] != second {
		t.Fatalf("log --json: %s %v", out, err)
	}
	if out, err := run(t, "lake", "tag", "v1", first[:8]); err != nil || !strings.Contains(out, first) {
		t.Fatalf("tag: %s %v", out, err)
	}
	if out, err := run(t, "query", "--at", "v1", "--format", "csv", "select count(*) as n from tasks"); err != nil || out != "n\n3\n" {
		t.Fatalf("query --at tag: %q %v", out, err)
	}
	if out, err := run(t, "query", "--format", "csv", "select count(*) as n from tasks"); err != nil || out != "n\n5\n" {
		t.Fatalf("query head: %q %v", out, err)
	}
	if out, err := run(t, "lake", "diff", "v1"); err != nil || !strings.Contains(out, "+2 -0") {
		t.Fatalf("diff: %s %v", out, err)
	}
	if out, err := run(t, "lake", "show", "--json", "v1"); err != nil || !strings.Contains(out, `"stage": "fixture"`) {
		t.Fatalf("show: %s %v", out, err)
	}
	if _, err := run(t, "lake", "verify"); err != nil {
		t.Fatalf("verify: %v", err)
	}
	if out, err := run(t, "lake", "gc", "--grace", "0s"); err != nil || !strings.Contains(out, "removed 0 file") {
		t.Fatalf("gc: %s %v", out, err)
	}
	rel := filepath.Join(t.TempDir(), "release")
	if _, err := run(t, "lake", "export", "--at", "v1", rel); err != nil {
		t.Fatalf("export: %v", err)
	}
	if _, err := os.Stat(filepath.Join(rel, "SHA256SUMS")); err != nil {
		t.Fatal(err)
	}
	// Errors scripts can tell apart.
	_, err = run(t, "query", "insert into lake_snapshots (id) values ('x')")
	if ExitCode(err) != ExitFailure || !strings.Contains(err.Error(), "read statements") {
		t.Fatalf("write query: %v (code %d)", err, ExitCode(err))
	}
	_, err = run(t, "lake", "diff")
	if ExitCode(err) != ExitUsage {
		t.Fatalf("usage error code: %d", ExitCode(err))
	}
	_, err = run(t, "query", "--at", "nosuchtag", "select 1")
	if err == nil || !strings.Contains(err.Error(), "nosuchtag") {
		t.Fatalf("unknown ref: %v", err)
	}
	// A corrupted file makes verify exit 4.
	m, _ := os.ReadDir(filepath.Join(dir, "data", "tasks"))
	os.WriteFile(filepath.Join(dir, "data", "tasks", m[0].Name()), []byte("garbage"), 0o644)
	_, err = run(t, "lake", "verify")
	if ExitCode(err) != ExitVerifyFailed {
		t.Fatalf("verify on corrupt lake: %v (code %d)", err, ExitCode(err))
	}
}

// TestVersionFlag: --version prints the code version the manifests record,
// for the main binary and the stage binaries.
func TestVersionFlag(t *testing.T) {
	out, err := run(t, "--version")
	if err != nil || !strings.Contains(out, lake.CodeVersion) {
		t.Fatalf("cualake --version: %q %v", out, err)
	}
	app := StageApp("segment")
	var buf bytes.Buffer
	app.Writer = &buf
	if err := RunArgs(context.Background(), app, []string{"segment", "--version"}); err != nil || !strings.Contains(buf.String(), lake.CodeVersion) {
		t.Fatalf("segment --version: %q %v", buf.String(), err)
	}
}

func TestEveryCommandHasAnExample(t *testing.T) {
	for _, c := range App().Commands {
		if !strings.Contains(c.Description, "Example") {
			t.Errorf("%s: --help has no example", c.Name)
		}
		for _, s := range c.Subcommands {
			if s.Name == "help" {
				continue
			}
			if !strings.Contains(s.Description, "Example") {
				t.Errorf("%s %s: --help has no example", c.Name, s.Name)
			}
		}
	}
}

// TestFlagUsageHasNoBacktick: urfave/cli takes a `quoted` word in a flag's
// usage as its value's placeholder, so "`cualake lake merge`" rendered as
// "--shard cualake lake merge  I/N: ...". Usage strings quote plainly.
func TestFlagUsageHasNoBacktick(t *testing.T) {
	var walk func(path string, cmds []*cli.Command)
	check := func(path string, flags []cli.Flag) {
		for _, f := range flags {
			if u, ok := f.(interface{ GetUsage() string }); ok && strings.Contains(u.GetUsage(), "`") {
				t.Errorf("%s --%s: usage %q has a backtick", path, f.Names()[0], u.GetUsage())
			}
		}
	}
	walk = func(path string, cmds []*cli.Command) {
		for _, c := range cmds {
			check(path+" "+c.Name, c.Flags)
			walk(path+" "+c.Name, c.Subcommands)
		}
	}
	app := App()
	check("cualake", app.Flags)
	walk("cualake", app.Commands)
}
