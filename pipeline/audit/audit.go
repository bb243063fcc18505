// Package audit is the audit stage: re-runnable checks of a snapshot whose
// results are rows of the `audits` table (kind, metric, group, value, count,
// params, breakdown) and a report rendered from the shipped audit notebook.
//
// Five kinds (docs/audit.md): overlap of a training pool with an evaluation
// pool (ScaleCUA table 8), judge agreement with human labels (ScaleCUA
// table 6), verifier agreement and probe cost (VeriCUA table 1, figure 4),
// executable and acceptance rates of synthesized judges, and sampler and
// data health per iteration. Each audit is a pure function of its inputs;
// Commit replaces the rows of that kind and keeps the others.
package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/cualake/cualake/notebooks"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/query"
	"github.com/cualake/cualake/query/notebook"
	"github.com/cualake/cualake/schemas"
)

// Audit kinds.
const (
	KindOverlap   = "overlap"
	KindJudges    = "judges"
	KindVerifier  = "verifier"
	KindSynthesis = "synthesis"
	KindHealth    = "health"
)

// Kinds lists every audit kind.
var Kinds = []string{KindOverlap, KindJudges, KindVerifier, KindSynthesis, KindHealth}

// GroupAll is the group of a metric over everything.
const GroupAll = "all"

// MaxListed bounds the ids or pairs one breakdown lists; the full count is
// always recorded next to the list.
const MaxListed = 200

// Input is the snapshot an audit reads.
type Input struct {
	Lake     *lake.Lake
	Snapshot *lake.Manifest
}

// Result is what one audit found.
type Result struct {
	Kind   string
	Params map[string]any // recorded in every row and in the commit
	Rows   []schemas.Audit
	// Headline names the rows worth printing in a one-screen summary.
	Headline []schemas.Audit
	// Inputs are snapshot ids read besides the audited one (--against).
	Inputs []string
}

// builder collects rows that share kind and params.
type builder struct {
	kind   string
	params string
	rows   []schemas.Audit
	err    error
}

func newBuilder(kind string, params map[string]any) *builder {
	p := map[string]any{"kind": kind}
	for k, v := range params {
		p[k] = v
	}
	b, err := json.Marshal(p)
	return &builder{kind: kind, params: string(b), err: err}
}

// add records one metric. A nil breakdown is stored as "".
func (b *builder) add(metric, group string, value float64, count int64, breakdown any) {
	if math.IsNaN(value) || math.IsInf(value, 0) {
		if b.err == nil {
			b.err = fmt.Errorf("audit %s: metric %s/%s is %v", b.kind, metric, group, value)
		}
		return
	}
	row := schemas.Audit{Kind: b.kind, Metric: metric, Group: group, Value: value, Count: count, Params: b.params}
	if breakdown != nil {
		j, err := json.Marshal(breakdown)
		if err != nil && b.err == nil {
			b.err = fmt.Errorf("audit %s: metric %s/%s breakdown: %w", b.kind, metric, group, err)
		}
		row.Breakdown = string(j)
	}
	b.rows = append(b.rows, row)
}

// rate adds num/den when den > 0; a rate over nothing is left out rather
// than stored as 0, which would read as a measurement.
func (b *builder) rate(metric, group string, num, den int64, breakdown any) {
	if den <= 0 {
		return
	}
	b.add(metric, group, float64(num)/float64(den), num, breakdown)
}

func (b *builder) result(params map[string]any, headline func(schemas.Audit) bool) (*Result, error) {
	if b.err != nil {
		return nil, b.err
	}
	schemas.Audits.Sort(b.rows)
	for i := 1; i < len(b.rows); i++ {
		if schemas.Audits.KeyOf(&b.rows[i-1]) == schemas.Audits.KeyOf(&b.rows[i]) {
			return nil, fmt.Errorf("audit %s: metric %s reported twice", b.kind, schemas.Audits.KeyOf(&b.rows[i]))
		}
	}
	r := &Result{Kind: b.kind, Params: params, Rows: b.rows}
	for _, row := range b.rows {
		if headline(row) {
			r.Headline = append(r.Headline, row)
		}
	}
	return r, nil
}

// isAllGroup is the default headline: totals ("all", "<x>/all").
func isAllGroup(r schemas.Audit) bool {
	return r.Group == GroupAll || strings.HasSuffix(r.Group, "/"+GroupAll)
}

// listed caps a list for a breakdown.
func listed[T any](xs []T) []T {
	if len(xs) > MaxListed {
		return xs[:MaxListed]
	}
	if xs == nil {
		return []T{}
	}
	return xs
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Commit writes res into the audits table of a new snapshot on top of ref
// ("" = main): rows of other kinds carry over from the parent, rows of
// res.Kind are replaced.
func Commit(ctx context.Context, l *lake.Lake, ref string, res *Result) (*lake.Manifest, error) {
	tx, err := l.Begin(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("audit %s: %w", res.Kind, err)
	}
	old, err := lake.ReadTable(ctx, l, tx.Base(), schemas.Audits)
	if err != nil {
		return nil, fmt.Errorf("audit %s: read the parent's audits: %w", res.Kind, err)
	}
	var rows []schemas.Audit
	for _, r := range old {
		if r.Kind != res.Kind {
			rows = append(rows, r)
		}
	}
	rows = append(rows, res.Rows...)
	if err := lake.ReplaceTable(ctx, tx, schemas.Audits, rows); err != nil {
		return nil, fmt.Errorf("audit %s: %w", res.Kind, err)
	}
	inputs := []string{}
	if p := tx.Parent(); p != "" {
		inputs = append(inputs, p)
	}
	inputs = append(inputs, res.Inputs...)
	params := map[string]any{"kind": res.Kind}
	for k, v := range res.Params {
		params[k] = v
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "audit", Params: params, Inputs: inputs})
	if err != nil {
		return nil, fmt.Errorf("audit %s: %w", res.Kind, err)
	}
	return m, nil
}

// NotebookName is the shipped notebook that renders an audit's report.
func NotebookName(kind string) string { return "audit-" + kind }

// Report renders the audit report of kind from snapshot m (normally the one
// Commit returned) with the shipped notebook audit-<kind>, so anyone can
// re-render it with `cualake notebook run audit-<kind> --at <snapshot>`.
func Report(ctx context.Context, l *lake.Lake, m *lake.Manifest, kind string) (*notebook.Report, error) {
	src, err := notebooks.Source(NotebookName(kind))
	if err != nil {
		return nil, err
	}
	e, err := query.Open(ctx, l, m)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	return notebook.Run(ctx, e, notebook.Parse(NotebookName(kind)+".md", src))
}
