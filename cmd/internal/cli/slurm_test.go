package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/lake/storagetest"
	"github.com/cualake/cualake/pipeline/slurm"
	"github.com/cualake/cualake/pipeline/tokenizer"
)

func TestSlurmDryRunAndRefusals(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	t.Setenv("CUALAKE_LAKE", dir)
	out, err := run(t, "slurm", "submit", "--stage", "rollout", "--shards", "4", "--partition", "debug", "--time", "10:00",
		"--args", `--policy oracle --tasks "a,b" --n 2`, "--binary", "/opt/cualake", "--dry-run", "--", "--mem=2G")
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	for _, want := range []string{"#SBATCH --array=0-3", "#SBATCH --partition=debug", "--shard \"${SLURM_ARRAY_TASK_ID}/4\" --policy oracle --tasks a,b --n 2",
		"lake merge --lake " + dir + " --stage rollout --in empty --shards 4 --clean", "sbatch --parsable --mem=2G --dependency=afterok:ARRAY"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("a dry run created the lake")
	}
	if _, err := run(t, "slurm", "submit", "--stage", "train", "--shards", "4", "--dry-run"); ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "train cannot be sharded") {
		t.Errorf("sharded train: %v", err)
	}
	if _, err := run(t, "slurm", "submit", "--stage", "nope", "--dry-run"); ExitCode(err) != ExitUsage {
		t.Errorf("unknown stage: %v", err)
	}
	if out, err := run(t, "slurm", "submit", "--stage", "sample", "--args", "--batch 8", "--dry-run"); err != nil || !strings.Contains(out, "sample --lake "+dir+" --batch 8") {
		t.Errorf("single job: %v\n%s", err, out)
	}
	if got, err := splitArgs(`--a 'b c' "d \"e\"" f\ g`); err != nil || strings.Join(got, "|") != `--a|b c|d "e"|f g` {
		t.Errorf("splitArgs: %q %v", got, err)
	}
	tdir := filepath.Join(t.TempDir(), "tmpl")
	if out, err := run(t, "slurm", "templates", tdir); err != nil || !strings.Contains(out, tdir) {
		t.Fatalf("templates: %v %s", err, out)
	}
	if out, err := run(t, "slurm", "submit", "--stage", "rollout", "--shards", "2", "--templates", tdir, "--dry-run"); err != nil || !strings.Contains(out, "--array=0-1") {
		t.Fatalf("edited templates: %v %s", err, out)
	}
	// A missing --templates folder, or a template missing from it, names
	// the folder.
	if _, err := run(t, "slurm", "submit", "--stage", "rollout", "--templates", "/nonexistent", "--dry-run"); ExitCode(err) != ExitUsage ||
		!strings.Contains(err.Error(), "--templates: stat /nonexistent: no such file or directory") {
		t.Errorf("--templates /nonexistent: %v", err)
	}
	empty := t.TempDir()
	if _, err := run(t, "slurm", "submit", "--stage", "rollout", "--templates", empty, "--dry-run"); err == nil ||
		!strings.Contains(err.Error(), "--templates "+empty+": open stage.sbatch.tmpl") {
		t.Errorf("--templates with no templates: %v", err)
	}
}

// buildCualake builds the cualake binary for jobs to run.
func buildCualake(t *testing.T) string {
	t.Helper()
	root := storagetest.ModuleRoot()
	if root == "" {
		t.Fatal("no module root")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "cualake")
	cmd := exec.Command(goBin, "build", "-o", bin, "./cmd/cualake")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/cualake: %v\n%s", err, out)
	}
	return bin
}

func freePortPair(t *testing.T) int {
	t.Helper()
	for i := 0; i < 50; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		ln2, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+1))
		ln.Close()
		if err == nil {
			ln2.Close()
			return p
		}
	}
	t.Fatal("no free pair of ports")
	return 0
}

// startSlurm starts the one-node cluster of scripts/slurm-local.sh for the
// test, or skips it when Slurm cannot run here.
func startSlurm(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: not starting a Slurm cluster")
	}
	root := storagetest.ModuleRoot()
	// A short state path: munge's socket path must fit in sun_path.
	state, err := os.MkdirTemp("", "cualake-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "scripts", "slurm-local.sh")
	cmd := exec.Command(script, "start", state)
	cmd.Env = append(os.Environ(), fmt.Sprintf("CUALAKE_SLURM_PORT=%d", freePortPair(t)))
	out, err := cmd.CombinedOutput()
	if err != nil {
		exec.Command(script, "stop", state).Run() //nolint:errcheck // best effort
		os.RemoveAll(state)
		t.Skipf("Slurm cannot start on this machine (scripts/slurm-local.sh start: %v):\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command(script, "stop", state).CombinedOutput(); err != nil {
			t.Logf("slurm-local.sh stop: %v\n%s", err, out)
		}
		os.RemoveAll(state)
	})
	t.Setenv("SLURM_CONF", filepath.Join(state, "slurm.conf"))
	t.Setenv("CUALAKE_SLURM_POLL", "250ms")
}

// TestSlurmCluster submits sharded rollouts and a sharded segment stage to
// a real (one-node) Slurm cluster and checks that the merged snapshots equal
// unsharded runs.
func TestSlurmCluster(t *testing.T) {
	startSlurm(t)
	bin := buildCualake(t)
	tmp := t.TempDir()
	ref := filepath.Join(tmp, "ref")
	want1 := runSnapshot(t, append([]string{"rollout", "--lake", ref, "--json"}, oracleArgs...)...)
	want2 := runSnapshot(t, append([]string{"rollout", "--lake", ref, "--json"}, randomArgs...)...)

	dir := filepath.Join(tmp, "lake")
	jobs := filepath.Join(tmp, "jobs")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := run(t, "slurm", "submit", "--lake", dir, "--stage", "rollout", "--shards", "3", "--args", strings.Join(oracleArgs, " "),
		"--binary", bin, "--dir", jobs, "--wait")
	if err != nil {
		t.Fatalf("slurm submit: %v\n%s", err, out)
	}
	if !strings.Contains(out, "array job") || !strings.Contains(out, "merge job") {
		t.Fatalf("submit output: %s", out)
	}
	l, err := lake.OpenDir(ctx, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if head, _ := l.Head(ctx); head != want1 {
		t.Fatalf("Slurm run committed %s, the unsharded run %s\n%s", head, want1, out)
	}

	// A failing shard cancels the merge, and the error says what to re-run.
	out, err = run(t, "slurm", "submit", "--lake", dir, "--stage", "rollout", "--shards", "2", "--args", "--policy nope",
		"--binary", bin, "--dir", jobs, "--wait")
	if err == nil || !strings.Contains(err.Error(), "--rerun 0,1") {
		t.Fatalf("failing shards: %v\n%s", err, out)
	}
	if head, _ := l.Head(ctx); head != want1 {
		t.Fatal("a failed sharded run moved main")
	}

	// The loop's executor: a sharded step, then an unsharded one.
	exec := slurm.Executor(slurm.Config{Lake: dir, Binary: bin, Dir: jobs, Shards: 2, Shardable: shardableCommand,
		Poll: 250 * time.Millisecond, Resolve: func(ctx context.Context, ref string) (string, error) { return resolveInput(ctx, l, ref) }})
	if err := exec(ctx, []string{"rollout"}, randomArgs); err != nil {
		t.Fatalf("executor, sharded rollout: %v", err)
	}
	if head, _ := l.Head(ctx); head != want2 {
		t.Fatalf("executor committed %s, the unsharded run %s", head, want2)
	}
	if err := exec(ctx, []string{"lake", "tag"}, []string{"slurm/done"}); err != nil {
		t.Fatalf("executor, one job: %v", err)
	}
	if id, err := l.Resolve(ctx, "slurm/done"); err != nil || id != want2 {
		t.Fatalf("tag from a Slurm job: %s %v", id, err)
	}

	// A sharded segment stage on the rollouts (3 shards, then the merge),
	// against an unsharded run on the same input; then through the
	// executor (2 shards) on its own output, which changes nothing: the
	// merged tables equal the head's, so no snapshot is added.
	tokPath, err := tokenizer.DefaultPath()
	if err != nil {
		t.Fatalf("segment needs the Qwen tokenizer (scripts/fetch-tokenizer.sh): %v", err)
	}
	segArgs := []string{"--mode", "step", "--window", "2", "--quarantine", "--workers", "1", "--tokenizer", tokPath}
	want3 := runSnapshot(t, append([]string{"segment", "--lake", ref, "--in", want2, "--json"}, segArgs...)...)
	out, err = run(t, "slurm", "submit", "--lake", dir, "--stage", "segment", "--shards", "3", "--args", strings.Join(segArgs, " "),
		"--binary", bin, "--dir", jobs, "--wait")
	if err != nil || !strings.Contains(out, "array job") || !strings.Contains(out, "merge job") {
		t.Fatalf("slurm submit segment: %v\n%s", err, out)
	}
	if head, _ := l.Head(ctx); head != want3 {
		t.Fatalf("sharded segment on Slurm committed %s, the unsharded run %s\n%s", head, want3, out)
	}
	m, err := l.At(ctx, want3)
	if err != nil || m.Stage != "segment" || m.Parent != want2 || m.Tables["segments"].Rows == 0 {
		t.Fatalf("segment snapshot: %v %+v", err, m)
	}
	if err := exec(ctx, []string{"segment"}, segArgs); err != nil {
		t.Fatalf("executor, sharded segment: %v", err)
	}
	if head, _ := l.Head(ctx); head != want3 {
		t.Fatalf("executor's sharded segment moved main to %s, want %s", head, want3)
	}
	if keys, _ := l.Storage().List(ctx, "fragments/"); len(keys) != 0 {
		t.Fatalf("merges left fragments: %v", keys)
	}
}

// TestLoopSlurmShardsBelowOneRefused: run and experiment run with the
// slurm executor refuse --shards below 1 as a usage error naming the flag,
// before the lake is created or sbatch is called.
func TestLoopSlurmShardsBelowOneRefused(t *testing.T) {
	dir := t.TempDir()
	lk := filepath.Join(dir, "lake")
	exp := filepath.Join(dir, "e.yaml")
	if err := os.WriteFile(exp, []byte("name: e\nseeds: [1]\nvariants: [{name: a}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"run", "--lake", lk, "--executor", "slurm", "--shards", "0"},
		{"run", "--lake", lk, "--executor", "slurm", "--shards", "-2"},
		{"experiment", "run", exp, "--lake", lk, "--executor", "slurm", "--shards", "0"},
	} {
		out, err := run(t, args...)
		if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "--shards is ") || !strings.Contains(err.Error(), "want >= 1") {
			t.Errorf("%v: %v\n%s; want a usage error naming --shards", args, err, out)
		}
		if _, err := os.Stat(lk); err == nil {
			t.Fatalf("%v: the lake was created before --shards was checked", args)
		}
	}
}
