package notebook

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cualake/cualake/query"
)

// SnapshotInfo is one snapshot of the lineage a report was run against,
// read from lake_snapshots. Wall-clock commit times are left out: the same
// snapshot must give the same report bytes.
type SnapshotInfo struct {
	Depth  int
	ID     string
	Parent string
	Stage  string
	Params string
	Seed   int64
	Inputs []string
}

// Output is one cell of a report: the cell and what running it gave.
type Output struct {
	Cell   Cell
	Result *query.Result // nil for prose and for cells that failed to run
	Figure *Figure       // nil without a chart or when it could not be drawn
	Err    error         // why the cell (or its chart) failed; nil when it ran
}

// Report is a notebook run against one snapshot.
type Report struct {
	Title    string
	Notebook string // the notebook's name (file name)
	Snapshot string // snapshot id ("" for an empty lake)
	Lineage  []SnapshotInfo
	Cells    []Output
}

// Failures lists every failed cell as "cell 3 (line 42): why".
func (r *Report) Failures() []string {
	var out []string
	for _, o := range r.Cells {
		if o.Err != nil {
			out = append(out, o.Cell.Label()+": "+o.Err.Error())
		}
	}
	return out
}

// Err summarises the failed cells as one error (nil when all ran).
func (r *Report) Err() error {
	f := r.Failures()
	if len(f) == 0 {
		return nil
	}
	total := 0
	for _, o := range r.Cells {
		if o.Cell.Kind == SQL {
			total++
		}
	}
	return fmt.Errorf("notebook %s: %d of %d cells failed: %s", r.Notebook, len(f), total, strings.Join(f, "; "))
}

// Run executes every SQL cell of nb against e (read-only) and collects the
// results. A cell is one read statement: DDL is refused, so no cell can
// define, replace or drop what later cells read, and every cell sees the
// snapshot's own tables. A failing cell is recorded and the next one runs;
// the returned error is only for a session that cannot read its own
// lineage.
func Run(ctx context.Context, e *query.Engine, nb *Notebook) (*Report, error) {
	r := &Report{Title: nb.Title, Notebook: nb.Name}
	if e.Snapshot != nil {
		r.Snapshot = e.Snapshot.ID
	}
	lin, err := Lineage(ctx, e)
	if err != nil {
		return nil, err
	}
	r.Lineage = lin
	for _, c := range nb.Cells {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r.Cells = append(r.Cells, runCell(ctx, e, c))
	}
	return r, nil
}

func runCell(ctx context.Context, e *query.Engine, c Cell) Output {
	o := Output{Cell: c, Err: c.Err}
	if c.Kind == Prose {
		return o
	}
	if c.Unclosed {
		return o
	}
	if strings.TrimSpace(stripComments(c.Text)) == "" {
		o.Err = errors.Join(o.Err, errors.New("the cell has no SQL"))
		return o
	}
	res, err := e.Query(ctx, c.Text)
	if err != nil {
		o.Err = errors.Join(o.Err, err)
		return o
	}
	o.Result = res
	if c.Chart != nil {
		fig, err := c.Chart.Render(res, chartTitle(c))
		if err != nil {
			o.Err = errors.Join(o.Err, err)
		} else {
			o.Figure = fig
		}
	}
	return o
}

func chartTitle(c Cell) string {
	if c.Title != "" {
		return c.Title
	}
	return fmt.Sprintf("cell %d", c.Number)
}

// stripComments drops `--` comment lines, to tell an empty cell.
func stripComments(sql string) string {
	var keep []string
	for _, l := range strings.Split(sql, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// Lineage reads the snapshot's ancestry from lake_snapshots, newest first.
func Lineage(ctx context.Context, e *query.Engine) ([]SnapshotInfo, error) {
	res, err := e.Query(ctx, `SELECT depth, id, parent, stage, params, seed, inputs FROM lake_snapshots ORDER BY depth`)
	if err != nil {
		return nil, fmt.Errorf("read lineage: %w", err)
	}
	var out []SnapshotInfo
	for _, row := range res.Rows {
		s := SnapshotInfo{ID: str(row[1]), Parent: str(row[2]), Stage: str(row[3]), Params: str(row[4])}
		if d, ok := numeric(row[0]); ok {
			s.Depth = int(d)
		}
		if v, ok := row[5].(int64); ok {
			s.Seed = v
		}
		if xs, ok := row[6].([]any); ok {
			for _, x := range xs {
				s.Inputs = append(s.Inputs, str(x))
			}
		}
		out = append(out, s)
	}
	return out, nil
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return formatValue(v)
}
