package notebooks_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/cualake/cualake/notebooks"
	"github.com/cualake/cualake/query"
	"github.com/cualake/cualake/query/notebook"
	"github.com/cualake/cualake/query/notebook/notebooktest"
)

// The loop's report (the learning notebook) opens with a summary and the
// learning curves; losses get one panel per objective; lineage comes last.
func TestLearningReportLeadsWithResults(t *testing.T) {
	l, m := notebooktest.Lake(t)
	ctx := context.Background()
	e, err := query.Open(ctx, l, m)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	src, err := notebooks.Source("learning")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := notebook.Run(ctx, e, notebook.Parse("learning.md", src))
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	var sqlCells []notebook.Output
	for _, o := range rep.Cells {
		if o.Cell.Kind == notebook.SQL {
			sqlCells = append(sqlCells, o)
		}
	}
	first := sqlCells[0]
	if first.Cell.Display != "summary" || strings.Join(first.Result.Columns, ",") != "heldout_success,training_success,iterations,episodes,run_time,snapshot" {
		t.Fatalf("first cell: display %q, columns %v; want the summary", first.Cell.Display, first.Result.Columns)
	}
	if got := first.Result.Rows[0][5]; got != m.ID {
		t.Errorf("summary snapshot %v, want %s", got, m.ID)
	}
	if sqlCells[1].Cell.Title != "Success rate per iteration" || sqlCells[1].Figure == nil {
		t.Errorf("second cell %q: want the success-rate curve", sqlCells[1].Cell.Title)
	}
	var b bytes.Buffer
	if err := notebook.WriteHTML(&b, rep); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	summary, curve, lineage := strings.Index(page, `<dl class="summary">`), strings.Index(page, `<figure class="chart"`), strings.Index(page, `<details class="lineage">`)
	if !(summary > 0 && summary < curve && curve < lineage) {
		t.Errorf("summary at %d, first chart at %d, lineage at %d", summary, curve, lineage)
	}
	for _, title := range []string{"Warm-start (SFT) loss per optimiser step", "GRPO loss per optimiser step"} {
		if !strings.Contains(page, title) {
			t.Errorf("no %q panel", title)
		}
	}
}
