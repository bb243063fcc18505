package experiment

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/loop"
	"github.com/cualake/cualake/schemas"
)

// commitRoot makes a snapshot on l's branch (a prefix's steps need some).
func commitRoot(t *testing.T, l *lake.Lake, msg string) string {
	t.Helper()
	ctx := context.Background()
	tx, err := l.Begin(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := lake.ReplaceTable(ctx, tx, schemas.ExperimentResults, []schemas.ExperimentResult{{Experiment: msg, Variant: "v", Branch: "b", Snapshot: "s"}}); err != nil {
		t.Fatal(err)
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "test", Message: msg})
	if err != nil {
		t.Fatal(err)
	}
	return m.ID
}

func TestAdoptPrefixSharesACommittedPrefix(t *testing.T) {
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	root := commitRoot(t, l, "root")
	steps := []loop.Step{{Key: "warm-sft"}, {Key: PrefixEnd}}
	const run = "r1"
	donor := "exp/a" + prefixDir + "p1234abcd/s1"
	if _, err := l.CreateBranch(ctx, donor, root); err != nil {
		t.Fatal(err)
	}
	d, err := l.OnBranch(donor)
	if err != nil {
		t.Fatal(err)
	}
	first := commitRoot(t, d, "warm")
	last := commitRoot(t, d, "pass")
	for _, tg := range [][2]string{
		{loop.DoneTag(donor, run, "warm-sft") + loop.StartedSuffix, root},
		{loop.DoneTag(donor, run, "warm-sft"), first},
		{loop.DoneTag(donor, run, PrefixEnd) + loop.StartedSuffix, first},
		{loop.DoneTag(donor, run, PrefixEnd), last},
	} {
		if _, err := l.Tag(ctx, tg[0], tg[1]); err != nil {
			t.Fatal(err)
		}
	}
	// A partly committed donor (another seed's tail) is never adopted.
	partial := "exp/c" + prefixDir + "p1234abcd/s2"
	if _, err := l.CreateBranch(ctx, partial, first); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Tag(ctx, loop.DoneTag(partial, run, "warm-sft"), first); err != nil {
		t.Fatal(err)
	}

	pre := &Prefix{Branch: "exp/b" + prefixDir + "p1234abcd/s1", RunID: run, Steps: steps, Seed: 1}
	var log bytes.Buffer
	for i := 0; i < 2; i++ { // the second call finds it adopted and changes nothing
		if err := adoptPrefix(ctx, l, pre, &log); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	branches, err := l.Branches(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if branches[pre.Branch] != last {
		t.Fatalf("adopted branch at %q, want the donor's last step %s", branches[pre.Branch], last)
	}
	tags, err := l.Tags(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"warm-sft", PrefixEnd} {
		for _, suf := range []string{"", loop.StartedSuffix} {
			if got, want := tags[loop.DoneTag(pre.Branch, run, k)+suf], tags[loop.DoneTag(donor, run, k)+suf]; got != want {
				t.Errorf("tag %s%s = %q, want the donor's %q", k, suf, got, want)
			}
		}
	}
	if strings.Count(log.String(), "shared") != 1 || !strings.Contains(log.String(), donor) {
		t.Errorf("log %q: want one line naming the donor", log.String())
	}

	// Killed after the tags, before the branch: the rerun creates it at
	// the last step's tag.
	pre3 := &Prefix{Branch: "exp/d" + prefixDir + "p1234abcd/s1", RunID: run, Steps: steps, Seed: 1}
	for _, k := range []string{"warm-sft", PrefixEnd} {
		if _, err := l.Tag(ctx, loop.DoneTag(pre3.Branch, run, k), tags[loop.DoneTag(donor, run, k)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := adoptPrefix(ctx, l, pre3, &log); err != nil {
		t.Fatal(err)
	}
	if branches, _ = l.Branches(ctx); branches[pre3.Branch] != last {
		t.Fatalf("tagged but not created: %s at %q, want %s", pre3.Branch, branches[pre3.Branch], last)
	}

	// Seed 2's only candidate is partial: no branch is made, the prefix runs.
	pre2 := &Prefix{Branch: "exp/b" + prefixDir + "p1234abcd/s2", RunID: run, Steps: steps, Seed: 2}
	if err := adoptPrefix(ctx, l, pre2, &log); err != nil {
		t.Fatal(err)
	}
	if branches, _ = l.Branches(ctx); branches[pre2.Branch] != "" {
		t.Fatalf("a partial prefix was adopted: %s at %s", pre2.Branch, branches[pre2.Branch])
	}
}

// A run of some seeds replaces only those seeds' rows of its experiment.
func TestCommitResultsKeepsOtherSeeds(t *testing.T) {
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	row := func(exp string, seed int64, h float64) schemas.ExperimentResult {
		return schemas.ExperimentResult{Experiment: exp, Variant: "v", Seed: seed, Branch: "b", Snapshot: "s", HeldoutSuccess: &h}
	}
	all := &Plan{Spec: Spec{Name: "e", Seeds: []int64{1, 2}}}
	if _, err := commitResults(ctx, l, all, []schemas.ExperimentResult{row("e", 1, 0.1), row("e", 2, 0.2), row("other", 2, 0.5)}); err != nil {
		t.Fatal(err)
	}
	two := &Plan{Spec: Spec{Name: "e", Seeds: []int64{2}}}
	m, err := commitResults(ctx, l, two, []schemas.ExperimentResult{row("e", 2, 0.3)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := lake.ReadTable(ctx, l, m, schemas.ExperimentResults)
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, r := range got {
		s = append(s, fmt.Sprintf("%s/%d=%.1f", r.Experiment, r.Seed, *r.HeldoutSuccess))
	}
	if strings.Join(s, " ") != "e/1=0.1 e/2=0.3 other/2=0.5" {
		t.Fatalf("rows after a seed-2 run: %v", s)
	}
}

// concurrently runs f(l, i) for i < n at once, each with its own handle on
// the lake at dir (as separate processes would have), and fails t with
// every error once all have returned.
func concurrently(t *testing.T, dir string, n int, f func(l *lake.Lake, i int) error) {
	t.Helper()
	errs := make(chan error, n)
	for i := range n {
		go func() {
			l, err := lake.OpenDir(context.Background(), dir, false)
			if err == nil {
				err = f(l, i)
			}
			errs <- err
		}()
	}
	var failed []error
	for range n { // every writer done before the temp dir goes
		if err := <-errs; err != nil {
			failed = append(failed, err)
		}
	}
	if len(failed) > 0 {
		t.Fatal(failed)
	}
}

// Experiments that finish at once in one lake all keep their rows: each
// replaces the experiments table, so the lake refuses all but one commit,
// and commitResults redoes the merge on the new head.
func TestCommitResultsConcurrentExperiments(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := lake.OpenDir(ctx, dir, true); err != nil {
		t.Fatal(err)
	}
	names := []string{"a", "b", "c", "d"}
	concurrently(t, dir, len(names), func(l *lake.Lake, i int) error {
		h := float64(i) / 10
		_, err := commitResults(ctx, l, &Plan{Spec: Spec{Name: names[i], Seeds: []int64{1}}},
			[]schemas.ExperimentResult{{Experiment: names[i], Variant: "v", Seed: 1, Branch: "b", Snapshot: "s", HeldoutSuccess: &h}})
		return err
	})
	l, err := lake.OpenDir(ctx, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	head, err := l.At(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	got, err := lake.ReadTable(ctx, l, head, schemas.ExperimentResults)
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, r := range got {
		s = append(s, fmt.Sprintf("%s=%.1f", r.Experiment, *r.HeldoutSuccess))
	}
	if strings.Join(s, " ") != "a=0.0 b=0.1 c=0.2 d=0.3" {
		t.Fatalf("rows after four concurrent experiments: %v", s)
	}
}

// Experiments started at once on an empty lake fork from one root: their
// root commits have equal content, so the lake makes them one snapshot
// instead of refusing all but one.
func TestForkPointConcurrentOnAnEmptyLake(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := lake.OpenDir(ctx, dir, true); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 4)
	concurrently(t, dir, len(ids), func(l *lake.Lake, i int) error {
		var err error
		ids[i], err = forkPoint(ctx, l)
		return err
	})
	if c := slices.Compact(slices.Clone(ids)); len(c) != 1 || c[0] == "" {
		t.Fatalf("roots: %v, want one", ids)
	}
}
