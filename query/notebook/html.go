package notebook

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/cualake/cualake/query"
)

// maxCellText bounds how much of one value a table shows.
const maxCellText = 240

// The page carries its own style and one small script; it loads nothing.
// The script counts the chart marks the browser actually laid out and
// records the result on <body data-rendered="...">, so a headless browser
// (and a reader's devtools) can confirm that every chart rendered.
const pageStyle = `
:root { color-scheme: light; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #1d1d1f; margin: 0; background: #f6f7f9; }
main, header.report-head { max-width: 1000px; margin: 0 auto; padding: 0 24px; }
header.report-head { padding-top: 20px; padding-bottom: 8px; border-bottom: 1px solid #dde1e6; background: #fff; max-width: none; }
header.report-head > * { max-width: 952px; margin-left: auto; margin-right: auto; }
.kicker { text-transform: uppercase; letter-spacing: .08em; font-size: 12px; color: #5b6470; margin: 0 auto 4px; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 8px auto; font-size: 14px; }
dl.meta dt { color: #5b6470; } dl.meta dd { margin: 0; overflow-wrap: anywhere; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px; }
pre { background: #f0f2f5; padding: 10px 12px; border-radius: 6px; overflow-x: auto; }
section.prose { margin: 18px 0; }
section.cell { background: #fff; border: 1px solid #dde1e6; border-radius: 8px; padding: 12px 16px; margin: 16px 0; }
.cell-head { display: flex; gap: 10px; align-items: baseline; font-size: 13px; color: #5b6470; }
.cell-head .n { font-weight: 600; color: #1d1d1f; }
.cell-head .t { font-size: 15px; font-weight: 600; color: #1d1d1f; }
details.sql summary { cursor: pointer; font-size: 13px; color: #5b6470; }
.error { background: #fdecec; border: 1px solid #f3b7b7; color: #8a1c1c; padding: 8px 12px; border-radius: 6px; white-space: pre-wrap; font-size: 14px; }
.failures { background: #fdecec; border: 1px solid #f3b7b7; padding: 8px 12px; border-radius: 6px; }
figure.chart { margin: 12px 0; overflow-x: auto; }
figure.chart figcaption { font-size: 12px; color: #5b6470; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border-bottom: 1px solid #e6e8eb; padding: 3px 10px; text-align: left; vertical-align: top; }
th { background: #f0f2f5; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.null { color: #9aa1a9; font-style: italic; }
.tablewrap { overflow-x: auto; max-width: 100%; }
p.count { font-size: 12px; color: #5b6470; margin: 2px 0 0; }
dl.summary { display: flex; flex-wrap: wrap; gap: 10px 28px; margin: 8px 0; }
dl.summary .figure dt { font-size: 12px; color: #5b6470; }
dl.summary .figure dd { margin: 0; font-size: 22px; font-weight: 600; font-variant-numeric: tabular-nums; overflow-wrap: anywhere; }
dl.summary .figure dd.long { font: 13px/1.6 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
details.lineage { margin: 24px 0; }
footer { max-width: 952px; margin: 24px auto; font-size: 12px; color: #5b6470; }
`

const pageScript = `
(function () {
  var figs = document.querySelectorAll("figure.chart");
  var ok = 0, points = 0, bad = 0;
  for (var i = 0; i < figs.length; i++) {
    var f = figs[i], svg = f.querySelector("svg");
    var n = svg ? svg.querySelectorAll(".dp").length : 0;
    var box = svg && svg.getBBox ? svg.getBBox() : { width: 0, height: 0 };
    f.setAttribute("data-rendered-points", String(n));
    if (box.width > 0 && box.height > 0 && n === parseInt(f.getAttribute("data-points"), 10)) { ok++; } else { bad++; }
    points += n;
  }
  document.body.setAttribute("data-rendered", "charts=" + ok + " points=" + points + " bad=" + bad);
})();
`

// HTMLOptions change how a report renders.
type HTMLOptions struct {
	// IDLink, when set, gives the link of a table cell by its column and
	// value ("" for none): trajectory, group and task ids link to their
	// viewer pages (query/view.IDLink).
	IDLink func(column, value string) string
}

// WriteHTML renders r as one self-contained HTML page. The output depends
// only on the report: the same snapshot and notebook give the same bytes.
func WriteHTML(w io.Writer, r *Report) error { return WriteHTMLWith(w, r, HTMLOptions{}) }

// WriteHTMLWith is WriteHTML with options. The page opens with the header
// and the cells (a report's results first); the lineage comes last,
// collapsed.
func WriteHTMLWith(w io.Writer, r *Report, o HTMLOptions) error {
	var b strings.Builder
	md := newMarkdown()
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	b.WriteString("<meta name=\"generator\" content=\"cualake notebook\">\n")
	fmt.Fprintf(&b, "<title>%s</title>\n<style>%s</style>\n</head>\n", esc(r.Title), pageStyle)
	fmt.Fprintf(&b, "<body data-snapshot=\"%s\" data-notebook=\"%s\">\n", esc(r.Snapshot), esc(r.Notebook))
	writeHeader(&b, r)
	b.WriteString("<main>\n")
	for _, c := range r.Cells {
		if c.Cell.Kind == Prose {
			b.WriteString("<section class=\"prose\">\n")
			b.WriteString(md.render(c.Cell.Text))
			b.WriteString("</section>\n")
			continue
		}
		writeCell(&b, c, o)
	}
	writeLineage(&b, r)
	b.WriteString("</main>\n")
	fmt.Fprintf(&b, "<footer>Rendered by cualake from snapshot <code>%s</code>. Re-run: <code>cualake notebook run %s --at %s</code></footer>\n",
		esc(orNone(r.Snapshot)), esc(r.Notebook), esc(shortID(r.Snapshot)))
	fmt.Fprintf(&b, "<script>%s</script>\n</body>\n</html>\n", pageScript)
	_, err := io.WriteString(w, b.String())
	return err
}

func orNone(s string) string {
	if s == "" {
		return "(none: the lake is empty)"
	}
	return s
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	if id == "" {
		return "main"
	}
	return id
}

func writeHeader(b *strings.Builder, r *Report) {
	b.WriteString("<header class=\"report-head\">\n<p class=\"kicker\">cualake report</p>\n<dl class=\"meta\">\n")
	fmt.Fprintf(b, "<dt>notebook</dt><dd><code>%s</code> · %s</dd>\n", esc(r.Notebook), esc(r.Title))
	fmt.Fprintf(b, "<dt>snapshot</dt><dd><code class=\"snapshot-id\">%s</code></dd>\n", esc(orNone(r.Snapshot)))
	sqlCells := 0
	for _, o := range r.Cells {
		if o.Cell.Kind == SQL {
			sqlCells++
		}
	}
	fails := r.Failures()
	fmt.Fprintf(b, "<dt>cells</dt><dd>%d SQL cell(s), %d failed</dd>\n</dl>\n", sqlCells, len(fails))
	if len(fails) > 0 {
		b.WriteString("<div class=\"failures\" role=\"alert\"><strong>Failed cells</strong><ul>\n")
		for _, o := range r.Cells {
			if o.Err != nil {
				fmt.Fprintf(b, "<li><a href=\"#cell-%d\">%s</a>: %s</li>\n", o.Cell.Number, esc(o.Cell.Label()), esc(o.Err.Error()))
			}
		}
		b.WriteString("</ul></div>\n")
	}
	b.WriteString("</header>\n")
}

// writeLineage is the report's last section, collapsed: where every input
// came from, for whoever wants to check.
func writeLineage(b *strings.Builder, r *Report) {
	fmt.Fprintf(b, "<details class=\"lineage\"><summary>Lineage: %d snapshot(s), newest first</summary>\n", len(r.Lineage))
	b.WriteString("<div class=\"tablewrap\"><table class=\"lineage\"><thead><tr><th>depth</th><th>snapshot</th><th>stage</th><th>params</th><th>seed</th><th>inputs</th></tr></thead><tbody>\n")
	for _, s := range r.Lineage {
		var inputs []string
		for _, in := range s.Inputs {
			inputs = append(inputs, shortID(in))
		}
		fmt.Fprintf(b, "<tr><td class=\"num\">%d</td><td><code title=\"%s\">%s</code></td><td>%s</td><td><code>%s</code></td><td class=\"num\">%d</td><td><code>%s</code></td></tr>\n",
			s.Depth, esc(s.ID), esc(shortID(s.ID)), esc(s.Stage), esc(clip(s.Params)), s.Seed, esc(strings.Join(inputs, ", ")))
	}
	b.WriteString("</tbody></table></div></details>\n")
}

func clip(s string) string {
	if utf8.RuneCountInString(s) <= maxCellText {
		return s
	}
	return string([]rune(s)[:maxCellText-1]) + "…"
}

func writeCell(b *strings.Builder, o Output, opt HTMLOptions) {
	c := o.Cell
	fmt.Fprintf(b, "<section class=\"cell\" id=\"cell-%d\" data-cell=\"%d\"", c.Number, c.Number)
	if o.Err != nil {
		b.WriteString(" data-failed=\"true\"")
	}
	b.WriteString(">\n<div class=\"cell-head\">")
	fmt.Fprintf(b, "<span class=\"n\">[%d]</span>", c.Number)
	if c.Title != "" {
		fmt.Fprintf(b, "<span class=\"t\">%s</span>", esc(c.Title))
	}
	fmt.Fprintf(b, "<span class=\"line\">line %d</span></div>\n", c.Line)
	fmt.Fprintf(b, "<details class=\"sql\"><summary>SQL</summary><pre><code class=\"language-sql\">%s</code></pre></details>\n", esc(c.Text))
	if o.Err != nil {
		fmt.Fprintf(b, "<div class=\"error\" role=\"alert\">%s failed: %s</div>\n", esc(c.Label()), esc(o.Err.Error()))
	}
	if o.Figure != nil {
		fmt.Fprintf(b, "<figure class=\"chart\" id=\"chart-%d\" data-chart=\"%s\" data-points=\"%d\">\n%s\n", c.Number, esc(c.Chart.Type), o.Figure.Points, o.Figure.SVG)
		if o.Figure.Note != "" {
			fmt.Fprintf(b, "<figcaption>%s</figcaption>\n", esc(o.Figure.Note))
		}
		b.WriteString("</figure>\n")
	}
	if o.Result != nil && c.Display == "summary" && len(o.Result.Rows) > 0 {
		b.WriteString(summaryFigures(o.Result))
	} else if o.Result != nil {
		b.WriteString(resultTable(o.Result, c.Rows, opt.IDLink))
	}
	b.WriteString("</section>\n")
}

// numericType reports whether a DuckDB column type holds numbers.
func numericType(t string) bool {
	switch t {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE":
		return true
	}
	return strings.HasPrefix(t, "DECIMAL")
}

// ResultHTML renders the first rows of res as an HTML table (class
// "result") with a count line, the way reports show a cell's result; link,
// when set, makes id cells links. For pages that embed results (cualake ui).
func ResultHTML(res *query.Result, rows int, link func(column, value string) string) string {
	return resultTable(res, rows, link)
}

// summaryFigures shows the first row of res as large figures with the
// column names as their labels.
func summaryFigures(res *query.Result) string {
	var b strings.Builder
	b.WriteString("<dl class=\"summary\">")
	for i, col := range res.Columns {
		v := clip(formatValue(res.Rows[0][i]))
		class := ""
		if utf8.RuneCountInString(v) > 24 { // ids and long text: small, not a headline figure
			class = " class=\"long\""
		}
		fmt.Fprintf(&b, "<div class=\"figure\" data-column=\"%s\"><dt>%s</dt><dd%s>%s</dd></div>", esc(col), esc(strings.ReplaceAll(col, "_", " ")), class, esc(v))
	}
	b.WriteString("</dl>\n")
	return b.String()
}

// resultTable renders the first rows of res with a count line; link, when
// set, makes id cells links.
func resultTable(res *query.Result, rows int, link func(column, value string) string) string {
	var b strings.Builder
	b.WriteString("<div class=\"tablewrap\"><table class=\"result\"><thead><tr>")
	num := make([]bool, len(res.Columns))
	for i, col := range res.Columns {
		typ := ""
		if i < len(res.Types) {
			typ = res.Types[i]
		}
		num[i] = numericType(typ)
		class := ""
		if num[i] {
			class = " class=\"num\""
		}
		fmt.Fprintf(&b, "<th%s title=\"%s\">%s</th>", class, esc(typ), esc(col))
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	shown := min(rows, len(res.Rows))
	for _, row := range res.Rows[:shown] {
		b.WriteString("<tr>")
		for i, v := range row {
			switch {
			case v == nil:
				b.WriteString("<td class=\"null\">NULL</td>")
			case num[i]:
				fmt.Fprintf(&b, "<td class=\"num\">%s</td>", esc(formatValue(v)))
			default:
				text := formatValue(v)
				if href := linkOf(link, res.Columns[i], text); href != "" {
					fmt.Fprintf(&b, "<td><a class=\"ref\" href=\"%s\">%s</a></td>", esc(href), esc(clip(text)))
					continue
				}
				fmt.Fprintf(&b, "<td>%s</td>", esc(clip(text)))
			}
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table></div>\n")
	b.WriteString("<p class=\"count\">" + countLine(shown, len(res.Rows)) + "</p>\n")
	return b.String()
}

func linkOf(link func(column, value string) string, column, value string) string {
	if link == nil {
		return ""
	}
	return link(column, value)
}

func countLine(shown, total int) string {
	if shown == total {
		if total == 1 {
			return "1 row"
		}
		return fmt.Sprintf("%d rows", total)
	}
	return fmt.Sprintf("first %d of %d rows", shown, total)
}
