package notebook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/query"
	"github.com/cualake/cualake/query/notebook"
	"github.com/cualake/cualake/query/notebook/notebooktest"
)

func TestMarkdown(t *testing.T) {
	src := "# Title *one*\n\nSome **bold**, _em_ and `code <b>` with snake_case_name and a [link](https://x.org/a?b=1&c=2).\nSecond line.\n\n" +
		"- a\n- b with *em*\n  - nested\n- c\n\n1. first\n2. second\n\n3. third starts at 3? no, continues\n\n" +
		"> quoted\n\n```go\nfunc main() { if a < b {} }\n```\n\n---\n\n| col | n |\n| --- | ---: |\n| a | 1 |\n\n" +
		"<script>alert(1)</script> [bad](javascript:alert(1)) <https://auto.link/x>\n\n## Title *one*\n"
	got := notebook.Markdown(src)
	for _, want := range []string{
		`<h1 id="title-one">Title <em>one</em></h1>`,
		`<p>Some <strong>bold</strong>, <em>em</em> and <code>code &lt;b&gt;</code> with snake_case_name and a <a href="https://x.org/a?b=1&amp;c=2">link</a>.` + "\nSecond line.</p>",
		"<ul>\n<li>a\n</li>\n<li>b with <em>em</em>\n<ul>\n<li>nested\n</li>\n</ul>\n</li>\n<li>c\n</li>\n</ul>",
		"<ol>\n<li>",
		"<blockquote>\n<p>quoted</p>\n</blockquote>",
		`<pre><code class="language-go">func main() { if a &lt; b {} }` + "\n</code></pre>",
		"<hr>",
		`<th style="text-align:right">n</th>`,
		`&lt;script&gt;alert(1)&lt;/script&gt;`,
		`<a href="#">bad</a>`,
		`<a href="https://auto.link/x">https://auto.link/x</a>`,
		`<h2 id="title-one-2">`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("markdown lacks %q\n---\n%s", want, got)
		}
	}
	if strings.Contains(got, "<script>") || strings.Contains(got, "snake<em>") {
		t.Fatalf("markdown let markup through or broke a snake_case word:\n%s", got)
	}
}

func TestParseCellsAndDirectives(t *testing.T) {
	src := "# Nb\n\nprose\n\n```sql\n-- title: One\n-- chart: bar x=a y=b series=c\n-- rows: 3\nselect 1 as a, 2 as b, 'x' as c\n```\n\n" +
		"```go\n```sql is not a cell inside another fence\n```\n\n```sql\n-- chrat: line x=a y=b\nselect 1\n```\n\n" +
		"```sql\n-- chart: pie x=a\nselect 1\n```\n\n```sql\n-- note: an ordinary comment\nselect 2\n```\n\n```sql\nselect unterminated\n"
	nb := notebook.Parse("nb.md", []byte(src))
	if nb.Title != "Nb" {
		t.Fatalf("title %q", nb.Title)
	}
	var sqls []notebook.Cell
	for _, c := range nb.Cells {
		if c.Kind == notebook.SQL {
			sqls = append(sqls, c)
		}
	}
	if len(sqls) != 5 {
		t.Fatalf("want 5 SQL cells, got %d: %+v", len(sqls), nb.Cells)
	}
	c := sqls[0]
	if c.Number != 1 || c.Line != 5 || c.Title != "One" || c.Rows != 3 || c.Chart == nil || c.Chart.Type != "bar" || c.Chart.Series != "c" || c.Err != nil {
		t.Fatalf("cell 1: %+v", c)
	}
	if sqls[1].Err == nil || !strings.Contains(sqls[1].Err.Error(), `did you mean "chart"`) {
		t.Fatalf("misspelt directive: %v", sqls[1].Err)
	}
	if sqls[2].Err == nil || !strings.Contains(sqls[2].Err.Error(), `unknown type "pie"`) {
		t.Fatalf("bad chart type: %v", sqls[2].Err)
	}
	if sqls[3].Err != nil {
		t.Fatalf("an ordinary comment is not a directive: %v", sqls[3].Err)
	}
	if !sqls[4].Unclosed || sqls[4].Err == nil {
		t.Fatalf("unclosed fence: %+v", sqls[4])
	}
	for _, bad := range []string{"line y=a", "bar x=a", "histogram x=a y=b", "line x=a y=b bins=0", "scatter x=a y=b colour=red", `line x=a y="b`, "histogram x=a min=2 max=1"} {
		if _, err := notebook.ParseChart(bad); err == nil {
			t.Errorf("ParseChart(%q) accepted", bad)
		}
	}
}

var reDP = regexp.MustCompile(`class="dp"`)

func TestChartsCountOneMarkPerPoint(t *testing.T) {
	res := &query.Result{Columns: []string{"x", "y", "s"}, Types: []string{"BIGINT", "DOUBLE", "VARCHAR"}, Rows: [][]any{
		{int64(1), 0.5, "a"}, {int64(2), 0.7, "a"}, {int64(1), 0.2, "b"}, {int64(3), nil, "b"}, {nil, 1.0, "a"}, {int64(2), 0.9, "b"},
	}}
	cases := []struct {
		spec   string
		points int
		paths  int
	}{
		{"line x=x y=y series=s", 4, 2},
		{"scatter x=x y=y", 4, 0},
		{"bar x=s y=y", 5, 0},
		{"histogram x=y bins=4 min=0 max=1", 4, 0},
		{"histogram x=y series=s bins=3", 6, 0},
	}
	for _, c := range cases {
		ch, err := notebook.ParseChart(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		fig, err := ch.Render(res, "t")
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		if fig.Points != c.points || len(reDP.FindAllString(fig.SVG, -1)) != c.points {
			t.Errorf("%s: %d points, %d marks in the SVG; want %d", c.spec, fig.Points, len(reDP.FindAllString(fig.SVG, -1)), c.points)
		}
		if got := strings.Count(fig.SVG, `class="line"`); got != c.paths {
			t.Errorf("%s: %d paths, want %d", c.spec, got, c.paths)
		}
		if !strings.HasPrefix(fig.SVG, "<svg") || !strings.HasSuffix(fig.SVG, "</svg>") {
			t.Errorf("%s: not one svg element", c.spec)
		}
	}
	// Histogram counts by hand: y in [0,1] in 4 bins: 0.5 -> bin 2, 0.7 -> 2, 0.2 -> 0, 1.0 -> 3 (top edge), 0.9 -> 3.
	ch, _ := notebook.ParseChart("histogram x=y bins=4 min=0 max=1")
	fig, _ := ch.Render(res, "")
	for _, want := range []string{`data-x="0" data-y="1"`, `data-x="0.25" data-y="0"`, `data-x="0.5" data-y="2"`, `data-x="0.75" data-y="2"`} {
		if !strings.Contains(fig.SVG, want) {
			t.Errorf("histogram lacks %s", want)
		}
	}
	ch, _ = notebook.ParseChart("line x=nope y=y")
	if _, err := ch.Render(res, ""); err == nil || !strings.Contains(err.Error(), `column "nope" is not in the result (columns: x, y, s)`) {
		t.Fatalf("missing column: %v", err)
	}
}

func runFile(t *testing.T, l *lake.Lake, m *lake.Manifest, name string, src []byte) *notebook.Report {
	t.Helper()
	ctx := context.Background()
	e, err := query.Open(ctx, l, m)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r, err := notebook.Run(ctx, e, notebook.Parse(name, src))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestBrokenCellIsReportedAndTheRestRenders(t *testing.T) {
	l, m := notebooktest.Lake(t)
	src := "# Broken\n\n```sql\n-- chart: bar x=domain y=n\nselect domain, count(*) as n from tasks group by 1 order by 1\n```\n\n" +
		"```sql\nselect * from no_such_table\n```\n\n" +
		"```sql\n-- chart: line x=domain y=missing\nselect domain, count(*) as n from tasks group by 1 order by 1\n```\n\n" +
		"```sql\ncreate table x (a int)\n```\n\n" +
		"```sql\n-- chart: scatter x=iteration y=ema\nselect iteration, ema from pass_rates order by 1, 2\n```\n"
	r := runFile(t, l, m, "broken.md", []byte(src))
	fails := r.Failures()
	if len(fails) != 3 {
		t.Fatalf("want 3 failures, got %q", fails)
	}
	if !strings.HasPrefix(fails[0], "cell 2 (line 8): ") || !strings.Contains(fails[0], "no_such_table") {
		t.Errorf("failure 1: %s", fails[0])
	}
	if !strings.HasPrefix(fails[1], "cell 3 (line 12): ") || !strings.Contains(fails[1], `column "missing"`) {
		t.Errorf("failure 2: %s", fails[1])
	}
	if !strings.HasPrefix(fails[2], "cell 4 (line 17): ") || !strings.Contains(fails[2], "only read statements") {
		t.Errorf("failure 3: %s", fails[2])
	}
	err := r.Err()
	if err == nil || !strings.Contains(err.Error(), "3 of 5 cells failed") {
		t.Fatalf("Err: %v", err)
	}
	var html bytes.Buffer
	if err := notebook.WriteHTML(&html, r); err != nil {
		t.Fatal(err)
	}
	page := html.String()
	if strings.Count(page, `<figure class="chart"`) != 2 {
		t.Errorf("the two good charts should render")
	}
	if !strings.Contains(page, `id="cell-3" data-cell="3" data-failed="true"`) || !strings.Contains(page, "cell 2 (line 8) failed: ") {
		t.Errorf("failed cells are not marked")
	}
	// cell 3's query ran: its table shows even though its chart failed
	if strings.Count(page, `<table class="result">`) != 3 {
		t.Errorf("want result tables of cells 1, 3 and 5")
	}
}

func TestReportHeaderDeterminismAndIPYNB(t *testing.T) {
	l, m := notebooktest.Lake(t)
	src, err := os.ReadFile("testdata/charts.md")
	if err != nil {
		t.Fatal(err)
	}
	render := func() ([]byte, []byte) {
		r := runFile(t, l, m, "charts.md", src)
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		var h, nb bytes.Buffer
		if err := notebook.WriteHTML(&h, r); err != nil {
			t.Fatal(err)
		}
		if err := notebook.WriteIPYNB(&nb, r); err != nil {
			t.Fatal(err)
		}
		return h.Bytes(), nb.Bytes()
	}
	h1, n1 := render()
	h2, n2 := render()
	if !bytes.Equal(h1, h2) || !bytes.Equal(n1, n2) {
		t.Fatal("the same snapshot rendered to different bytes")
	}
	page := string(h1)
	if !strings.Contains(page, `data-snapshot="`+m.ID+`"`) || !strings.Contains(page, `<code class="snapshot-id">`+m.ID+`</code>`) ||
		!strings.Contains(page, "<td>fixture</td>") {
		t.Fatal("the header does not name the snapshot and its lineage")
	}
	if strings.Contains(page, "committed_at") || strings.Contains(page, "2023-") {
		t.Fatal("wall-clock time leaked into the report")
	}
	if strings.Contains(page, "src=") || strings.Contains(page, "<link") {
		t.Fatal("the report loads external resources")
	}

	var doc struct {
		NBFormat      int            `json:"nbformat"`
		NBFormatMinor int            `json:"nbformat_minor"`
		Metadata      map[string]any `json:"metadata"`
		Cells         []struct {
			CellType       string           `json:"cell_type"`
			ID             string           `json:"id"`
			Source         []string         `json:"source"`
			ExecutionCount *int             `json:"execution_count"`
			Outputs        []map[string]any `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(n1, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.NBFormat != 4 || doc.NBFormatMinor != 5 {
		t.Fatalf("nbformat %d.%d", doc.NBFormat, doc.NBFormatMinor)
	}
	var code, svgs, results int
	ids := map[string]bool{}
	for _, c := range doc.Cells {
		if ids[c.ID] || c.ID == "" {
			t.Fatalf("cell id %q missing or repeated", c.ID)
		}
		ids[c.ID] = true
		if c.CellType != "code" {
			continue
		}
		code++
		if !strings.HasPrefix(strings.Join(c.Source, ""), "-- title:") {
			t.Errorf("code cell source: %q", c.Source)
		}
		for _, o := range c.Outputs {
			data, _ := o["data"].(map[string]any)
			switch o["output_type"] {
			case "display_data":
				if _, ok := data["image/svg+xml"]; ok {
					svgs++
				}
			case "execute_result":
				if data["text/html"] != nil && data["text/plain"] != nil && o["execution_count"] != nil {
					results++
				}
			}
		}
	}
	if code != 4 || svgs != 4 || results != 4 {
		t.Fatalf("ipynb: %d code cells, %d svg outputs, %d results; want 4 each", code, svgs, results)
	}
}

func TestReportInBrowser(t *testing.T) {
	l, m := notebooktest.Lake(t)
	src, err := os.ReadFile("testdata/charts.md")
	if err != nil {
		t.Fatal(err)
	}
	r := runFile(t, l, m, "charts.md", src)
	wantPoints := 0
	for _, o := range r.Cells {
		if o.Figure != nil {
			wantPoints += o.Figure.Points
		}
	}
	rows := notebooktest.FixtureRows()
	pairs := map[string]bool{}
	for _, tr := range rows.Trajectories {
		pairs[tr.Domain+"/"+tr.Outcome] = true
	}
	// bar: one per (domain, outcome); line: 3 iterations x 2 policies;
	// histogram: 5 bins x 3 iterations; scatter: 11 tasks with an EMA x 3.
	if want := len(pairs) + 6 + 15 + 33; wantPoints != want {
		t.Fatalf("charts drew %d points, want %d", wantPoints, want)
	}
	path := filepath.Join(t.TempDir(), "charts.html")
	var h bytes.Buffer
	if err := notebook.WriteHTML(&h, r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, h.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	page := notebooktest.Load(t, path, "notebook-charts.png")
	charts, points, bad, err := page.Counts()
	if err != nil {
		t.Fatal(err)
	}
	if charts != 4 || points != wantPoints || bad != 0 {
		t.Fatalf("browser rendered charts=%d points=%d bad=%d; want 4, %d, 0", charts, points, bad, wantPoints)
	}
	if len(page.Console) != 0 {
		t.Fatalf("console messages: %q", page.Console)
	}

	// The check is not vacuous: a page with a script error is caught.
	broken := filepath.Join(t.TempDir(), "broken.html")
	os.WriteFile(broken, []byte(`<!DOCTYPE html><html><body><script>undefinedFunction();</script></body></html>`), 0o644)
	bp := notebooktest.Load(t, broken, "broken-page.png")
	if len(bp.Console) == 0 || !strings.Contains(strings.Join(bp.Console, "\n"), "Uncaught") {
		t.Fatalf("an uncaught error went unnoticed: %q", bp.Console)
	}
}
