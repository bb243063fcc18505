package loop

import (
	"context"
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
