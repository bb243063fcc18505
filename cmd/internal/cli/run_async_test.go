package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/loop"
	"github.com/cualake/cualake/schemas"
)

const asyncRun = `seed: 5
iterations: 2
workers: 2
limit_tasks: 6
policy: causal
async: true
warmstart: {demos: 1, steps: 4, lr: 0.001, max_turns: 30, batch: 2}
initial_pass: {n: 2}
sample: {sampler: dtac, batch: 3, p_min: 0, p_max: 1, recalibrate_every: 1, recalibrate_n: 2}
rollout: {n: 2, max_turns: 4}
segment: {mode: window, k: 2, delta: 2}
train: {advantage: grpo, steps: 2, lr: 0.0001, max_stale: 3}
eval: {n: 1, split: heldout}
audits: []
notebooks: []
`

// headFiles lists the data files of every table at the branch head: in
// order, except blobs, whose files two concurrent appenders may land in
// either order (their set is what must not change).
func headFiles(t *testing.T, dir string) map[string][]string {
	t.Helper()
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	m, err := l.At(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, n := range m.TableNames() {
		for _, f := range m.Tables[n].Files {
			out[n] = append(out[n], f.SHA256)
		}
		if n == schemas.Blobs.Name {
			slices.Sort(out[n])
		}
	}
	return out
}

func sameFiles(t *testing.T, what string, a, b map[string][]string) {
	t.Helper()
	for _, n := range append(mapKeys(a), mapKeys(b)...) {
		if strings.Join(a[n], " ") != strings.Join(b[n], " ") {
			t.Fatalf("%s: table %s differs:\n%v\n%v", what, n, a[n], b[n])
		}
	}
}

func mapKeys(m map[string][]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// orderedExec runs the loop in process; in each group of steps that run at
// once, the step whose command is last waits until the other committed,
// so two runs with different last commands land the group's commits in
// opposite orders. kill, when set, may end that last step instead of
// running it.
func orderedExec(dir, last string, kill func(cmd []string, flags []string) error) loop.Executor {
	inner := inProcess(dir, &lockedWriter{w: &strings.Builder{}})
	var mu sync.Mutex
	var other chan struct{}
	return func(ctx context.Context, cmd, flags []string) error {
		if !slices.Contains(flags, "--in") {
			return inner(ctx, cmd, flags)
		}
		mu.Lock()
		if other == nil {
			other = make(chan struct{})
		}
		ch := other
		mu.Unlock()
		if cmd[0] == last {
			select {
			case <-ch:
			case <-ctx.Done():
				return ctx.Err()
			}
			mu.Lock()
			other = nil
			mu.Unlock()
			if kill != nil {
				if err := kill(cmd, flags); err != nil {
					return err // killed after the other step committed
				}
			}
			return inner(ctx, cmd, flags)
		}
		err := inner(ctx, cmd, flags)
		close(ch)
		return err
	}
}

// TestAsyncRunDeterministicAndResumable: with async: true, iteration 1's
// train and iteration 2's rollout run at once, from one snapshot: the
// rollout acts with the warm-start checkpoint (v1) while train produces
// v2, so train v3 meets those groups at lag 1. Whichever of the two commits
// first, the data files are the same; a run killed inside the group (the
// rollout committed, the train not) resumes to the same files without
// redoing the rollout or duplicating a group.
func TestAsyncRunDeterministicAndResumable(t *testing.T) {
	if testing.Short() {
		t.Skip("the loop test trains a policy; skipped in -short mode")
	}
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "async.yaml")
	if err := os.WriteFile(p, []byte(asyncRun+"report: "+filepath.Join(t.TempDir(), "r.html")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	conf, err := loop.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	runWith := func(dir string, exec func(string) loop.Executor) error {
		l, err := lake.OpenDir(ctx, dir, true)
		if err != nil {
			t.Fatal(err)
		}
		_, err = loop.Run(ctx, l, conf, exec(dir), &strings.Builder{})
		return err
	}
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	if err := runWith(a, func(d string) loop.Executor { return orderedExec(d, "train", nil) }); err != nil {
		t.Fatalf("async run (rollout commits first): %v", err)
	}
	if err := runWith(b, func(d string) loop.Executor { return orderedExec(d, "rollout", nil) }); err != nil {
		t.Fatalf("async run (train commits first): %v", err)
	}
	if sa, sb := stages(t, a), stages(t, b); sa == sb {
		t.Fatalf("the two runs committed in the same order: %s", sa)
	}
	fa := headFiles(t, a)
	sameFiles(t, "commit order", fa, headFiles(t, b))

	// Policy versions: iteration 2's rollouts used v1, and train v3 saw them at lag 1.
	out, err := run(t, "query", "--lake", a, "--format", "csv",
		"select t.iteration, min(t.policy_version), max(t.policy_version), min(g.lag), max(g.lag), count(distinct g.group_id) "+
			"from trajectories t join train_groups g using (group_id) where t.source = 'rollout' and t.iteration >= 1 group by 1 order by 1")
	if err != nil {
		t.Fatalf("query: %v\n%s", err, out)
	}
	if !strings.Contains(out, "1,1,1,0,0,") || !strings.Contains(out, "2,1,1,1,1,") {
		t.Fatalf("policy versions and lags per iteration:\n%s", out)
	}

	// Killed inside the group: the rollout committed, the train did not.
	c := filepath.Join(t.TempDir(), "c")
	killed := errors.New("killed")
	err = runWith(c, func(d string) loop.Executor {
		return orderedExec(d, "train", func(cmd, flags []string) error {
			if cmd[0] == "train" && slices.Contains(flags, "--in") {
				return killed
			}
			return nil
		})
	})
	if !errors.Is(err, killed) {
		t.Fatalf("want the injected kill, got %v", err)
	}
	// As after kill -9 between the rollout's commit and its done tag.
	tag := filepath.Join(c, "refs", "tags", filepath.FromSlash(loop.DoneTag("", loop.RunID(conf), "it02-rollout")))
	if err := os.Remove(tag); err != nil {
		t.Fatalf("the rollout that finished must be tagged done: %v", err)
	}
	if out, err := run(t, "run", "--lake", c, "--config", p); err != nil {
		t.Fatalf("resumed async run: %v\n%s", err, out)
	} else if !strings.Contains(out, "iteration 2/2: rollout: committed by an interrupted run, not redone") {
		t.Fatalf("the resumed run must find the rollout's commit:\n%s", out)
	}
	sameFiles(t, "killed and resumed", fa, headFiles(t, c))
}

// stages lists the stages of main's snapshots, oldest first.
func stages(t *testing.T, dir string) string {
	t.Helper()
	log := mainLog(t, dir)
	var out []string
	for i := len(log) - 1; i >= 0; i-- {
		out = append(out, log[i].Stage)
	}
	return strings.Join(out, " ")
}
