package cli

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// Sharded synthesize, audit and import: the merged snapshot equals the
// unsharded one (same data files, same id) for N = 1, 2, 3 and 7; a re-run
// shard replaces only its own fragment; a missing shard stops the merge.

// stageArgs is path + the lake, --json, --shard (when sharded) and --in
// (when given) + args: flags go before the kind's arguments.
func stageArgs(path []string, dir, in string, spec string, args []string) []string {
	a := append(append([]string{}, path...), "--lake", dir, "--json")
	if spec != "" {
		a = append(a, "--shard", spec)
	}
	if in != "" {
		a = append(a, "--in", in)
	}
	return append(a, args...)
}

// shardedStage runs the n shards of a stage command (last first) and merges
// them; it returns the merged snapshot.
func shardedStage(t *testing.T, dir, stage, in string, n int, path []string, args ...string) string {
	t.Helper()
	for i := n - 1; i >= 0; i-- {
		out, err := run(t, stageArgs(path, dir, in, fmt.Sprintf("%d/%d", i, n), args)...)
		if err != nil || !strings.Contains(out, `"fragment"`) {
			t.Fatalf("%s shard %d/%d: %v\n%s", stage, i, n, err, out)
		}
	}
	if in == "" {
		in = "empty"
	}
	return runSnapshot(t, "lake", "merge", "--lake", dir, "--stage", stage, "--in", in, "--shards", fmt.Sprint(n), "--clean", "--json")
}

// headOf returns a lake's main head.
func headOf(t *testing.T, dir string) string {
	t.Helper()
	l, err := lake.OpenDir(context.Background(), dir, true)
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// copyLake gives a test its own copy of a prepared lake.
func copyLake(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "lake")
	if err := copyDir(src, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// checkRerunAndMissing runs shard 0 of 2 twice (the second replaces the
// first's fragment), then merges with shard 1 missing, which must fail and
// commit nothing.
func checkRerunAndMissing(t *testing.T, dir, stage, in string, path []string, args ...string) {
	t.Helper()
	before := headOf(t, dir)
	for k := 0; k < 2; k++ {
		if out, err := run(t, stageArgs(path, dir, in, "0/2", args)...); err != nil {
			t.Fatalf("%s shard 0/2 (run %d): %v\n%s", stage, k, err, out)
		}
	}
	out, err := run(t, "lake", "fragments", "--lake", dir, "--stage", stage)
	if err != nil || !strings.Contains(out, "1 of 2 shards") {
		t.Fatalf("%s: fragments after a re-run: %v\n%s", stage, err, out)
	}
	if in == "" {
		in = "empty"
	}
	out, err = run(t, "lake", "merge", "--lake", dir, "--stage", stage, "--in", in, "--shards", "2")
	if err == nil || ExitCode(err) != ExitFailure || !strings.Contains(err.Error(), "shard(s) 1 of 2 missing") {
		t.Fatalf("%s: merge with a missing shard: %v\n%s", stage, err, out)
	}
	if h := headOf(t, dir); h != before {
		t.Fatalf("%s: a shard or a refused merge moved main: %s -> %s", stage, before, h)
	}
}

func TestShardedSynthesizeEqualsUnsharded(t *testing.T) {
	args := []string{"--count", "8", "--seed", "3", "--workers", "2"}
	ref := filepath.Join(t.TempDir(), "ref")
	want := runSnapshot(t, stageArgs([]string{"synthesize"}, ref, "", "", args)...)
	for _, n := range []int{1, 2, 3, 7} {
		dir := filepath.Join(t.TempDir(), fmt.Sprint("n", n))
		if got := shardedStage(t, dir, "synthesize", "", n, []string{"synthesize"}, args...); got != want {
			t.Fatalf("N=%d: merged snapshot %s, unsharded %s", n, got, want)
		}
		if out, err := run(t, "lake", "verify", "--lake", dir); err != nil {
			t.Fatalf("N=%d: verify: %v\n%s", n, err, out)
		}
	}
	// Horizon: a short one is refused at merge, naming the flag.
	dir := filepath.Join(t.TempDir(), "short")
	for i := 0; i < 2; i++ {
		if out, err := run(t, stageArgs([]string{"synthesize"}, dir, "", fmt.Sprintf("%d/2", i), append([]string{"--horizon", "3"}, args...))...); err != nil {
			t.Fatalf("shard %d: %v\n%s", i, err, out)
		}
	}
	if out, err := run(t, "lake", "merge", "--lake", dir, "--stage", "synthesize", "--in", "empty"); err == nil || !strings.Contains(err.Error(), "--horizon") {
		t.Fatalf("merge past the horizon: %v\n%s", err, out)
	}
	if _, err := run(t, stageArgs([]string{"synthesize"}, dir, "", "0/2", []string{"--proposer", "openai"})...); ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "openai proposer") {
		t.Fatalf("--proposer openai --shard: %v", err)
	}
	if _, err := run(t, stageArgs([]string{"synthesize"}, dir, "", "", []string{"--horizon", "9"})...); ExitCode(err) != ExitUsage {
		t.Fatalf("--horizon without --shard: %v", err)
	}
	checkRerunAndMissing(t, filepath.Join(t.TempDir(), "rerun"), "synthesize", "", []string{"synthesize"}, args...)
}

func TestShardedSynthesizeFromTrajectoriesEqualsUnsharded(t *testing.T) {
	base := filepath.Join(t.TempDir(), "base")
	commitPool(t, base)
	hard := "settings-multi-001,settings-multi-002,settings-multi-003,files-organize-001,files-organize-002,cross-mail-file-001"
	if out, err := run(t, "rollout", "--lake", base, "--policy", "random", "--n", "2", "--max-turns", "10", "--tree-only", "--workers", "2", "--tasks", hard); err != nil {
		t.Fatalf("random rollout: %v\n%s", err, out)
	}
	easy := "files-mkdir-001,files-mkdir-002,files-mkdir-003,settings-toggle-001,settings-toggle-002,settings-choice-001,editor-write-001,editor-write-002"
	if out, err := run(t, "rollout", "--lake", base, "--policy", "oracle", "--n", "1", "--tree-only", "--workers", "2", "--tasks", easy); err != nil {
		t.Fatalf("oracle rollout: %v\n%s", err, out)
	}
	in := headOf(t, base)
	args := []string{"--from-trajectories", "--count", "6", "--workers", "2"}
	want := runSnapshot(t, stageArgs([]string{"synthesize"}, copyLake(t, base), in, "", args)...)
	for _, n := range []int{1, 2, 3, 7} {
		if got := shardedStage(t, copyLake(t, base), "synthesize", in, n, []string{"synthesize"}, args...); got != want {
			t.Fatalf("N=%d: merged snapshot %s, unsharded %s", n, got, want)
		}
	}
}

// copyDir copies a folder tree (a local lake).
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

func TestShardableStagesForSlurm(t *testing.T) {
	for _, c := range []struct {
		words []string
		want  bool
	}{
		{[]string{"synthesize"}, true},
		{[]string{"synthesize", "--backend", "builtin", "--count", "4"}, true},
		{[]string{"synthesize", "--backend", "openai", "--count", "4"}, false},
		{[]string{"synthesize", "--backend=openai", "--proposer", "builtin"}, true},
		{[]string{"synthesize", "--proposer", "openai", "--from-trajectories"}, true},
		{[]string{"sample", "--batch", "4"}, false},
		{[]string{"rollout", "--n", "2"}, true},
	} {
		if got := shardableCommand(c.words); got != c.want {
			t.Errorf("shardableCommand(%q) = %v, want %v", c.words, got, c.want)
		}
	}
}

func TestShardedAuditEqualsUnsharded(t *testing.T) {
	base, m := fixtureLake(t)
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, base, false)
	if err != nil {
		t.Fatal(err)
	}
	trajs, err := lake.ReadTable(ctx, l, m, schemas.Trajectories)
	if err != nil || len(trajs) < 10 {
		t.Fatalf("fixture trajectories: %d %v", len(trajs), err)
	}
	var csv strings.Builder
	csv.WriteString("trajectory_id,human\n")
	for i, tr := range trajs {
		fmt.Fprintf(&csv, "%s,%v\n", tr.TrajectoryID, map[bool]string{true: "success", false: "failure"}[i%3 != 0])
	}
	csv.WriteString("nope-1,success\n")
	labels := filepath.Join(t.TempDir(), "labels.csv")
	if err := os.WriteFile(labels, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for kind, args := range map[string][]string{"overlap": {"--pools", "source"}, "judges": {"--labels", labels}} {
		path := []string{"audit", kind}
		report := []string{"--report", filepath.Join(t.TempDir(), "r.html")}
		want := runSnapshot(t, stageArgs(path, copyLake(t, base), m.ID, "", append(report, args...))...)
		for _, n := range []int{1, 2, 3, 7} {
			if got := shardedStage(t, copyLake(t, base), "audit", m.ID, n, path, args...); got != want {
				t.Fatalf("%s N=%d: merged snapshot %s, unsharded %s", kind, n, got, want)
			}
		}
		checkRerunAndMissing(t, copyLake(t, base), "audit", m.ID, path, args...)
	}
	// A second audit on top keeps the first one's rows, sharded or not.
	dir := copyLake(t, base)
	first := shardedStage(t, dir, "audit", m.ID, 3, []string{"audit", "overlap"})
	ref := copyLake(t, base)
	runSnapshot(t, stageArgs([]string{"audit", "overlap"}, ref, m.ID, "", []string{"--report", filepath.Join(t.TempDir(), "r.html")})...)
	want := runSnapshot(t, stageArgs([]string{"audit", "judges"}, ref, first, "", []string{"--labels", labels, "--report", filepath.Join(t.TempDir(), "r.html")})...)
	if got := shardedStage(t, dir, "audit", first, 2, []string{"audit", "judges"}, "--labels", labels); got != want {
		t.Fatalf("judges after overlap: merged %s, unsharded %s", got, want)
	}
	// Kinds that do not split by domain have no --shard.
	if _, err := run(t, "audit", "health", "--lake", dir, "--shard", "0/2"); err == nil || !strings.Contains(err.Error(), "shard") {
		t.Fatalf("audit health --shard: %v", err)
	}
	if _, err := run(t, "audit", "overlap", "--lake", dir, "--shard", "0/2", "--report", "x.html"); ExitCode(err) != ExitUsage {
		t.Fatalf("audit overlap --shard --report: %v", err)
	}
	if !shardableCommand([]string{"audit", "overlap"}) || shardableCommand([]string{"audit", "health"}) {
		t.Fatal("slurm: audit overlap should shard, audit health not")
	}
}

// importInputs writes JSONL files whose trajectories and embedded tasks
// repeat across files with other contents (the first file's copy wins),
// with shared screenshots and a bad line.
func importInputs(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	shots := filepath.Join(repoRoot(t), "pipeline", "importer", "testdata", "jsonl", "shots")
	for _, s := range []string{"screen-a.png", "screen-b.png"} {
		b, err := os.ReadFile(filepath.Join(shots, s))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, s), b, 0o644)
	}
	line := func(traj, task string, file int, shot string) string {
		return fmt.Sprintf(`{"task": {"id": %q, "instruction": "from file %d", "evaluator": {"func": "f"}}, "trajectory_id": %q, "domain": "os", "policy": "p%d", "reward": 1, "steps": [{"action": "pyautogui.click(5, 5)", "screenshot": %q}]}`,
			task, file, traj, file, shot)
	}
	var files []string
	for f := 0; f < 5; f++ {
		var b strings.Builder
		for k := 0; k < 4; k++ {
			b.WriteString(line(fmt.Sprintf("tr-%d", (f+k)%7), fmt.Sprintf("task-%d", (f*k)%4), f, []string{"screen-a.png", "screen-b.png"}[(f+k)%2]) + "\n")
		}
		if f == 3 {
			b.WriteString(`{"task_id": "x", "steps": []}` + "\n")
		}
		p := filepath.Join(dir, fmt.Sprintf("part-%d.jsonl", f))
		os.WriteFile(p, []byte(b.String()), 0o644)
		files = append(files, p)
	}
	return files
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = up
	}
}

func TestShardedImportEqualsUnsharded(t *testing.T) {
	files := importInputs(t)
	results := filepath.Join(repoRoot(t), "pipeline", "importer", "testdata", "osworld-results")
	newLakeDir := func() string {
		dir := filepath.Join(t.TempDir(), "lake")
		if out, err := run(t, "lake", "init", "--lake", dir); err != nil {
			t.Fatalf("init: %v\n%s", err, out)
		}
		return dir
	}
	for _, c := range []struct {
		path []string
		args []string
	}{
		{[]string{"import", "jsonl"}, append([]string{"--quarantine"}, files...)},
		{[]string{"import", "osworld-results"}, []string{"--workers", "2", results}},
	} {
		want := runSnapshot(t, stageArgs(c.path, newLakeDir(), "", "", c.args)...)
		for _, n := range []int{1, 2, 3, 7} {
			dir := newLakeDir()
			if got := shardedStage(t, dir, "import", "", n, c.path, c.args...); got != want {
				t.Fatalf("%v N=%d: merged snapshot %s, unsharded %s", c.path, n, got, want)
			}
			// Nothing new the second time: the merge commits nothing either.
			if got := shardedStage(t, dir, "import", want, n, c.path, c.args...); got != want || headOf(t, dir) != want {
				t.Fatalf("%v N=%d: a sharded re-import gave %s", c.path, n, got)
			}
		}
		checkRerunAndMissing(t, newLakeDir(), "import", "", c.path, c.args...)
	}
	if !shardableCommand([]string{"import", "jsonl", "--quarantine", "a.jsonl"}) {
		t.Fatal("slurm: import jsonl should shard")
	}
}
