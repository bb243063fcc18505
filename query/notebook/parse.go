// Package notebook runs analyst notebooks against a lake snapshot and renders
// them as one self-contained HTML page (or a Jupyter notebook): Markdown
// prose, SQL cells with their result tables, and charts drawn as inline SVG.
//
// A notebook is a Markdown file; every ```sql fence is a cell. Leading
// comment lines of a cell are directives (docs/notebooks.md):
//
//	-- title: Success rate per iteration
//	-- chart: line x=iteration y=success_rate series=sampler
//	-- rows: 50
//	-- display: summary
package notebook

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind says whether a cell is prose or SQL.
type Kind int

// Cell kinds.
const (
	Prose Kind = iota
	SQL
)

// DefaultRows is how many result rows a table shows unless `-- rows: N`
// says otherwise.
const DefaultRows = 20

// Cell is one prose block or one SQL cell of a notebook.
type Cell struct {
	Kind Kind
	// Number counts SQL cells from 1 (prose cells have 0): "cell 3" in
	// messages is the third SQL cell.
	Number int
	Line   int    // line of the file where the cell starts (its fence, for SQL)
	Text   string // Markdown for prose; the SQL (directives included) for SQL cells
	Title  string
	Rows   int    // result rows shown
	Chart  *Chart // nil when the cell has no chart
	// Display is "table" (the default) or "summary": the first row shown
	// as a few large figures, for a report's opening lines.
	Display string
	// Unclosed marks a ```sql fence that runs to the end of the file; such a
	// cell is not run, since its body may be prose swallowed by the fence.
	Unclosed bool
	// Err is a problem found while parsing (a bad directive, an unclosed
	// fence). The cell still runs when it can; the problem is reported.
	Err error
}

// Notebook is a parsed notebook file.
type Notebook struct {
	Name  string // file name, for messages and the report header
	Title string // the first level-1 heading, or Name
	Cells []Cell
}

// Label names a cell in messages: "cell 3 (line 42)".
func (c *Cell) Label() string {
	if c.Kind == Prose {
		return fmt.Sprintf("prose (line %d)", c.Line)
	}
	return fmt.Sprintf("cell %d (line %d)", c.Number, c.Line)
}

// Parse splits Markdown into prose and SQL cells. It never fails: problems
// are recorded on the cells they concern, so one broken cell cannot stop a
// notebook from rendering.
func Parse(name string, src []byte) *Notebook {
	nb := &Notebook{Name: name}
	lines := splitLines(string(src))
	var prose []string
	proseLine := 1
	flush := func() {
		if strings.TrimSpace(strings.Join(prose, "\n")) != "" {
			nb.Cells = append(nb.Cells, Cell{Kind: Prose, Line: proseLine, Text: strings.Join(prose, "\n")})
		}
		prose = nil
	}
	inFence := "" // the fence of a non-SQL code block in prose, which may contain ```sql text
	n := 0
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		m := reFence.FindStringSubmatch(line)
		if inFence != "" {
			if t := strings.TrimSpace(line); strings.HasPrefix(t, inFence[:1]) && strings.Trim(t, inFence[:1]) == "" && len(t) >= len(inFence) {
				inFence = ""
			}
			prose = append(prose, line)
			continue
		}
		if m == nil {
			if len(prose) == 0 {
				proseLine = i + 1
			}
			prose = append(prose, line)
			if nb.Title == "" {
				if h := reHeading.FindStringSubmatch(line); h != nil && len(h[1]) == 1 {
					nb.Title = plain(strings.TrimSpace(h[2]))
				}
			}
			continue
		}
		info := strings.Fields(m[3])
		if len(info) == 0 || strings.ToLower(info[0]) != "sql" {
			if len(prose) == 0 {
				proseLine = i + 1
			}
			inFence = m[2]
			prose = append(prose, line)
			continue
		}
		flush()
		n++
		cell := Cell{Kind: SQL, Number: n, Line: i + 1, Rows: DefaultRows}
		fence := m[2]
		var body []string
		closed := false
		for i++; i < len(lines); i++ {
			t := strings.TrimSpace(lines[i])
			if strings.HasPrefix(t, fence[:1]) && strings.Trim(t, fence[:1]) == "" && len(t) >= len(fence) {
				closed = true
				break
			}
			body = append(body, lines[i])
		}
		cell.Text = strings.TrimSpace(strings.Join(body, "\n"))
		if !closed {
			cell.Unclosed = true
			cell.Err = fmt.Errorf("the ```sql fence opened at line %d is never closed", cell.Line)
		}
		if err := cell.directives(body); err != nil && cell.Err == nil {
			cell.Err = err
		}
		nb.Cells = append(nb.Cells, cell)
	}
	flush()
	if nb.Title == "" {
		nb.Title = name
	}
	return nb
}

// directives reads the `-- key: value` comment lines at the top of a cell.
// Other comments are left alone, except that a key one or two letters away
// from a directive is an error: a misspelt directive would otherwise vanish
// silently.
func (c *Cell) directives(body []string) error {
	for k, line := range body {
		t := strings.TrimSpace(line)
		if t == "" {
			continue
		}
		if !strings.HasPrefix(t, "--") {
			return nil
		}
		key, val, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(t, "--")), ":")
		key = strings.ToLower(strings.TrimSpace(key))
		if !ok || strings.ContainsAny(key, " \t") {
			continue // an ordinary comment
		}
		val = strings.TrimSpace(val)
		line := c.Line + 1 + k
		switch key {
		case "title":
			c.Title = val
		case "rows":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return fmt.Errorf("line %d: rows: want a number >= 0, got %q", line, val)
			}
			c.Rows = n
		case "display":
			if val != "table" && val != "summary" {
				return fmt.Errorf("line %d: display: want table or summary, got %q", line, val)
			}
			c.Display = val
		case "chart":
			ch, err := ParseChart(val)
			if err != nil {
				return fmt.Errorf("line %d: %w", line, err)
			}
			c.Chart = ch
		default:
			for _, d := range []string{"title", "chart", "rows", "display"} {
				if editDistance(key, d) <= 2 {
					return fmt.Errorf("line %d: unknown directive %q (did you mean %q?)", line, key, d)
				}
			}
		}
	}
	return nil
}

// editDistance is the Levenshtein distance of two short strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
