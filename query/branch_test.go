package query

import (
	"context"
	"fmt"
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// TestLineageHeads: lake_snapshots.heads lists the branches whose head is
// each snapshot of the lineage, also when the engine reads a branch.
func TestLineageHeads(t *testing.T) {
	ctx := context.Background()
	l, _, base := fixture(t, 3)
	for _, b := range []string{"exp/a", "exp/b"} {
		if _, err := l.CreateBranch(ctx, b, ""); err != nil {
			t.Fatal(err)
		}
	}
	onA, err := l.OnBranch("exp/a")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := onA.Begin(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := lake.ReplaceTable(ctx, tx, schemas.Tasks, []schemas.Task{{TaskID: "a1", Domain: "files", Setup: "[]", Judge: "{}", Source: schemas.SourceSeed}}); err != nil {
		t.Fatal(err)
	}
	ma, err := tx.Commit(ctx, lake.CommitInfo{Stage: "on-a"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := onA.At(ctx, "")
	if err != nil || m.ID != ma.ID {
		t.Fatalf("branch head: %v %v", m, err)
	}
	e, err := Open(ctx, onA, m)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res, err := e.Query(ctx, "SELECT depth, id, heads FROM lake_snapshots ORDER BY depth")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(res.Rows)
	want := fmt.Sprint([][]any{{int32(0), ma.ID, []any{"exp/a"}}, {int32(1), base.ID, []any{"exp/b", "main"}}})
	if got != want {
		t.Fatalf("lineage heads:\n got %s\nwant %s", got, want)
	}
}
