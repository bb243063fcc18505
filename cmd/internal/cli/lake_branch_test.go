package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLakeBranchCommands: branch create/list/delete, --branch on a stage
// (import), on lake log/diff and query, --at with a branch name, and bad
// names refused with the reason.
func TestLakeBranchCommands(t *testing.T) {
	base := commitFixture(t, initLake(t), 3)
	out, err := run(t, "lake", "branch", "create", "--json", "exp/a")
	var created map[string]string
	if err != nil || json.Unmarshal([]byte(out), &created) != nil || created["snapshot"] != base {
		t.Fatalf("branch create: %s %v", out, err)
	}
	if _, err := run(t, "lake", "tag", "v1"); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "lake", "branch", "create", "--from", "v1", "exp/b"); err != nil {
		t.Fatal(err)
	}
	for name, why := range map[string]string{"v1": "a tag of that name exists", "a b": "contains a space", "main": "main is the main branch", "exp": "so exp is a folder"} {
		if out, err := run(t, "lake", "branch", "create", name); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("branch create %q: %s %v, want %q", name, out, err, why)
		}
	}
	if out, err := run(t, "lake", "tag", "exp/a"); err == nil || !strings.Contains(err.Error(), "a branch of that name exists") {
		t.Errorf("tag named like a branch: %s %v", out, err)
	}
	if _, err := run(t, "query", "--branch", "a b", "select 1"); ExitCode(err) != ExitUsage {
		t.Errorf("--branch with a bad name: %v (code %d)", err, ExitCode(err))
	}
	// A stage with --branch commits to the branch only.
	jsonl := repoPath(t, "pipeline", "importer", "testdata", "jsonl", "rollouts.jsonl")
	out, err = run(t, "import", "jsonl", "--branch", "exp/a", "--json", jsonl)
	var rep map[string]any
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || rep["committed"] != true {
		t.Fatalf("import on a branch: %s %v", out, err)
	}
	onA := rep["snapshot"].(string)
	out, err = run(t, "lake", "branch", "list", "--json")
	var list []map[string]string
	if err != nil || json.Unmarshal([]byte(out), &list) != nil {
		t.Fatalf("branch list: %s %v", out, err)
	}
	heads := map[string]string{}
	for _, b := range list {
		heads[b["branch"]] = b["snapshot"]
	}
	if len(heads) != 3 || heads["main"] != base || heads["exp/a"] != onA || heads["exp/b"] != base {
		t.Fatalf("branch heads after a commit on exp/a: %v", heads)
	}
	// log, diff, query and --at read the branch.
	out, err = run(t, "lake", "log", "--branch", "exp/a", "--json")
	var log []map[string]any
	if err != nil || json.Unmarshal([]byte(out), &log) != nil || len(log) != 2 || log[0]["id"] != onA {
		t.Fatalf("log --branch: %s %v", out, err)
	}
	if out, err := run(t, "lake", "log", "--at", "exp/a", "--limit", "1"); err != nil || !strings.Contains(out, onA[:12]) {
		t.Fatalf("log --at BRANCH: %s %v", out, err)
	}
	if out, err := run(t, "lake", "diff", "--branch", "exp/a", "--json", "main"); err != nil || !strings.Contains(out, `"b": "`+onA) {
		t.Fatalf("diff main against the branch head: %s %v", out, err)
	}
	q := "select count(*) as n from trajectories"
	outMain, err := run(t, "query", "--format", "csv", q)
	if err != nil {
		t.Fatal(err)
	}
	outA, err := run(t, "query", "--branch", "exp/a", "--format", "csv", q)
	if err != nil {
		t.Fatal(err)
	}
	outAt, err := run(t, "query", "--at", "exp/a", "--format", "csv", q)
	if err != nil || outA == outMain || outAt != outA {
		t.Fatalf("query main %q, --branch %q, --at %q: %v", outMain, outA, outAt, err)
	}
	if out, err := run(t, "query", "--branch", "exp/a", "--format", "csv", "select heads from lake_snapshots where depth = 0"); err != nil || !strings.Contains(out, "exp/a") {
		t.Fatalf("lake_snapshots heads: %s %v", out, err)
	}
	// Delete: the ref goes, the data stays through gc.
	if _, err := run(t, "lake", "branch", "delete", "exp/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "lake", "branch", "delete", "main"); err == nil {
		t.Fatal("deleted main")
	}
	if _, err := run(t, "lake", "gc", "--grace", "0s"); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "query", "--at", onA, "--format", "csv", q); err != nil || out != outA {
		t.Fatalf("the deleted branch's snapshot after gc: %q %v", out, err)
	}
	if out, err := run(t, "lake", "verify"); err != nil {
		t.Fatalf("verify: %s %v", out, err)
	}
}
