package loop

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// committer is an executor whose every step appends one audit row naming
// the step to the handle's branch, and counts what it ran.
func committer(l *lake.Lake, ran *[]string) Executor {
	return func(ctx context.Context, command, flags []string) error {
		tx, err := l.Begin(ctx, "")
		if err != nil {
			return err
		}
		key := strings.Join(command, " ") + " " + strings.Join(flags, " ")
		row := schemas.Audit{Kind: "step", Metric: key, Group: l.Branch() + "/" + itoa(len(*ran)), Params: "{}"}
		if err := lake.AppendTable(ctx, tx, schemas.Audits, []schemas.Audit{row}); err != nil {
			return err
		}
		if _, err := tx.Commit(ctx, lake.CommitInfo{Stage: command[0]}); err != nil {
			return err
		}
		*ran = append(*ran, key)
		return nil
	}
}

// TestRunsOnTwoBranchesEachRunEveryStep: the resume tags are per branch, so
// the same config run on main and then on two branches forked from main's
// first snapshot runs every step on each, and a rerun on a branch resumes
// all of its steps without running any.
func TestRunsOnTwoBranchesEachRunEveryStep(t *testing.T) {
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	c := Default()
	c.Iterations, c.Synthesize.Count, c.Audits = 1, 0, nil
	steps := len(Plan(c))
	var onMain []string
	if _, err := Run(ctx, l, c, committer(l, &onMain), io.Discard); err != nil {
		t.Fatal(err)
	}
	if len(onMain) != steps {
		t.Fatalf("main ran %d of %d steps", len(onMain), steps)
	}
	first, err := l.Log(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	root := first[len(first)-1].ID
	for _, name := range []string{"exp/a", "exp/b"} {
		if _, err := l.CreateBranch(ctx, name, root); err != nil {
			t.Fatal(err)
		}
		b, err := l.OnBranch(name)
		if err != nil {
			t.Fatal(err)
		}
		var ran []string
		res, err := Run(ctx, b, c, committer(b, &ran), io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(ran) != steps {
			t.Fatalf("%s ran %d of %d steps: a step done on another branch was skipped", name, len(ran), steps)
		}
		head, _ := b.Head(ctx)
		if res[len(res)-1].Snapshot != head {
			t.Fatalf("%s: last step at %s, branch head %s", name, res[len(res)-1].Snapshot, head)
		}
		tags, err := l.Tags(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if id := tags[DoneTag(name, RunID(c), "it01-train")]; id == "" {
			t.Fatalf("%s: no done tag %s", name, DoneTag(name, RunID(c), "it01-train"))
		}
		ran = nil
		res, err = Run(ctx, b, c, committer(b, &ran), io.Discard)
		if err != nil || len(ran) != 0 || !res[0].Resumed {
			t.Fatalf("%s rerun: ran %v, err %v", name, ran, err)
		}
	}
	mainHead, _ := l.Head(ctx)
	if mainHead != first[0].ID {
		t.Fatalf("the branch runs moved main from %s to %s", first[0].ID, mainHead)
	}
}

// TestRecreatedBranchStartsOver: deleting a branch takes its run tags with
// it, so a branch of that name created again runs every step; and a done
// tag whose snapshot the branch does not reach is refused, not resumed.
func TestRecreatedBranchStartsOver(t *testing.T) {
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	if err := committer(l, &ran)(ctx, []string{"root"}, nil); err != nil {
		t.Fatal(err)
	}
	root, _ := l.Head(ctx)
	c := Default()
	c.Iterations, c.Synthesize.Count, c.Audits = 1, 0, nil
	steps := len(Plan(c))
	if _, err := l.CreateBranch(ctx, "exp/a", root); err != nil {
		t.Fatal(err)
	}
	b, err := l.OnBranch("exp/a")
	if err != nil {
		t.Fatal(err)
	}
	ran = nil
	if _, err := Run(ctx, b, c, committer(b, &ran), io.Discard); err != nil || len(ran) != steps {
		t.Fatalf("first run: ran %d of %d, %v", len(ran), steps, err)
	}
	aHead, _ := b.Head(ctx)
	if _, err := l.DeleteBranch(ctx, "exp/a"); err != nil {
		t.Fatal(err)
	}
	tags, _ := l.Tags(ctx)
	for name := range tags {
		if strings.HasPrefix(name, "exp/a/") {
			t.Fatalf("branch delete left its run tag %s", name)
		}
	}
	if _, err := l.CreateBranch(ctx, "exp/a", root); err != nil {
		t.Fatal(err)
	}
	ran = nil
	if _, err := Run(ctx, b, c, committer(b, &ran), io.Discard); err != nil || len(ran) != steps {
		t.Fatalf("rerun on the re-created branch: ran %d of %d steps, %v", len(ran), steps, err)
	}

	// A done tag naming a snapshot off the branch (another branch's).
	if _, err := l.CreateBranch(ctx, "exp/b", root); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Tag(ctx, DoneTag("exp/b", RunID(c), Plan(c)[0].Key), aHead); err != nil {
		t.Fatal(err)
	}
	bb, err := l.OnBranch("exp/b")
	if err != nil {
		t.Fatal(err)
	}
	ran = nil
	_, err = Run(ctx, bb, c, committer(bb, &ran), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "which branch exp/b does not reach") || len(ran) != 0 {
		t.Fatalf("run from a stale tag: ran %v, err %v", ran, err)
	}
	if head, _ := bb.Head(ctx); head != root {
		t.Fatalf("the refused run moved the branch to %s", head)
	}
}

// TestResumeRefusesAnotherCodeVersion: a run whose steps another code
// version committed is not resumed (run ids hash the config, not the code,
// so the rerun would otherwise report the old code's data as this code's);
// the error names the step and both versions and moves nothing, and the
// same code resumes as before.
func TestResumeRefusesAnotherCodeVersion(t *testing.T) {
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	c := Default()
	c.Iterations, c.Synthesize.Count, c.Audits = 1, 0, nil
	var ran []string
	if _, err := Run(ctx, l, c, committer(l, &ran), io.Discard); err != nil {
		t.Fatal(err)
	}
	// A second run (another seed) killed after its first step committed,
	// before the step's done tag: its resume must not adopt that commit.
	killed := c
	killed.Seed++
	commit := committer(l, &ran)
	_, err = Run(ctx, l, killed, func(ctx context.Context, command, flags []string) error {
		if err := commit(ctx, command, flags); err != nil {
			return err
		}
		return errors.New("killed")
	}, io.Discard)
	if err == nil {
		t.Fatal("the killed run did not fail")
	}
	head, _ := l.Head(ctx)
	defer func(v string) { codeVersion = v }(codeVersion)
	codeVersion = "cualake/newer"
	if _, err := Run(ctx, l, killed, committer(l, &ran), io.Discard); !errors.Is(err, ErrOtherCodeVersion) {
		t.Fatalf("resume of a killed step under another code version: err %v, want ErrOtherCodeVersion", err)
	}
	ran = nil
	_, err = Run(ctx, l, c, committer(l, &ran), io.Discard)
	if !errors.Is(err, ErrOtherCodeVersion) {
		t.Fatalf("resume under another code version: err %v, want ErrOtherCodeVersion", err)
	}
	for _, want := range []string{Plan(c)[0].Key, lake.CodeVersion, "cualake/newer", "--lake"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if after, _ := l.Head(ctx); len(ran) != 0 || after != head {
		t.Fatalf("the refused resume ran %v and moved main %s -> %s", ran, head, after)
	}
	codeVersion = lake.CodeVersion
	if res, err := Run(ctx, l, c, committer(l, &ran), io.Discard); err != nil || len(ran) != 0 || !res[0].Resumed {
		t.Fatalf("same-version rerun: ran %v, err %v", ran, err)
	}
}
