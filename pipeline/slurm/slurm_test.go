package slurm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func job(t *testing.T) Job {
	return Job{Command: []string{"rollout", "--policy", "oracle", "--tasks", "a b"}, Shards: 3, Input: strings.Repeat("a", 64),
		Lake: "/lakes/main lake", Binary: "/opt/cualake", Partition: "gpu", Time: "1:00:00", Dir: t.TempDir(), Clean: true,
		Env: []string{"CUALAKE_CACHE=/scratch/cache"}}
}

func TestRenderShardedJob(t *testing.T) {
	s, err := Render(job(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#SBATCH --array=0-2", "#SBATCH --partition=gpu", "#SBATCH --time=1:00:00",
		"export CUALAKE_CACHE=/scratch/cache",
		`exec /opt/cualake rollout --lake '/lakes/main lake' --in ` + strings.Repeat("a", 64) + ` --shard "${SLURM_ARRAY_TASK_ID}/3" --policy oracle --tasks 'a b'`} {
		if !strings.Contains(s.Array, want) {
			t.Errorf("array script lacks %q:\n%s", want, s.Array)
		}
	}
	if !strings.Contains(s.Merge, "lake merge --lake '/lakes/main lake' --stage rollout --in "+strings.Repeat("a", 64)+" --shards 3 --clean") ||
		strings.Contains(s.Merge, "--time") {
		t.Errorf("merge script:\n%s", s.Merge)
	}
	j := job(t)
	j.Input, j.Rerun = "", []int{2, 0}
	s, err = Render(j)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Array, "#SBATCH --array=2,0") || strings.Contains(s.Array, "--in ") || !strings.Contains(s.Merge, "--in empty") {
		t.Errorf("rerun on an empty lake:\n%s\n%s", s.Array, s.Merge)
	}
}

func TestRenderRefusals(t *testing.T) {
	j := job(t)
	j.Command = []string{"train", "--steps", "3"}
	if _, err := Render(j); err == nil || !strings.Contains(err.Error(), "cannot be sharded") {
		t.Fatalf("sharded train: %v", err)
	}
	j = job(t)
	j.Command = append(j.Command, "--lake", "/x")
	if _, err := Render(j); err == nil {
		t.Fatal("--lake in the stage's flags accepted")
	}
	j = job(t)
	j.Rerun = []int{3}
	if _, err := Render(j); err == nil {
		t.Fatal("--rerun 3 of 3 shards accepted")
	}
	j = job(t)
	j.Env = []string{"no value"}
	if _, err := Render(j); err == nil {
		t.Fatal("bad env accepted")
	}
	j = job(t)
	j.Templates = fstest.MapFS{"shard.sbatch.tmpl": {Data: []byte("{{.Nope}}")}, "merge.sbatch.tmpl": {Data: []byte("x")}}
	if _, err := Render(j); err == nil {
		t.Fatal("a template naming an unknown field rendered")
	}
}

func TestRenderSingleJob(t *testing.T) {
	j := job(t)
	j.Command, j.Words, j.Shards = []string{"audit", "health", "--at", "main"}, 2, 0
	s, err := Render(j)
	if err != nil {
		t.Fatal(err)
	}
	if s.Array != "" || !strings.Contains(s.Stage, "exec /opt/cualake audit health --lake '/lakes/main lake' --at main") ||
		!strings.Contains(s.Stage, "--job-name=cualake-audit-health") {
		t.Fatalf("single job:\n%s", s.Stage)
	}
}

func TestTakeFlag(t *testing.T) {
	rest, v, ok := TakeFlag([]string{"--n", "2", "--in", "abc", "--seed=3"}, "in")
	if !ok || v != "abc" || strings.Join(rest, " ") != "--n 2 --seed=3" {
		t.Fatalf("%v %q %v", rest, v, ok)
	}
	rest, v, ok = TakeFlag([]string{"--in=main", "x"}, "in")
	if !ok || v != "main" || len(rest) != 1 {
		t.Fatalf("%v %q %v", rest, v, ok)
	}
}

// fakeSlurm answers sbatch, squeue and scontrol like a cluster whose jobs
// end at once, with the array tasks in failed failing.
type fakeSlurm struct {
	next   int
	calls  []string
	failed map[int]bool
	shards int
	array  string
}

func (f *fakeSlurm) run(_ context.Context, name string, args ...string) (string, error) {
	f.calls = append(f.calls, name+" "+strings.Join(args, " "))
	switch name {
	case "sbatch":
		f.next++
		id := fmt.Sprint(100 + f.next)
		for _, a := range args {
			if strings.HasSuffix(a, "shard.sbatch") {
				f.array = id
			}
		}
		return id + "\n", nil
	case "squeue":
		return "", nil
	case "scontrol":
		id := args[len(args)-1]
		if id == f.array {
			var lines []string
			for i := 0; i < f.shards; i++ {
				st := "COMPLETED"
				if f.failed[i] {
					st = "FAILED"
				}
				lines = append(lines, fmt.Sprintf("JobId=%d ArrayJobId=%s ArrayTaskId=%d JobName=x JobState=%s Reason=None ExitCode=0:0", 200+i, id, i, st))
			}
			return strings.Join(lines, "\n") + "\n", nil
		}
		if len(f.failed) > 0 {
			return "JobId=" + id + " JobName=m JobState=CANCELLED Reason=DependencyNeverSatisfied Dependency=afterok:1(failed) ExitCode=0:0\n", nil
		}
		return "JobId=" + id + " JobName=m JobState=COMPLETED Reason=None ExitCode=0:0\n", nil
	}
	return "", fmt.Errorf("unexpected %s", name)
}

func TestSubmitAndWait(t *testing.T) {
	ctx := context.Background()
	f := &fakeSlurm{shards: 3}
	j := job(t)
	j.Extra = []string{"--account=rl"}
	sub, err := Submit(ctx, j, f.run)
	if err != nil {
		t.Fatal(err)
	}
	if sub.ArrayJob != "101" || sub.MergeJob != "102" || len(sub.Scripts) != 2 {
		t.Fatalf("submission: %+v", sub)
	}
	if !strings.Contains(f.calls[1], "--account=rl --dependency=afterok:101 --kill-on-invalid-dep=yes") {
		t.Fatalf("merge submission: %s", f.calls[1])
	}
	if b, err := os.ReadFile(filepath.Join(j.Dir, "shard.sbatch")); err != nil || !strings.Contains(string(b), "--array=0-2") {
		t.Fatalf("script on disk: %v", err)
	}
	if err := WaitSubmission(ctx, f.run, sub, 1); err != nil {
		t.Fatal(err)
	}
	f = &fakeSlurm{shards: 3, failed: map[int]bool{1: true}}
	sub, _ = Submit(ctx, job(t), f.run)
	err = WaitSubmission(ctx, f.run, sub, 1)
	if err == nil || !strings.Contains(err.Error(), "--rerun 1") || !strings.Contains(err.Error(), "CANCELLED") {
		t.Fatalf("failed shard: %v", err)
	}
}

func TestExecutor(t *testing.T) {
	f := &fakeSlurm{shards: 4}
	var resolved []string
	exec := Executor(Config{Lake: "/l", Binary: "/b", Dir: t.TempDir(), Shards: 4, Run: f.run, Poll: 1,
		Shardable: func(c []string) bool { return c[0] == "rollout" },
		Resolve: func(_ context.Context, ref string) (string, error) {
			resolved = append(resolved, ref)
			return strings.Repeat("b", 64), nil
		}})
	if err := exec(context.Background(), []string{"rollout"}, []string{"--n", "2", "--in", "v1"}); err != nil {
		t.Fatal(err)
	}
	if len(resolved) != 1 || resolved[0] != "v1" || !strings.Contains(f.calls[0], "shard.sbatch") {
		t.Fatalf("sharded step: %v %v", resolved, f.calls)
	}
	f.calls = nil
	if err := exec(context.Background(), []string{"train"}, []string{"--steps", "2"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.calls[0], "stage.sbatch") {
		t.Fatalf("whole-input step: %v", f.calls)
	}
}
