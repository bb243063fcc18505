package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/query/notebook/notebooktest"
)

// fixtureLake commits the notebooktest fixture to a fresh lake folder.
func fixtureLake(t *testing.T) (string, *lake.Manifest) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "lake")
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, dir, true)
	if err != nil {
		t.Fatal(err)
	}
	l.Now = func() time.Time { return time.Unix(1_700_000_000, 0) }
	m, err := notebooktest.Commit(ctx, l, notebooktest.FixtureRows(), "fixture")
	if err != nil {
		t.Fatal(err)
	}
	return dir, m
}

func auditJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out, err := run(t, args...)
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &v); err != nil {
		t.Fatalf("%v: not JSON: %v\n%s", args, err, out)
	}
	return v
}

func TestAuditCommands(t *testing.T) {
	dir, m := fixtureLake(t)
	t.Setenv("CUALAKE_LAKE", dir)
	reports := t.TempDir()
	labels := filepath.Join(t.TempDir(), "labels.csv")
	os.WriteFile(labels, []byte("trajectory_id,human\ntr-000,success\ntr-001,failure\ntr-002,success\n"), 0o644)

	prev := m.ID
	for _, args := range [][]string{
		{"audit", "overlap", "--json"},
		{"audit", "judges", "--labels", labels, "--json"},
		{"audit", "--json", "verifier"}, // flags before the kind
		{"audit", "synthesis", "--json"},
		{"audit", "health", "--p-min", "0.2", "--json"},
	} {
		kind := args[1]
		if strings.HasPrefix(kind, "--") {
			kind = args[2]
		}
		report := filepath.Join(reports, kind+".html")
		v := auditJSON(t, append(args, "--report", report)...)
		if v["kind"] != kind || v["parent"] != prev || v["audited"] != prev || v["report"] != report {
			t.Fatalf("%v: %v", args, v)
		}
		if fails, _ := v["report_failures"].([]any); len(fails) != 0 {
			t.Fatalf("%s report failures: %v", kind, fails)
		}
		if n, _ := v["rows"].(float64); n == 0 {
			t.Fatalf("%s wrote no rows", kind)
		}
		html, err := os.ReadFile(report)
		if err != nil || !bytes.Contains(html, []byte(v["snapshot"].(string))) || !bytes.Contains(html, []byte(`class="dp"`)) {
			t.Fatalf("%s report %s: %v", kind, report, err)
		}
		prev = v["snapshot"].(string)
	}
	out, err := run(t, "query", "--format", "csv", `select kind, count(*) as n from audits group by 1 order by 1`)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"health", "judges", "overlap", "synthesis", "verifier"} {
		if !strings.Contains(out, "\n"+kind+",") {
			t.Fatalf("audits lacks %s rows:\n%s", kind, out)
		}
	}
	out, _ = run(t, "query", "--format", "csv", `select stage, params::JSON->>'kind' as kind, params::JSON->>'p_min' as p_min from lake_snapshots where depth = 0`)
	if !strings.Contains(out, "audit,health,0.2") {
		t.Fatalf("head snapshot: %s", out)
	}
	// Re-running an audit keeps one set of its rows.
	before, _ := run(t, "query", "--format", "csv", `select count(*) from audits where kind = 'synthesis'`)
	run(t, "audit", "synthesis", "--report", filepath.Join(reports, "again.html"))
	after, _ := run(t, "query", "--format", "csv", `select count(*) from audits where kind = 'synthesis'`)
	if before != after {
		t.Fatalf("re-running synthesis: %q then %q", before, after)
	}

	// Text summary and the default report path under out/.
	t.Chdir(t.TempDir())
	out, err = run(t, "audit", "health")
	if err != nil || !strings.Contains(out, "report: out/audit-health-") || !strings.Contains(out, "zero_variance_share") {
		t.Fatalf("text summary: %v\n%s", err, out)
	}
	matches, _ := filepath.Glob("out/audit-health-*.html")
	if len(matches) != 1 {
		t.Fatalf("default report path: %v", matches)
	}

	for _, bad := range [][]string{{"audit"}, {"audit", "bogus"}, {"audit", "judges"}, {"audit", "overlap", "--pools", "nope"}, {"audit", "overlap", "extra"},
		{"audit", "health", "--labels", "x.csv"}, {"audit", "--against", "x", "verifier"}} {
		if _, err := run(t, bad...); err == nil || ExitCode(err) != ExitUsage {
			t.Errorf("%v: want a usage error, got %v", bad, err)
		}
	}
	if _, err := run(t, "audit", "overlap", "--against", "no-such-thing"); err == nil {
		t.Error("--against nonsense accepted")
	}
}

func TestAuditOverlapAgainstSnapshotAndOSWorld(t *testing.T) {
	dir, m := fixtureLake(t)
	t.Setenv("CUALAKE_LAKE", dir)
	report := filepath.Join(t.TempDir(), "o.html")
	// Against its own snapshot every task is an exact duplicate of itself.
	v := auditJSON(t, "audit", "overlap", "--against", m.ID[:10], "--report", report, "--json")
	inputs, _ := v["inputs"].([]any)
	if len(inputs) != 2 || inputs[1] != m.ID {
		t.Fatalf("inputs %v", inputs)
	}
	out, _ := run(t, "query", "--format", "csv", `select value from audits where kind = 'overlap' and metric = 'exact_json_dup' and "group" = 'all'`)
	if out != "value\n1\n" {
		t.Fatalf("self-overlap: %q", out)
	}
	osworld := filepath.Join("..", "..", "..", "..", "shared", "data", "osworld")
	if _, err := os.Stat(osworld); err != nil {
		t.Skipf("the OSWorld sample is not at %s", osworld)
	}
	v = auditJSON(t, "audit", "overlap", "--against", osworld, "--train-sources", "synthesized,split", "--report", report, "--json")
	params, _ := v["params"].(map[string]any)
	eval, _ := params["eval"].(map[string]any)
	if params["against"] != osworld || eval["sha256"] == "" || eval["files"] != 181.0 {
		t.Fatalf("params %v", params)
	}
}

func TestAuditStageBinary(t *testing.T) {
	dir, m := fixtureLake(t)
	app := StageApp("audit")
	var out, errOut bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errOut
	report := filepath.Join(t.TempDir(), "h.html")
	err := app.RunContext(context.Background(), []string{"audit", "--lake", dir, "--at", m.ID, "health", "--json", "--report", report})
	if err != nil {
		t.Fatalf("stage binary: %v\n%s%s", err, out.String(), errOut.String())
	}
	var v map[string]any
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || v["kind"] != "health" || v["audited"] != m.ID {
		t.Fatalf("stage binary output: %v %s", err, out.String())
	}
	if _, err := os.Stat(report); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := app.RunContext(context.Background(), []string{"audit", "--lake", dir}); ExitCode(err) != ExitUsage {
		t.Fatalf("no kind: %v", err)
	}
}

func TestNotebookCommands(t *testing.T) {
	dir, m := fixtureLake(t)
	t.Setenv("CUALAKE_LAKE", dir)
	tmp := t.TempDir()
	out, err := run(t, "notebook", "list")
	if err != nil || !strings.Contains(out, "frontier\n") || !strings.Contains(out, "audit-health\n") {
		t.Fatalf("list: %v %s", err, out)
	}
	html := filepath.Join(tmp, "frontier.html")
	out, err = run(t, "notebook", "run", "frontier", "--out", html)
	if err != nil || !strings.Contains(out, "0 failed") {
		t.Fatalf("run frontier: %v %s", err, out)
	}
	b, _ := os.ReadFile(html)
	if !bytes.Contains(b, []byte(m.ID)) || !bytes.Contains(b, []byte(`<figure class="chart"`)) {
		t.Fatal("the report lacks the snapshot id or charts")
	}
	nb := filepath.Join(tmp, "mine.md")
	os.WriteFile(nb, []byte("# Mine\n\n```sql\n-- chart: bar x=domain y=n\nselect domain, count(*) n from tasks group by 1 order by 1\n```\n\n```sql\nselect nope from tasks\n```\n"), 0o644)
	ipynb := filepath.Join(tmp, "mine.ipynb")
	out, err = run(t, "notebook", "run", nb, "--out", ipynb, "--json")
	if err == nil || ExitCode(err) != ExitFailure || !strings.Contains(err.Error(), "cell 2 (line 8)") {
		t.Fatalf("a broken cell must fail the command after writing: %v\n%s", err, out)
	}
	var doc map[string]any
	if b, err := os.ReadFile(ipynb); err != nil || json.Unmarshal(b, &doc) != nil || doc["nbformat"] != 4.0 {
		t.Fatalf("ipynb from --out's extension: %v", err)
	}
	if _, err := run(t, "notebook", "run", "no-such-notebook"); err == nil {
		t.Fatal("a missing notebook is accepted")
	}
	if _, err := run(t, "notebook", "run", nb, "--format", "pdf"); ExitCode(err) != ExitUsage {
		t.Fatalf("--format pdf: %v", err)
	}
}
