package experiment

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/loop"
	"github.com/cualake/cualake/schemas"
)

// stemPlan is a plan whose prefixes part at two depths: demo and n8 differ
// only in the initial pass, warm already in the warm start's training.
func stemPlan(t *testing.T, seeds string) *Plan {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "base.yaml", base)
	p, err := Load(write(t, dir, "e.yaml", `name: stems
base: base.yaml
seeds: [`+seeds+`]
variants:
  - {name: demo}
  - {name: n8, set: {initial_pass.n: 8}}
  - {name: n8-b8, set: {initial_pass.n: 8, sample.batch: 8}}
  - {name: warm, set: {warmstart.steps: 10}}
`))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStemsAreTheBranchPointsOfThePrefixes(t *testing.T) {
	p := stemPlan(t, "1, 2")
	if len(p.Prefixes) != 6 {
		t.Fatalf("%d prefixes, want 3 groups x 2 seeds", len(p.Prefixes))
	}
	by := map[string]*Prefix{}
	for _, a := range p.Arms {
		if a.Seed == 1 {
			by[a.Variant] = a.Prefix
		}
	}
	demo, n8, warm := by["demo"], by["n8"], by["warm"]
	if by["n8-b8"] != n8 {
		t.Fatal("n8 and n8-b8 differ only in the iterations: one prefix")
	}
	keys := func(steps []loop.Step) string {
		var k []string
		for _, s := range steps {
			k = append(k, s.Key)
		}
		return strings.Join(k, ",")
	}
	late, early := demo.Parent, warm.Parent
	if late == nil || early == nil || n8.Parent != late || late.Parent != early || early.Parent != nil {
		t.Fatalf("parents: demo %v, n8 %v, warm %v", demo.Parent, n8.Parent, warm.Parent)
	}
	// demo and n8 part at the initial pass: they share the warm start's
	// training and the evaluation after it; warm parts at the training.
	if got := keys(late.Steps); got != strings.TrimSuffix(keys(demo.Steps), ","+PrefixEnd) || !strings.Contains(got, "warm-sft") {
		t.Fatalf("late stem %s of prefix %s", got, keys(demo.Steps))
	}
	if got := keys(early.Steps); strings.Contains(got, "warm-sft") || !strings.HasPrefix(keys(warm.Steps), got+",warm-sft") {
		t.Fatalf("early stem %s of prefix %s", got, keys(warm.Steps))
	}
	if len(p.Stems) != 4 || p.Stems[0] != early || p.Stems[1] != late || p.Stems[2].Seed != 2 || p.Stems[3].Parent != p.Stems[2] {
		t.Fatalf("stems: %d, want 2 per seed, shallow first", len(p.Stems))
	}
	// Names follow the prefixes' rule: the seed-free hash of the steps.
	if !strings.HasPrefix(late.Branch, "exp/stems"+prefixDir+"p") || strings.TrimSuffix(late.Branch, "/s1") != strings.TrimSuffix(p.Stems[3].Branch, "/s2") ||
		late.Branch == early.Branch || late.RunID != stepsID(late.Steps) {
		t.Fatalf("stem branches %s %s %s", early.Branch, late.Branch, p.Stems[3].Branch)
	}
	q, err := p.OnlySeeds([]int64{2})
	if err != nil || len(q.Stems) != 2 || q.Stems[0].Seed != 2 {
		t.Fatalf("OnlySeeds keeps seed 2's stems: %v", err)
	}
}

// fakeSteps executes a plan's steps as commits whose content is the step's
// command and flags and the snapshot it ran on, so equal histories give
// equal snapshot ids, and counts the executions.
type fakeSteps struct {
	l     *lake.Lake
	mu    sync.Mutex
	count int
	ran   map[string]int // steps run per branch
	last  *Result
}

func (f *fakeSteps) executor(branch string, _ io.Writer) loop.Executor {
	return func(ctx context.Context, command, flags []string) error {
		f.mu.Lock()
		f.count++
		if f.ran == nil {
			f.ran = map[string]int{}
		}
		f.ran[branch]++
		f.mu.Unlock()
		b, err := f.l.OnBranch(branch)
		if err != nil {
			return err
		}
		head, err := b.Head(ctx)
		if err != nil {
			return err
		}
		tx, err := b.Begin(ctx, "")
		if err != nil {
			return err
		}
		what := strings.Join(append(append([]string{}, command...), flags...), " ")
		if err := lake.ReplaceTable(ctx, tx, schemas.ExperimentResults, []schemas.ExperimentResult{{Experiment: "fake", Variant: "v", Branch: what, Snapshot: head}}); err != nil {
			return err
		}
		_, err = tx.Commit(ctx, lake.CommitInfo{Stage: "test", Message: what})
		return err
	}
}

func (f *fakeSteps) run(t *testing.T, p *Plan, workers int) int {
	t.Helper()
	f.mu.Lock()
	before := f.count
	f.mu.Unlock()
	res, err := Run(context.Background(), f.l, p, Options{Workers: workers, Executor: f.executor})
	if err != nil {
		t.Fatal(err)
	}
	f.last = res
	return f.count - before
}

// distinctSteps counts the nodes of the prefixes' step tree: what must run
// when every shared step runs once.
func distinctSteps(p *Plan) int {
	seen := map[string]bool{}
	for _, pre := range p.Prefixes {
		for i := range pre.Steps {
			seen[fmt.Sprint(pre.Seed, stepsID(pre.Steps[:i+1]))] = true
		}
	}
	return len(seen)
}

func heads(t *testing.T, l *lake.Lake, p *Plan) map[string]string {
	t.Helper()
	branches, err := l.Branches(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, pre := range p.Prefixes {
		if branches[pre.Branch] == "" {
			t.Fatalf("prefix %s has no branch", pre.Branch)
		}
		out[pre.Branch] = branches[pre.Branch]
	}
	return out
}

// unshared is p as it ran before stems: every prefix from the fork point.
func unshared(p *Plan) *Plan {
	q := *p
	q.Stems = nil
	q.Prefixes = nil
	for _, pre := range p.Prefixes {
		c := *pre
		c.Parent = nil
		q.Prefixes = append(q.Prefixes, &c)
	}
	return &q
}

func openTestLake(t *testing.T) *lake.Lake {
	t.Helper()
	l, err := lake.OpenDir(context.Background(), t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Every shared step runs once, with one worker (nothing waits for a stem
// while holding the slot) or two, and the prefixes end where they end
// when each runs all its steps itself.
func TestStemsRunSharedStepsOnce(t *testing.T) {
	p := stemPlan(t, "1, 2")
	p.Arms = nil // the prefixes only: the fake steps commit no tables to collect
	for _, p := range p.Prefixes {
		p.Arms = nil
	}
	ref := &fakeSteps{l: openTestLake(t)}
	all := 0
	for _, pre := range p.Prefixes {
		all += len(pre.Steps)
	}
	if n := ref.run(t, unshared(p), 2); n != all {
		t.Fatalf("without stems: %d steps ran, want %d", n, all)
	}
	want := heads(t, ref.l, p)
	for _, workers := range []int{1, 2} {
		f := &fakeSteps{l: openTestLake(t)}
		if n, d := f.run(t, p, workers), distinctSteps(p); n != d || d >= all {
			t.Fatalf("%d workers: %d steps ran, want the %d distinct ones (of %d)", workers, n, d, all)
		}
		stems := 0
		for _, b := range f.last.Prefixes {
			if b.Stem {
				stems++
			}
		}
		if stems != len(p.Stems) || len(f.last.Prefixes) != len(p.Prefixes)+len(p.Stems) {
			t.Fatalf("%d workers: result lists %d branches, %d of them stems; want %d prefixes and %d stems", workers, len(f.last.Prefixes), stems, len(p.Prefixes), len(p.Stems))
		}
		got := heads(t, f.l, p)
		for b, h := range want {
			if got[b] != h {
				t.Fatalf("%d workers: %s at %s, want %s as without stems", workers, b, lake.ShortID(got[b]), lake.ShortID(h))
			}
		}
		if n := f.run(t, p, workers); n != 0 {
			t.Fatalf("a rerun ran %d steps", n)
		}
	}
	// A lake where the prefixes ran before stems existed computes no stem.
	if n := ref.run(t, p, 2); n != 0 {
		t.Fatalf("stems recomputed %d steps that complete prefixes hold", n)
	}
}

// A stem takes its steps from a prefix of the plan that already has them
// (a lake where one group of variants ran first): only the new prefixes'
// own steps run.
func TestStemAdoptsASiblingPrefix(t *testing.T) {
	p := stemPlan(t, "1")
	p.Arms = nil
	var demo *Prefix
	for _, pre := range p.Prefixes {
		pre.Arms = nil
		if len(pre.Steps) == len(pre.Parent.Steps)+1 && demo == nil {
			demo = pre
		}
	}
	f := &fakeSteps{l: openTestLake(t)}
	first := unshared(&Plan{Spec: p.Spec, Prefixes: []*Prefix{demo}})
	if n := f.run(t, first, 1); n != len(demo.Steps) {
		t.Fatalf("the first prefix ran %d steps", n)
	}
	// The rest: warm's own steps after the early stem, and n8's initial pass.
	var want int
	for _, pre := range p.Prefixes {
		if pre != demo {
			want += len(pre.Steps) - len(pre.Parent.Steps)
		}
	}
	if n := f.run(t, p, 1); n != want {
		t.Fatalf("%d steps ran, want %d (the stems shared from %s)", n, want, demo.Branch)
	}
}

// With one worker the prefixes start in the plan's order (seed 1's before
// seed 2's), stems and all.
func TestStemsKeepThePrefixOrder(t *testing.T) {
	p := stemPlan(t, "1, 2, 3")
	p.Arms = nil
	for _, pre := range p.Prefixes {
		pre.Arms = nil
	}
	for try := 0; try < 3; try++ {
		f := &fakeSteps{l: openTestLake(t)}
		var mu sync.Mutex
		var order []string
		exec := f.executor
		f2 := func(branch string, log io.Writer) loop.Executor {
			e := exec(branch, log)
			return func(ctx context.Context, command, flags []string) error {
				mu.Lock()
				if len(order) == 0 || order[len(order)-1] != branch {
					order = append(order, branch)
				}
				mu.Unlock()
				return e(ctx, command, flags)
			}
		}
		if _, err := Run(context.Background(), f.l, p, Options{Workers: 1, Executor: f2}); err != nil {
			t.Fatal(err)
		}
		var prefixes []string
		for _, b := range order {
			for _, pre := range p.Prefixes {
				if pre.Branch == b {
					prefixes = append(prefixes, b)
				}
			}
		}
		var want []string
		for _, pre := range p.Prefixes {
			want = append(want, pre.Branch)
		}
		if strings.Join(prefixes, " ") != strings.Join(want, " ") {
			t.Fatalf("try %d: prefixes ran in the order\n%s\nwant the plan's\n%s", try, strings.Join(prefixes, "\n"), strings.Join(want, "\n"))
		}
	}
}

// A kill after adoptSteps wrote a prefix's tags but before it made the
// branch: the rerun creates the branch at the last tagged step, even when
// the plan no longer has the stem, and runs only the rest.
func TestStemAdoptionKilledAfterTheTags(t *testing.T) {
	p := stemPlan(t, "1")
	p.Arms = nil
	for _, pre := range p.Prefixes {
		pre.Arms = nil
	}
	f := &fakeSteps{l: openTestLake(t)}
	ctx := context.Background()
	if n := f.run(t, p, 1); n != distinctSteps(p) {
		t.Fatalf("first run: %d steps", n)
	}
	pre := p.Prefixes[1]
	tags, err := f.l.Tags(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.DeleteBranch(ctx, pre.Branch); err != nil {
		t.Fatal(err)
	}
	// What adoptSteps leaves when killed before CreateBranch: the stem's
	// steps tagged under the prefix's run, no branch.
	for _, s := range pre.Parent.Steps {
		id := tags[loop.DoneTag(pre.Parent.Branch, pre.Parent.RunID, s.Key)]
		if _, err := f.l.Tag(ctx, loop.DoneTag(pre.Branch, pre.RunID, s.Key), id); err != nil && !strings.Contains(err.Error(), "exist") {
			t.Fatal(err)
		}
	}
	alone := unshared(&Plan{Spec: p.Spec, Prefixes: []*Prefix{pre}})
	if n := f.run(t, alone, 1); n != len(pre.Steps)-len(pre.Parent.Steps) {
		t.Fatalf("rerun without the stem ran %d steps, want its own %d", n, len(pre.Steps)-len(pre.Parent.Steps))
	}
}
