package notebook

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/cualake/cualake/query"
)

// The Jupyter form of a report (nbformat 4.5): prose as markdown cells, SQL
// as code cells whose outputs are embedded, so the notebook opens with
// results in any Jupyter-compatible viewer without re-running anything.

type nbDoc struct {
	Cells         []nbCell       `json:"cells"`
	Metadata      map[string]any `json:"metadata"`
	NBFormat      int            `json:"nbformat"`
	NBFormatMinor int            `json:"nbformat_minor"`
}

type nbCell struct {
	CellType       string     `json:"cell_type"`
	ExecutionCount *int       `json:"execution_count,omitempty"`
	ID             string     `json:"id"`
	Metadata       struct{}   `json:"metadata"`
	Outputs        []nbOutput `json:"outputs,omitempty"`
	Source         []string   `json:"source"`
	code           bool
}

// MarshalJSON writes code cells with execution_count (null allowed) and
// outputs (possibly empty), which nbformat requires, and markdown cells
// without them, which it forbids.
func (c nbCell) MarshalJSON() ([]byte, error) {
	if !c.code {
		return json.Marshal(struct {
			CellType string   `json:"cell_type"`
			ID       string   `json:"id"`
			Metadata struct{} `json:"metadata"`
			Source   []string `json:"source"`
		}{c.CellType, c.ID, c.Metadata, c.Source})
	}
	outs := c.Outputs
	if outs == nil {
		outs = []nbOutput{}
	}
	return json.Marshal(struct {
		CellType       string     `json:"cell_type"`
		ExecutionCount *int       `json:"execution_count"`
		ID             string     `json:"id"`
		Metadata       struct{}   `json:"metadata"`
		Outputs        []nbOutput `json:"outputs"`
		Source         []string   `json:"source"`
	}{c.CellType, c.ExecutionCount, c.ID, c.Metadata, outs, c.Source})
}

type nbOutput struct {
	OutputType     string              `json:"output_type"`
	ExecutionCount *int                `json:"execution_count,omitempty"`
	Data           map[string][]string `json:"data,omitempty"`
	Metadata       *struct{}           `json:"metadata,omitempty"`
	Ename          string              `json:"ename,omitempty"`
	Evalue         string              `json:"evalue,omitempty"`
	Traceback      []string            `json:"traceback,omitempty"`
}

// lines splits text the way nbformat stores multi-line strings: a list of
// lines, each but the last ending in "\n".
func lines(s string) []string {
	if s == "" {
		return []string{}
	}
	parts := strings.SplitAfter(s, "\n")
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// WriteIPYNB writes r as a Jupyter notebook (nbformat 4.5).
func WriteIPYNB(w io.Writer, r *Report) error {
	doc := nbDoc{
		NBFormat: 4, NBFormatMinor: 5,
		Metadata: map[string]any{
			"kernelspec":    map[string]string{"name": "duckdb", "display_name": "DuckDB SQL (cualake)", "language": "sql"},
			"language_info": map[string]string{"name": "sql"},
			"cualake":       map[string]any{"notebook": r.Notebook, "snapshot": r.Snapshot, "lineage": r.Lineage},
		},
	}
	var head strings.Builder
	fmt.Fprintf(&head, "**cualake report** · notebook `%s` · snapshot `%s`\n\n", r.Notebook, orNone(r.Snapshot))
	head.WriteString("| depth | snapshot | stage | seed |\n| ---: | --- | --- | ---: |\n")
	for _, s := range r.Lineage {
		fmt.Fprintf(&head, "| %d | `%s` | %s | %d |\n", s.Depth, shortID(s.ID), s.Stage, s.Seed)
	}
	if f := r.Failures(); len(f) > 0 {
		head.WriteString("\n**Failed cells:**\n\n")
		for _, x := range f {
			head.WriteString("- " + x + "\n")
		}
	}
	doc.Cells = append(doc.Cells, nbCell{CellType: "markdown", ID: "header", Source: lines(head.String())})
	for k, o := range r.Cells {
		id := fmt.Sprintf("cell-%d", k+1)
		if o.Cell.Kind == Prose {
			doc.Cells = append(doc.Cells, nbCell{CellType: "markdown", ID: id, Source: lines(o.Cell.Text)})
			continue
		}
		n := o.Cell.Number
		cell := nbCell{CellType: "code", ID: id, Source: lines(o.Cell.Text), code: true, ExecutionCount: &n}
		if o.Err != nil {
			msg := o.Cell.Label() + ": " + o.Err.Error()
			cell.Outputs = append(cell.Outputs, nbOutput{OutputType: "error", Ename: "CellError", Evalue: msg, Traceback: []string{msg}})
		}
		if o.Figure != nil {
			cell.Outputs = append(cell.Outputs, nbOutput{OutputType: "display_data", Metadata: &struct{}{},
				Data: map[string][]string{"image/svg+xml": lines(o.Figure.SVG)}})
		}
		if o.Result != nil {
			var plain strings.Builder
			shown := &query.Result{Columns: o.Result.Columns, Types: o.Result.Types, Rows: o.Result.Rows[:min(o.Cell.Rows, len(o.Result.Rows))]}
			if err := query.Write(&plain, "table", shown); err != nil {
				return fmt.Errorf("cell %d: %w", n, err)
			}
			if len(shown.Rows) < len(o.Result.Rows) {
				plain.WriteString(countLine(len(shown.Rows), len(o.Result.Rows)) + "\n")
			}
			cell.Outputs = append(cell.Outputs, nbOutput{OutputType: "execute_result", ExecutionCount: &n, Metadata: &struct{}{},
				Data: map[string][]string{"text/html": lines(resultTable(o.Result, o.Cell.Rows, nil)), "text/plain": lines(plain.String())}})
		}
		doc.Cells = append(doc.Cells, cell)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write ipynb: %w", err)
	}
	return nil
}
