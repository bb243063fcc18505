package notebooks_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cualake/cualake/notebooks"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/query"
	"github.com/cualake/cualake/query/notebook"
	"github.com/cualake/cualake/query/notebook/notebooktest"
)

// runLearning runs the learning notebook on the fixture lake and fails the
// test if any cell failed.
func runLearning(t *testing.T) (*notebook.Report, *lake.Manifest) {
	t.Helper()
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
	return rep, m
}

// The loop's report (the learning notebook) opens with a summary and the
// learning curves; losses get one panel per objective; lineage comes last.
func TestLearningReportLeadsWithResults(t *testing.T) {
	rep, m := runLearning(t)
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
	for _, title := range []string{"Warm-start (SFT) loss per optimiser step", "GRPO loss per optimiser step", "RFT loss per optimiser step"} {
		if !strings.Contains(page, title) {
			t.Errorf("no %q panel", title)
		}
	}
}

// The reach chart counts, after each pass, the training tasks with a
// verified success so far and those solved first in that pass; checked
// against the fixture's rows counted here.
func TestLearningReachCountsSolvedTasks(t *testing.T) {
	rep, _ := runLearning(t)
	var reach *notebook.Output
	for i, o := range rep.Cells {
		if o.Cell.Title == "Training tasks with a verified success, by pass" {
			reach = &rep.Cells[i]
		}
	}
	if reach == nil || reach.Result == nil || reach.Figure == nil {
		t.Fatal("no reach chart")
	}
	first, passes := notebooktest.Reach() // task -> first iteration with a success; iterations with rollouts
	want := map[string]int64{}
	for it := range passes {
		for _, f := range first {
			if f <= it {
				want[fmt.Sprintf("%d/solved so far", it)]++
			}
			if f == it {
				want[fmt.Sprintf("%d/new in this pass", it)]++
			}
		}
	}
	if len(reach.Result.Rows) != 2*len(passes) {
		t.Fatalf("%d rows, want 2 per pass (%d passes)", len(reach.Result.Rows), len(passes))
	}
	grew := false
	for _, r := range reach.Result.Rows {
		key := fmt.Sprintf("%v/%v", r[0], r[1])
		got, _ := r[2].(int64)
		if got != want[key] {
			t.Errorf("%s: %d tasks, want %d", key, got, want[key])
		}
		if r[1] == "new in this pass" && got > 0 && fmt.Sprint(r[0]) != "0" {
			grew = true
		}
	}
	if !grew {
		t.Error("the fixture solves no task first after the initial pass: the test would not see a wrong cumulative count")
	}
}
