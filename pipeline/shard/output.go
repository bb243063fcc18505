package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// Output is where a stage writes its tables. Unsharded, Finish commits them
// on top of the transaction's parent; sharded, Finish writes the shard's
// fragment and moves no ref. Either way the rows go through the same
// lake.SortedWriter, so a merge of N fragments reproduces the unsharded
// files exactly.
//
// A stage becomes shardable in three steps: filter its keys with
// Spec.Filter (or Owns), write each table through NewTable instead of
// lake.NewAppender/ReplaceTable, and call Finish instead of Txn.Commit.
type Output struct {
	l      *lake.Lake
	tx     *lake.Txn
	spec   Spec
	tables []tableOut
	// Summary is the stage's own report of the shard (counts, outcomes),
	// stored in the fragment for people reading it; never merged.
	Summary any
	// Now is the clock of the fragment's informational written_at.
	Now func() time.Time
}

// NewOutput returns an output on tx (its parent is the stage's input).
func NewOutput(l *lake.Lake, tx *lake.Txn, spec Spec) *Output {
	return &Output{l: l, tx: tx, spec: spec, Now: time.Now}
}

// Spec is the shard this output writes.
func (o *Output) Spec() Spec { return o.spec }

type tableOut interface {
	name() string
	options() TableOptions
	rows() int64
	finish(ctx context.Context, prefix string) ([]lake.File, error)
	discard()
}

// Table is one table of an Output.
type Table[T any] struct {
	l   *lake.Lake
	def *schemas.Table[T]
	opt TableOptions
	w   *lake.SortedWriter[T]
}

// NewTable declares a table of the output and returns its writer.
func NewTable[T any](o *Output, def *schemas.Table[T], opt TableOptions) *Table[T] {
	t := &Table[T]{l: o.l, def: def, opt: opt, w: lake.NewSortedWriter(o.l, def, opt.Chunk, opt.Dedup)}
	o.tables = append(o.tables, t)
	return t
}

// Add adds rows in any order.
func (t *Table[T]) Add(rows ...T) error { return t.w.Add(rows...) }

// Rows returns the number of rows added so far.
func (t *Table[T]) Rows() int64 { return t.w.Added() }

func (t *Table[T]) name() string          { return t.def.Name }
func (t *Table[T]) options() TableOptions { return t.opt }
func (t *Table[T]) rows() int64           { return t.w.Added() }
func (t *Table[T]) discard()              { t.w.Discard() }

func (t *Table[T]) finish(ctx context.Context, prefix string) ([]lake.File, error) {
	if prefix == "" {
		return t.w.Finish(ctx, lake.DataSink(t.l, t.def))
	}
	return t.w.Finish(ctx, lake.ObjectSink(t.l, t.def, prefix))
}

// Result is what Finish did: a commit or a fragment.
type Result struct {
	Manifest *lake.Manifest // the committed snapshot (unsharded)
	Fragment *Fragment      // the fragment written (sharded)
}

// Discard drops what was buffered; use it when the stage fails.
func (o *Output) Discard() {
	for _, t := range o.tables {
		t.discard()
	}
}

// Finish writes the tables and commits them with info (unsharded) or
// writes the shard's fragment (sharded).
func (o *Output) Finish(ctx context.Context, info lake.CommitInfo) (*Result, error) {
	defer o.Discard()
	seen := map[string]bool{}
	for _, t := range o.tables {
		if seen[t.name()] {
			return nil, fmt.Errorf("%s: table %s declared twice", info.Stage, t.name())
		}
		seen[t.name()] = true
	}
	if !o.spec.Sharded() {
		for _, t := range o.tables {
			if !t.options().Replace && t.rows() == 0 {
				continue // appending nothing changes nothing
			}
			files, err := t.finish(ctx, "")
			if err != nil {
				return nil, fmt.Errorf("%s: %w", info.Stage, err)
			}
			if t.options().Replace {
				err = o.tx.Replace(t.name(), files)
			} else {
				err = o.tx.Append(t.name(), files)
			}
			if err != nil {
				return nil, err
			}
		}
		m, err := o.tx.Commit(ctx, info)
		if err != nil {
			return nil, err
		}
		return &Result{Manifest: m}, nil
	}
	if !stageName.MatchString(info.Stage) {
		return nil, fmt.Errorf("stage name %q cannot name a fragment folder", info.Stage)
	}
	spec, err := NewCommitSpec(info)
	if err != nil {
		return nil, err
	}
	hash, err := spec.Hash()
	if err != nil {
		return nil, err
	}
	f := &Fragment{Format: lake.FormatVersion, Kind: fragmentKind, Stage: info.Stage, Input: o.tx.Parent(), ParamsHash: hash,
		Shard: o.spec.Index, Of: o.spec.Count, Commit: spec, Tables: map[string]FragmentTable{},
		WrittenAt: o.Now().UTC().Format(time.RFC3339)}
	prefix := SetDir(f.Stage, f.Input, hash)
	for _, t := range o.tables {
		ft := FragmentTable{TableOptions: t.options(), Files: []lake.File{}}
		if t.rows() > 0 {
			files, err := t.finish(ctx, prefix)
			if err != nil {
				return nil, fmt.Errorf("%s shard %s: %w", info.Stage, o.spec, err)
			}
			ft.Files = files
			for _, fl := range files {
				ft.Rows += fl.Rows
			}
		}
		f.Tables[t.name()] = ft
	}
	if o.Summary != nil {
		if f.Summary, err = json.Marshal(o.Summary); err != nil {
			return nil, fmt.Errorf("%s shard %s: summary: %w", info.Stage, o.spec, err)
		}
	}
	if err := writeFragment(ctx, o.l, f); err != nil {
		return nil, err
	}
	return &Result{Fragment: f}, nil
}
