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
	"github.com/cualake/cualake/pipeline/shard"
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

// Part is an audit of some domains only: one shard's share of an audit
// that splits by domain (overlap, judges). Its rows are the per-domain
// groups of its domains and the rows that do not depend on the split; the
// totals over all domains ("all") come from the per-domain rows of every
// part (Complete), so the unsharded audit computes them the same way.
type Part struct {
	Kind   string
	Params map[string]any
	// RowParams is the params column of every row.
	RowParams string
	Rows      []schemas.Audit
	// Inputs are snapshot ids read besides the audited one.
	Inputs []string
}

func (b *builder) part(params map[string]any) (*Part, error) {
	if b.err != nil {
		return nil, b.err
	}
	return &Part{Kind: b.kind, Params: params, RowParams: b.params, Rows: b.rows}, nil
}

// Complete turns a part holding every domain into the audit's result.
func (p *Part) Complete() (*Result, error) {
	res, err := Complete(p.Kind, p.RowParams, p.Rows)
	if err != nil {
		return nil, err
	}
	res.Params, res.Inputs = p.Params, p.Inputs
	return res, nil
}

// ShardableKinds are the audits that split by domain, with Complete.
var ShardableKinds = map[string]func(b *builder, domains map[string]map[string]schemas.Audit) error{
	KindOverlap: overlapTotals,
	KindJudges:  judgesTotals,
}

// Complete is the audit of kind from the rows of its parts (one or every
// shard's): per-domain rows as they are, the rows every part computes alike
// once (they must agree), and the totals over all domains. The result's
// Params are left to the caller.
func Complete(kind, rowParams string, rows []schemas.Audit) (*Result, error) {
	totals, ok := ShardableKinds[kind]
	if !ok {
		return nil, fmt.Errorf("audit %s does not split by domain", kind)
	}
	b := &builder{kind: kind, params: rowParams}
	domains := map[string]map[string]schemas.Audit{}
	shared := map[string]schemas.Audit{}
	for _, r := range rows {
		if r.Kind != kind || r.Params != rowParams {
			return nil, fmt.Errorf("audit %s: a part holds a row of another audit (%s/%s/%s)", kind, r.Kind, r.Metric, r.Group)
		}
		key := schemas.Audits.KeyOf(&r)
		if r.Group == GroupAll {
			if prev, ok := shared[key]; ok {
				if prev != r {
					return nil, fmt.Errorf("audit %s: parts disagree about %s (did they read the same input?)", kind, key)
				}
				continue
			}
			shared[key] = r
			b.rows = append(b.rows, r)
			continue
		}
		if domains[r.Group] == nil {
			domains[r.Group] = map[string]schemas.Audit{}
		}
		if _, dup := domains[r.Group][r.Metric]; dup {
			return nil, fmt.Errorf("audit %s: two parts audited domain %q (%s): fragments of a bad --shard?", kind, r.Group, key)
		}
		domains[r.Group][r.Metric] = r
		b.rows = append(b.rows, r)
	}
	if err := totals(b, domains); err != nil {
		return nil, err
	}
	return b.result(nil, func(r schemas.Audit) bool { return r.Group == GroupAll })
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
	// Through shard.Output, as the merge of a sharded audit writes.
	out := shard.NewOutput(l, tx, shard.Spec{})
	defer out.Discard()
	if err := AddRows(ctx, l, tx.Base(), out, res.Kind, res.Rows); err != nil {
		return nil, err
	}
	r, err := out.Finish(ctx, CommitInfo(tx.Parent(), res.Kind, res.Params, res.Inputs))
	if err != nil {
		return nil, fmt.Errorf("audit %s: %w", res.Kind, err)
	}
	return r.Manifest, nil
}

// CommitInfo is what the snapshot of an audit records.
func CommitInfo(parent, kind string, resParams map[string]any, resInputs []string) lake.CommitInfo {
	inputs := []string{}
	if parent != "" {
		inputs = append(inputs, parent)
	}
	inputs = append(inputs, resInputs...)
	params := map[string]any{"kind": kind}
	for k, v := range resParams {
		params[k] = v
	}
	return lake.CommitInfo{Stage: "audit", Params: params, Inputs: inputs}
}

// AddRows writes the audits table of the snapshot after base to out: base's
// rows of other kinds and rows.
func AddRows(ctx context.Context, l *lake.Lake, base *lake.Manifest, out *shard.Output, kind string, rows []schemas.Audit) error {
	old, err := lake.ReadTable(ctx, l, base, schemas.Audits)
	if err != nil {
		return fmt.Errorf("audit %s: read the parent's audits: %w", kind, err)
	}
	t := shard.NewTable(out, schemas.Audits, shard.TableOptions{Chunk: lake.MaxFileRows, Replace: true})
	for _, r := range old {
		if r.Kind != kind {
			if err := t.Add(r); err != nil {
				return err
			}
		}
	}
	return t.Add(rows...)
}

// AddPart writes one shard's part of an audit to its fragment (the merge,
// MergeShards, completes it).
func AddPart(out *shard.Output, part *Part) error {
	t := shard.NewTable(out, schemas.Audits, shard.TableOptions{Chunk: lake.MaxFileRows})
	out.Summary = partSummary{Kind: part.Kind, RowParams: part.RowParams, Rows: len(part.Rows)}
	return t.Add(part.Rows...)
}

type partSummary struct {
	Kind      string `json:"kind"`
	RowParams string `json:"row_params"`
	Rows      int    `json:"rows"`
}

func init() {
	// A sharded audit merges by completing its parts (totals over domains).
	shard.RegisterStageMerge("audit", shard.StageMerge{Finish: MergeShards})
}

// MergeShards is the audit stage's shard.StageMerge: it completes the
// shards' parts (totals over all domains) and writes the audits table as
// the unsharded audit does.
func MergeShards(ctx context.Context, in *shard.MergeInput) (bool, error) {
	var first partSummary
	for i, f := range in.Fragments {
		var s partSummary
		if err := json.Unmarshal(f.Summary, &s); err != nil || s.Kind == "" {
			return false, fmt.Errorf("%s: %w: no audit part in its summary (%v)", f.Key(), lake.ErrCorrupt, err)
		}
		if i == 0 {
			first = s
		} else if s.Kind != first.Kind || s.RowParams != first.RowParams {
			return false, fmt.Errorf("shards 0 and %d ran different audits", i)
		}
	}
	rows, err := shard.ReadFragmentRows(ctx, in.Lake, in.Fragments, schemas.Audits)
	if err != nil {
		return false, err
	}
	res, err := Complete(first.Kind, first.RowParams, rows)
	if err != nil {
		return false, err
	}
	return true, AddRows(ctx, in.Lake, in.Base, in.Out, first.Kind, res.Rows)
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
