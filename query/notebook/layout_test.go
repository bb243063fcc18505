package notebook_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cualake/cualake/query/notebook"
	"github.com/cualake/cualake/query/notebook/notebooktest"
)

// A report leads with its results: a summary cell shows large figures,
// the cells follow the header, and the lineage comes last, collapsed.
func TestReportLeadsWithResults(t *testing.T) {
	l, m := notebooktest.Lake(t)
	src := "# Run\n\n```sql\n-- title: Summary\n-- display: summary\nSELECT 0.354 AS heldout_success, 12 AS episodes, 'abc' AS snapshot\n```\n\n" +
		"```sql\n-- title: Episodes\n-- chart: bar x=outcome y=n\nSELECT outcome, count(*) AS n FROM trajectories GROUP BY 1 ORDER BY 1\n```\n"
	rep := runFile(t, l, m, "run.md", []byte(src))
	var b bytes.Buffer
	if err := notebook.WriteHTML(&b, rep); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		`<dl class="summary"><div class="figure" data-column="heldout_success"><dt>heldout success</dt><dd>0.354</dd></div>`,
		`<div class="figure" data-column="episodes"><dt>episodes</dt><dd>12</dd></div>`,
		`<details class="lineage"><summary>Lineage:`,
		`<details class="sql"><summary>SQL</summary>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	summary, chart, lineage := strings.Index(page, `class="summary"`), strings.Index(page, `<figure class="chart"`), strings.Index(page, `class="lineage"`)
	if !(summary > 0 && summary < chart && chart < lineage) {
		t.Errorf("order summary %d, chart %d, lineage %d: want the results first and the lineage last", summary, chart, lineage)
	}
	if strings.Contains(page, `class="lineage" open`) {
		t.Error("the lineage must start collapsed")
	}
	if n := strings.Count(page, `<table class="result">`); n != 1 {
		t.Errorf("%d result tables: the summary cell shows figures, not a table", n)
	}
}

func TestTablesLinkIDs(t *testing.T) {
	l, m := notebooktest.Lake(t)
	src := "```sql\nSELECT trajectory_id, group_id, task_id, outcome FROM trajectories ORDER BY 1 LIMIT 1\n```\n"
	rep := runFile(t, l, m, "ids.md", []byte(src))
	var b bytes.Buffer
	link := func(col, val string) string {
		if col == "outcome" {
			return ""
		}
		return "view/" + col + "/" + val
	}
	if err := notebook.WriteHTMLWith(&b, rep, notebook.HTMLOptions{IDLink: link}); err != nil {
		t.Fatal(err)
	}
	want := `<td><a class="ref" href="view/trajectory_id/tr-000">tr-000</a></td><td><a class="ref" href="view/group_id/g0-task-00">g0-task-00</a></td>` +
		`<td><a class="ref" href="view/task_id/task-00">task-00</a></td><td>`
	if !strings.Contains(b.String(), want) {
		t.Errorf("ids are not links:\n%s", b.String())
	}
	b.Reset()
	if err := notebook.WriteHTML(&b, rep); err != nil || strings.Contains(b.String(), `class="ref"`) {
		t.Errorf("WriteHTML without options links ids: %v", err)
	}
}
