package importer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/importer/internal/testenv"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/shard"
)

// genJSONL writes n JSONL files into a new folder: trajectories and embedded
// tasks that repeat within and across files, some with the same content
// (present) and some with different content (rejects naming the first),
// screenshots shared between files, and bad lines.
func genJSONL(t *testing.T, n int, seed uint64) []string {
	t.Helper()
	dir := t.TempDir()
	shots := filepath.Join(testenv.Testdata(t), "jsonl", "shots")
	names := []string{"screen-a.png", "screen-b.png", "screen-c.png", "screen-d.png"}
	for _, s := range names {
		b, err := os.ReadFile(filepath.Join(shots, s))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, s), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(seed, 1))
	var files, lines []string
	for f := 0; f < n; f++ {
		var b strings.Builder
		for k := 0; k < 6; k++ {
			switch r.IntN(9) {
			case 0:
				fmt.Fprintf(&b, `{"task_id": "t%d", "steps": []}`+"\n", r.IntN(5)) // no reward: a bad line
				continue
			case 1:
				b.WriteString("\n") // blank
				continue
			case 2:
				if len(lines) > 0 { // an earlier line again: already present
					b.WriteString(lines[r.IntN(len(lines))])
					continue
				}
			}
			task, tid := "", r.IntN(5)
			if r.IntN(2) == 0 {
				id := tid
				if r.IntN(4) == 0 {
					id = r.IntN(5) // mostly a task_id that is not task.id: a bad line
				}
				task = fmt.Sprintf(`"task": {"id": "t%d", "instruction": "do %d", "evaluator": {"func": "f"}}, `, id, r.IntN(3))
			}
			steps := []string{}
			for s := r.IntN(3); s >= 0; s-- {
				steps = append(steps, fmt.Sprintf(`{"action": "pyautogui.click(%d, 10)", "response": "r%d", "screenshot": %q}`, r.IntN(100), f, names[r.IntN(len(names))]))
			}
			line := fmt.Sprintf(`{%s"trajectory_id": "tr-%d", "task_id": "t%d", "domain": "os", "policy": "p%d", "reward": %d, "steps": [%s]}`+"\n",
				task, r.IntN(12), tid, f, r.IntN(2), strings.Join(steps, ", "))
			b.WriteString(line)
			lines = append(lines, line)
		}
		p := filepath.Join(dir, fmt.Sprintf("part-%d.jsonl", f))
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	return files
}

// genTasks writes an OSWorld examples tree in which one id appears in two
// domains (a conflict: the first domain's copy is kept, the others are
// rejects), and one file is bad.
func genTasks(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(domain, id, body string) {
		p := filepath.Join(dir, "examples", domain, id+".json")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for d, domain := range []string{"chrome", "os", "gimp"} {
		for i := 0; i < 9; i++ {
			id := fmt.Sprintf("task-%d", i+3*d) // ids overlap between domains
			write(domain, id, fmt.Sprintf(`{"id": %q, "instruction": "in %s do %d", "evaluator": {"func": "f"}}`, id, domain, i))
		}
	}
	write("os", "broken", `{"id": "broken", "instruction": 3}`)
	return dir
}

// shardedImport imports opts in n shards on top of in and merges them.
func shardedImport(t *testing.T, l *lake.Lake, opts Options, n int) string {
	t.Helper()
	ctx := context.Background()
	in := opts.In
	for i := n - 1; i >= 0; i-- {
		o := opts
		o.Shard = shard.Spec{Index: i, Count: n}
		rep, err := Run(ctx, l, o)
		if err != nil || rep.Fragment == nil || rep.Committed {
			t.Fatalf("shard %d/%d: %v %+v", i, n, err, rep)
		}
	}
	if in == "" {
		in = "empty"
	}
	res, err := shard.Merge(ctx, l, shard.MergeOptions{Stage: Stage, Input: in, Shards: n, Clean: true})
	if err != nil {
		t.Fatalf("merge of %d shards: %v", n, err)
	}
	return res.Snapshot
}

func TestShardedImportEqualsUnsharded(t *testing.T) {
	ctx := context.Background()
	testdata := testenv.Testdata(t)
	files := genJSONL(t, 7, 3)
	cases := []struct {
		name  string
		opts  Options
		first Options // imported before, unsharded: the parent
	}{
		{"jsonl", Options{Kind: KindJSONL, Paths: files, Quarantine: true, ChunkRows: 5}, Options{}},
		{"jsonl-on-parent", Options{Kind: KindJSONL, Paths: files, Quarantine: true, ChunkRows: 5},
			Options{Kind: KindJSONL, Paths: files[4:5], Quarantine: true, ChunkRows: 5}},
		{"osworld-tasks", Options{Kind: KindOSWorldTasks, Paths: []string{genTasks(t)}, Quarantine: true, ChunkRows: 4}, Options{}},
		{"osworld-results", Options{Kind: KindOSWorldResults, Paths: []string{filepath.Join(testdata, "osworld-results")}, Workers: 2, ChunkRows: 3}, Options{}},
		{"osworld-results-bad", Options{Kind: KindOSWorldResults, Paths: []string{filepath.Join(testdata, "osworld-results-bad")}, Quarantine: true, ChunkRows: 3},
			Options{Kind: KindOSWorldResults, Paths: []string{filepath.Join(testdata, "osworld-results")}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prepare := func() *lake.Lake {
				l := newLake(t)
				if c.first.Kind != "" {
					run(t, l, c.first)
				}
				return l
			}
			ref := prepare()
			want := run(t, ref, c.opts)
			if !want.Committed {
				t.Fatalf("the unsharded import committed nothing: %+v", want)
			}
			conflicts := 0
			for _, r := range want.Rejects {
				if strings.Contains(r.Reason, "with different content") {
					conflicts++
				}
			}
			if c.opts.Kind == KindJSONL && (want.Tasks.Present == 0 || want.Trajectories.Present == 0 || conflicts == 0) {
				t.Fatalf("the input should repeat tasks and trajectories, the same and conflicting: %+v", want)
			}
			if c.opts.Kind == KindOSWorldTasks && conflicts == 0 {
				t.Fatalf("the input should repeat task ids: %+v", want)
			}
			for _, n := range []int{1, 2, 3, 7} {
				l := prepare()
				opts := c.opts
				opts.In, _ = l.Head(ctx)
				if got := shardedImport(t, l, opts, n); got != want.Snapshot {
					t.Fatalf("N=%d: merged snapshot %s, unsharded %s", n, got, want.Snapshot)
				}
				// Importing again adds nothing: no snapshot, sharded or not.
				again := run(t, l, c.opts)
				if again.Committed {
					t.Fatalf("N=%d: a re-import committed: %+v", n, again)
				}
				opts.In = want.Snapshot
				if got := shardedImport(t, l, opts, n); got != want.Snapshot {
					t.Fatalf("N=%d: a sharded re-import moved to %s", n, got)
				}
				if h := head(t, l).ID; h != want.Snapshot {
					t.Fatalf("N=%d: head %s", n, h)
				}
			}
		})
	}
	// Without --quarantine the shard with the bad record fails; the merge
	// then lacks it and commits nothing.
	l := newLake(t)
	opts := Options{Kind: KindJSONL, Paths: files}
	failed := 0
	for i := 0; i < 3; i++ {
		o := opts
		o.Shard = shard.Spec{Index: i, Count: 3}
		if _, err := Run(ctx, l, o); errors.Is(err, ErrRejected) {
			failed++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if failed == 0 {
		t.Fatal("no shard met a bad line")
	}
	if _, err := shard.Merge(ctx, l, shard.MergeOptions{Stage: Stage, Input: "empty", Shards: 3}); err == nil || !strings.Contains(err.Error(), "cannot be merged") {
		t.Fatalf("merge without the failed shards: %v", err)
	}
	if h, err := l.Head(ctx); h != "" || err != nil {
		t.Fatalf("a failed import committed %s (%v)", h, err)
	}
}
