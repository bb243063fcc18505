package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repoPath returns a path relative to the repository root (the folder with
// go.mod).
func repoPath(t *testing.T, rel ...string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(append([]string{dir}, rel...)...)
		}
		if filepath.Dir(dir) == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = filepath.Dir(dir)
	}
}

func osworldSample(t *testing.T) string {
	t.Helper()
	p := repoPath(t, "..", "shared", "data", "osworld")
	if _, err := os.Stat(filepath.Join(p, "examples")); err != nil {
		t.Skipf("OSWorld task sample not found at %s: %v", p, err)
	}
	return p
}

func initLake(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "lake")
	t.Setenv("CUALAKE_LAKE", dir)
	if _, err := run(t, "lake", "init"); err != nil {
		t.Fatal(err)
	}
	return dir
}

const sampleCounts = "domain,n\nchrome,46\ngimp,26\nlibreoffice_calc,47\nos,24\nthunderbird,15\nvs_code,23\n"

func TestImportOSWorldTasksCommand(t *testing.T) {
	sample := osworldSample(t)
	initLake(t)
	out, err := run(t, "import", "osworld-tasks", "--json", sample)
	var rep map[string]any
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || rep["committed"] != true {
		t.Fatalf("import: %s %v", out, err)
	}
	out, err = run(t, "query", "--format", "csv", "select domain, count(*) as n from tasks group by 1 order by 1")
	if err != nil || out != sampleCounts {
		t.Fatalf("query: %q %v", out, err)
	}
	out, err = run(t, "lake", "show", "--json")
	if err != nil || !strings.Contains(out, `"stage": "import"`) || !strings.Contains(out, `"kind": "osworld-tasks"`) || !strings.Contains(out, `"quarantine": false`) {
		t.Fatalf("show: %s %v", out, err)
	}
	if out, err := run(t, "import", "osworld-tasks", sample); err != nil || !strings.Contains(out, "181 already present") || !strings.Contains(out, "snapshot unchanged") {
		t.Fatalf("re-import: %s %v", out, err)
	}
	// Infeasible and list-form judges are queryable.
	if out, err := run(t, "query", "--format", "csv", "select count(*) filter (where not feasible) as inf, count(*) filter (where json_type(judge->'func') = 'ARRAY') as lists from tasks"); err != nil || out != "inf,lists\n25,11\n" {
		t.Fatalf("judges: %q %v", out, err)
	}

	// --index imports what the index names, into another lake.
	initLake(t)
	if out, err := run(t, "import", "osworld-tasks", "--index", "test_small.json", sample); err != nil || !strings.Contains(out, "tasks +16") {
		t.Fatalf("--index: %s %v", out, err)
	}
	// Export, then import the export: the same counts.
	pool := filepath.Join(t.TempDir(), "pool")
	if out, err := run(t, "export", "osworld-tasks", pool); err != nil || !strings.Contains(out, "wrote 16 task(s)") {
		t.Fatalf("export: %s %v", out, err)
	}
	initLake(t)
	if _, err := run(t, "import", "osworld-tasks", pool); err != nil {
		t.Fatal(err)
	}
	if out, _ := run(t, "query", "--format", "csv", "select count(*) as n from tasks"); out != "n\n16\n" {
		t.Fatalf("re-imported export: %q", out)
	}
	verl := filepath.Join(t.TempDir(), "pool.parquet")
	if out, err := run(t, "export", "verl", "--text-only", "--json", verl); err != nil || !strings.Contains(out, `"rows": 16`) {
		t.Fatalf("export verl: %s %v", out, err)
	}
	if _, err := os.Stat(verl); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "export", "verl", "--segments", verl); err == nil || !strings.Contains(err.Error(), "no segments") {
		t.Fatalf("segments without a segments table: %v", err)
	}
}

func TestImportOSWorldResultsAndBlobGet(t *testing.T) {
	initLake(t)
	tree := repoPath(t, "pipeline", "importer", "testdata", "osworld-results")
	if out, err := run(t, "import", "osworld-results", tree); err != nil || !strings.Contains(out, "trajectories +6") {
		t.Fatalf("import: %s %v", out, err)
	}
	out, err := run(t, "query", "--format", "csv", "select outcome, count(*) as n from trajectories group by 1 order by 1")
	if err != nil || out != "outcome,n\nerror,2\nfailure,2\nsuccess,2\n" {
		t.Fatalf("outcomes: %q %v", out, err)
	}
	// The screenshot the policy saw before step 2 of the chrome episode is
	// the one saved after step 1; blob get returns its bytes.
	out, err = run(t, "query", "--format", "csv", "select s.observation from steps s join trajectories t using (trajectory_id) where t.policy = 'gpt-4o' and t.domain = 'chrome' and s.step = 2")
	if err != nil {
		t.Fatal(err)
	}
	hash := strings.TrimSpace(strings.TrimPrefix(out, "observation\n"))
	files, _ := filepath.Glob(filepath.Join(tree, "pyautogui", "screenshot", "gpt-4o", "chrome", "*", "step_1_*.png"))
	want, _ := os.ReadFile(files[0])
	app := App()
	var stdout bytes.Buffer
	app.Writer = &stdout
	if err := app.Run([]string{"cualake", "blob", "get", hash}); err != nil || !bytes.Equal(stdout.Bytes(), want) {
		t.Fatalf("blob get %s: %v (%d bytes, want %d)", hash, err, stdout.Len(), len(want))
	}
	if _, err := run(t, "blob", "get", "abc"); ExitCode(err) != ExitUsage {
		t.Fatalf("short hash: %v", err)
	}
	if _, err := run(t, "blob", "get", strings.Repeat("0", 64)); err == nil || ExitCode(err) != ExitFailure {
		t.Fatalf("unknown hash: %v", err)
	}
}

func TestImportBadInput(t *testing.T) {
	initLake(t)
	bad := repoPath(t, "pipeline", "importer", "testdata", "osworld-results-bad")
	out, err := run(t, "import", "osworld-results", bad)
	if ExitCode(err) != ExitFailure || !strings.Contains(out, "REJECT pyautogui/screenshot/gpt-4o/os/bad-step-num/traj.jsonl:3 field step_num") ||
		!strings.Contains(out, "nothing committed") {
		t.Fatalf("bad input: %s %v (code %d)", out, err, ExitCode(err))
	}
	if out, _ := run(t, "lake", "log"); !strings.Contains(out, "no snapshots") {
		t.Fatalf("a failed import committed: %s", out)
	}
	out, err = run(t, "import", "osworld-results", "--quarantine", "--json", bad)
	if err != nil || !strings.Contains(out, `"quarantined": 5`) {
		t.Fatalf("quarantine: %s %v", out, err)
	}
	if out, _ := run(t, "query", "--format", "csv", "select field, line from rejects order by source"); out != "field,line\nscreenshot_file,3\nscreenshot_file,3\njson,3\nstep_num,3\nresult,1\n" {
		t.Fatalf("rejects: %q", out)
	}
	jsonl := repoPath(t, "pipeline", "importer", "testdata", "jsonl")
	if out, err := run(t, "import", "jsonl", filepath.Join(jsonl, "rollouts.jsonl")); err != nil || !strings.Contains(out, "trajectories +3") {
		t.Fatalf("jsonl: %s %v", out, err)
	}
	if _, err := run(t, "import", "jsonl", filepath.Join(jsonl, "bad.jsonl")); ExitCode(err) != ExitFailure {
		t.Fatalf("bad jsonl: %v", err)
	}
	for _, args := range [][]string{{"import", "osworld-tasks"}, {"import", "osworld-results", "a", "b"}, {"import", "jsonl"}, {"import", "jsonl", "--index", "x.json", "a.jsonl"}, {"export", "verl"},
		{"export", "verl", "--segments", "--batch", "1", "x.parquet"}} {
		if _, err := run(t, args...); ExitCode(err) != ExitUsage {
			t.Errorf("%v: want a usage error, got %v", args, err)
		}
	}
}
