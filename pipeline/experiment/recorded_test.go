package experiment

import (
	"context"
	"io"
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/loop"
)

// onePrefix loads an experiment of one variant and seed 1 and returns its
// plan (prefixes only: the fake steps commit no tables to collect).
func onePrefix(t *testing.T, name, set string) *Plan {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "base.yaml", base)
	p, err := Load(write(t, dir, name+".yaml", "name: "+name+"\nbase: base.yaml\nseeds: [1]\nvariants:\n  - {name: v, set: {"+set+"}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Prefixes) != 1 || len(p.Stems) != 0 {
		t.Fatalf("%s: %d prefixes, %d stems", name, len(p.Prefixes), len(p.Stems))
	}
	p.Arms = nil
	p.Prefixes[0].Arms = nil
	return p
}

func doneAt(t *testing.T, l *lake.Lake, pre *Prefix, key string) string {
	t.Helper()
	tags, err := l.Tags(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	id := tags[loop.DoneTag(pre.Branch, pre.RunID, key)]
	if id == "" {
		t.Fatalf("%s has no done tag for %s", pre.Branch, key)
	}
	return id
}

// A new experiment whose prefix parts from an earlier experiment's after
// the warm start (another initial pass) runs only the steps after it, on
// the earlier one's snapshots; a rerun runs nothing.
func TestRecordedStepsAreSharedAcrossExperiments(t *testing.T) {
	a, b := onePrefix(t, "first", ""), onePrefix(t, "second", "initial_pass.n: 8")
	pa, pb := a.Prefixes[0], b.Prefixes[0]
	shared := sharedSteps(pa.Steps, pb.Steps)
	if shared == 0 || shared == len(pb.Steps) || pb.Steps[shared-1].Key == PrefixEnd {
		t.Fatalf("the two prefixes share %d of %d steps: the test needs them to part at the initial pass", shared, len(pb.Steps))
	}
	f := &fakeSteps{l: openTestLake(t)}
	if n := f.run(t, a, 1); n != len(pa.Steps) {
		t.Fatalf("first: %d steps ran, want %d", n, len(pa.Steps))
	}
	if n := f.run(t, b, 1); n != len(pb.Steps)-shared {
		t.Fatalf("second: %d steps ran, want its %d own (the first %d recorded by the first experiment)", n, len(pb.Steps)-shared, shared)
	}
	for _, s := range pb.Steps[:shared] {
		if got, want := doneAt(t, f.l, pb, s.Key), doneAt(t, f.l, pa, s.Key); got != want {
			t.Fatalf("step %s: second at %s, want the first's %s", s.Key, lake.ShortID(got), lake.ShortID(want))
		}
	}
	if doneAt(t, f.l, pb, PrefixEnd) == doneAt(t, f.l, pa, PrefixEnd) {
		t.Fatal("the initial passes differ but share a snapshot")
	}
	if n := f.run(t, b, 1); n != 0 {
		t.Fatalf("a rerun ran %d steps", n)
	}
}

// A prefix that finished before steps were recorded (or ran outside an
// experiment) records them when its experiment runs again, so the next
// experiment shares them; and where two lineages computed the same steps,
// only the first is recorded, so adopted steps always lie on one lineage.
func TestRecordingKeepsOneLineage(t *testing.T) {
	ctx := context.Background()
	a, b, c := onePrefix(t, "first", ""), onePrefix(t, "second", "initial_pass.n: 8"), onePrefix(t, "third", "initial_pass.n: 4")
	pa, pb := a.Prefixes[0], b.Prefixes[0]
	f := &fakeSteps{l: openTestLake(t)}
	// Both run their steps as before recording: each its own lineage.
	root, err := forkPoint(ctx, f.l)
	if err != nil {
		t.Fatal(err)
	}
	for i, pre := range []*Prefix{pa, pb} {
		if i == 1 { // fork the second from another snapshot
			if err := f.executor(lake.MainRef, io.Discard)(ctx, []string{"elsewhere"}, nil); err != nil {
				t.Fatal(err)
			}
			if root, err = f.l.Head(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := f.l.CreateBranch(ctx, pre.Branch, root); err != nil {
			t.Fatal(err)
		}
		on, err := f.l.OnBranch(pre.Branch)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := loop.RunSteps(ctx, on, pre.RunID, pre.Steps, f.executor(pre.Branch, io.Discard), io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	if doneAt(t, f.l, pa, pa.Steps[0].Key) == doneAt(t, f.l, pb, pb.Steps[0].Key) {
		t.Fatal("the two prefixes ran on one lineage; the test needs two")
	}
	// The second experiment's rerun records its steps; the first's then
	// finds them recorded from the other lineage and records none.
	if n := f.run(t, b, 1); n != 0 {
		t.Fatalf("rerun of a finished prefix ran %d steps", n)
	}
	if n := f.run(t, a, 1); n != 0 {
		t.Fatalf("rerun of a finished prefix ran %d steps", n)
	}
	tags, err := f.l.Tags(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range pb.Steps {
		if got := tags[stepsTag(pb.Steps[:i+1])]; got != doneAt(t, f.l, pb, s.Key) {
			t.Fatalf("depth %d: recorded at %s, want the second's %s", i+1, lake.ShortID(got), lake.ShortID(doneAt(t, f.l, pb, s.Key)))
		}
	}
	if _, ok := tags[stepsTag(pa.Steps)]; ok {
		t.Fatal("the first's initial pass was recorded on top of the second's lineage")
	}
	// The third shares the second's warm start and runs its initial pass.
	pc := c.Prefixes[0]
	shared := sharedSteps(pb.Steps, pc.Steps)
	if n := f.run(t, c, 1); n != len(pc.Steps)-shared {
		t.Fatalf("third: %d steps ran, want %d", n, len(pc.Steps)-shared)
	}
	if got, want := doneAt(t, f.l, pc, pc.Steps[shared-1].Key), doneAt(t, f.l, pb, pb.Steps[shared-1].Key); got != want {
		t.Fatalf("third forks at %s, want the second's %s", lake.ShortID(got), lake.ShortID(want))
	}
}

// Two arms forked from one prefix snapshot whose leading steps are equal
// (2 and 3 iterations) compute those steps once: the second takes them
// from the first's recorded snapshots, commits its own marker on top and
// runs only its own steps; a rerun runs nothing. A kill between the
// adoption and the marker resumes to the same branch, and another fork
// point shares nothing.
func TestArmsShareTheirLeadingSteps(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write(t, dir, "base.yaml", base)
	p, err := Load(write(t, dir, "arms.yaml", "name: arms\nbase: base.yaml\nseeds: [1]\nvariants:\n  - {name: it2}\n  - {name: it3, set: {iterations: 3}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Arms) != 2 || p.Arms[0].Prefix != p.Arms[1].Prefix {
		t.Fatalf("%d arms; want two on one prefix", len(p.Arms))
	}
	it2, it3 := p.Arms[0], p.Arms[1]
	s2, s3 := suffixSteps(it2.Config), suffixSteps(it3.Config)
	shared := sharedSteps(s2, s3)
	if shared == 0 || shared >= len(s3) {
		t.Fatalf("the arms share %d of %d steps: the test needs a proper leading part", shared, len(s3))
	}
	runArmCounted := func(f *fakeSteps, a *Arm, fork string) int {
		t.Helper()
		before := f.count
		if _, err := runArm(ctx, f.l, p, a, fork, Options{Workers: 1, Executor: f.executor}, io.Discard); err != nil {
			t.Fatalf("%s: %v", a.Branch, err)
		}
		if err := recordArm(ctx, f.l, a, fork); err != nil {
			t.Fatalf("%s: %v", a.Branch, err)
		}
		return f.count - before
	}
	check := func(f *fakeSteps, fork string) {
		t.Helper()
		tags, err := f.l.Tags(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range s3[:shared] {
			own, donor := tags[loop.DoneTag(it3.Branch, loop.RunID(it3.Config), s.Key)], tags[loop.DoneTag(it2.Branch, loop.RunID(it2.Config), s2[i].Key)]
			if own == "" || own != donor {
				t.Fatalf("step %s of it3 at %s, it2's at %s", s.Key, own, donor)
			}
		}
		head, err := f.l.BranchHead(ctx, it3.Branch)
		if err != nil {
			t.Fatal(err)
		}
		row, err := runRow(ctx, f.l, head)
		if err != nil || row == nil || row.Variant != "it3" || row.RunID != loop.RunID(it3.Config) || row.PrefixSnapshot != fork {
			t.Fatalf("it3's head row %+v (%v)", row, err)
		}
	}

	f := &fakeSteps{l: openTestLake(t)}
	fork := commitRoot(t, f.l, "prefix")
	if n := runArmCounted(f, it2, fork); n != len(s2) {
		t.Fatalf("it2 ran %d steps, want %d", n, len(s2))
	}
	if n := runArmCounted(f, it3, fork); n != len(s3)-shared {
		t.Fatalf("it3 ran %d steps, want its %d own (the first %d are it2's)", n, len(s3)-shared, shared)
	}
	check(f, fork)
	if n := runArmCounted(f, it3, fork); n != 0 {
		t.Fatalf("a rerun ran %d steps", n)
	}

	// Killed after the adoption, before the marker: the rerun commits it.
	k := &fakeSteps{l: openTestLake(t)}
	kfork := commitRoot(t, k.l, "prefix")
	runArmCounted(k, it2, kfork)
	if err := adoptArmSteps(ctx, k.l, it3, kfork, io.Discard); err != nil {
		t.Fatal(err)
	}
	if n := runArmCounted(k, it3, kfork); n != len(s3)-shared {
		t.Fatalf("after a kill, it3 ran %d steps, want %d", n, len(s3)-shared)
	}
	check(k, kfork)

	// From another prefix snapshot nothing is shared.
	other := &fakeSteps{l: f.l}
	it3b := *it3
	it3b.Branch = "exp/arms/it3/s1-other"
	if n := runArmCounted(other, &it3b, commitRoot(t, f.l, "another prefix")); n != len(s3) {
		t.Fatalf("from another fork it3 ran %d steps, want all %d", n, len(s3))
	}
}

// Arms that run at once wait for the arm whose leading steps they share
// (setLeaders), so those steps run once with two workers as with one; an
// arm that shares only a cheap step or two does not wait.
func TestConcurrentArmsWaitForTheirLeader(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "base.yaml", base)
	p, err := Load(write(t, dir, "arms.yaml", "name: arms\nbase: base.yaml\nseeds: [1]\nvariants:\n"+
		"  - {name: it2}\n  - {name: it3, set: {iterations: 3}}\n  - {name: lr, set: {train.lr: 0.001}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	it2, it3, lr := p.Arms[0], p.Arms[1], p.Arms[2]
	if it2.Leader != nil || it3.Leader != it2 || lr.Leader != nil {
		t.Fatalf("leaders: it2 %v, it3 %v, lr %v; want none, it2, none", it2.Leader, it3.Leader, lr.Leader)
	}
	s2, s3, slr := suffixSteps(it2.Config), suffixSteps(it3.Config), suffixSteps(lr.Config)
	shared := sharedSteps(s2, s3)
	if n := sharedSteps(s2, slr); n == 0 || n >= shared {
		t.Fatalf("lr shares %d leading steps with it2 (it3 %d): the test needs a few, fewer than it3's", n, shared)
	}
	for _, workers := range []int{1, 3} {
		f := &fakeSteps{l: openTestLake(t)}
		f.run(t, p, workers)
		// lr shares its first steps only when it starts after it2 has
		// finished (one worker): that is timing, not asserted.
		if f.ran[it2.Branch] != len(s2) || f.ran[it3.Branch] != len(s3)-shared {
			t.Fatalf("%d workers: it2 ran %d steps (want %d), it3 %d (want its own %d; the first %d are it2's)",
				workers, f.ran[it2.Branch], len(s2), f.ran[it3.Branch], len(s3)-shared, shared)
		}
		tags, err := f.l.Tags(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range s3[:shared] {
			own, donor := tags[loop.DoneTag(it3.Branch, loop.RunID(it3.Config), s.Key)], tags[loop.DoneTag(it2.Branch, loop.RunID(it2.Config), s2[i].Key)]
			if own == "" || own != donor {
				t.Fatalf("%d workers: step %s of it3 at %s, it2's at %s", workers, s.Key, own, donor)
			}
		}
		if f.ran[lr.Branch] == 0 {
			t.Fatalf("%d workers: lr ran no steps", workers)
		}
	}
}
