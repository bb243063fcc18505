package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// OrderedTable is a table whose rows the stage produces already in the
// table's order, such as segment, which streams trajectories by id. It
// writes the files NewTable would write for the same rows (sorted, cut every
// Chunk rows, the same Parquet writer), but writes each chunk as soon as it
// is full, on a few goroutines, straight to its final place: nothing is
// spilled to local runs or merged again, and memory is a few chunks.
// Rows out of order are an error, never silently reordered.
//
// A shard's files go into its fragment folder, which depends on the commit
// the run will record, so the table needs that CommitInfo up front; Finish
// refuses another one.
type OrderedTable[T any] struct {
	def    *schemas.Table[T]
	opt    TableOptions
	sink   lake.Sink[T]
	prefix string // "" unsharded
	ctx    context.Context
	cancel context.CancelFunc

	// Release, when set, is called with each chunk's rows once they are
	// written (the Parquet writer copied them), e.g. to recycle buffers.
	// It runs on the writing goroutine.
	Release func(rows []T)

	buf     []T
	prev    T
	hasPrev bool
	added   int64

	sem   chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	files []lake.File // by chunk
	err   error       // first write error
}

// NewOrderedTable declares a table of the output whose rows will be added
// in strictly increasing key order (equal keys: kept once with opt.Dedup,
// else an error). Chunks are written on up to parallel goroutines while the
// stage runs; info must be what Finish will commit. opt.Chunk must be set
// (1 to lake.MaxFileRows): the merge cuts files with it too.
func NewOrderedTable[T any](ctx context.Context, o *Output, def *schemas.Table[T], opt TableOptions, info lake.CommitInfo, parallel int) (*OrderedTable[T], error) {
	if opt.Chunk < 1 || opt.Chunk > lake.MaxFileRows {
		return nil, fmt.Errorf("%s: ordered table %s: chunk %d, want 1 to %d rows", info.Stage, def.Name, opt.Chunk, lake.MaxFileRows)
	}
	if opt.Shared {
		return nil, fmt.Errorf("%s: ordered table %s cannot be shared", info.Stage, def.Name)
	}
	prefix, err := o.prefixFor(info)
	if err != nil {
		return nil, err
	}
	t := &OrderedTable[T]{def: def, opt: opt, prefix: prefix, sem: make(chan struct{}, max(parallel, 1))}
	t.ctx, t.cancel = context.WithCancel(ctx)
	if prefix == "" {
		t.sink = lake.DataSink(o.l, def)
	} else {
		t.sink = lake.ObjectSink(o.l, def, prefix)
	}
	o.tables = append(o.tables, t)
	return t, nil
}

// prefixFor is where a shard of the run info describes keeps its files
// ("" unsharded: the lake's data files).
func (o *Output) prefixFor(info lake.CommitInfo) (string, error) {
	if !o.spec.Sharded() {
		return "", nil
	}
	if !stageName.MatchString(info.Stage) {
		return "", fmt.Errorf("stage name %q cannot name a fragment folder", info.Stage)
	}
	spec, err := NewCommitSpec(info)
	if err != nil {
		return "", err
	}
	hash, err := spec.Hash()
	if err != nil {
		return "", err
	}
	return SetDir(info.Stage, o.tx.Parent(), hash), nil
}

// Add adds rows, which must continue the table's order.
func (t *OrderedTable[T]) Add(rows ...T) error {
	for i := range rows {
		r := &rows[i]
		if t.hasPrev && !t.def.Less(&t.prev, r) {
			if t.def.Less(r, &t.prev) {
				return fmt.Errorf("%s: row %q added after %q: an ordered table takes rows in key order", t.def.Name, t.def.KeyOf(r), t.def.KeyOf(&t.prev))
			}
			if t.opt.Dedup {
				continue // an equal copy of the previous row
			}
			return fmt.Errorf("%s: duplicate key %q", t.def.Name, t.def.KeyOf(r))
		}
		t.prev, t.hasPrev = *r, true
		t.buf = append(t.buf, *r)
		t.added++
		if len(t.buf) == t.opt.Chunk {
			if err := t.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// Rows returns the number of rows added so far (after de-duplication).
func (t *OrderedTable[T]) Rows() int64 { return t.added }

// flush hands the buffered chunk to a writer goroutine.
func (t *OrderedTable[T]) flush() error {
	t.mu.Lock()
	err := t.err
	k := len(t.files)
	t.files = append(t.files, lake.File{})
	t.mu.Unlock()
	if err != nil {
		return err
	}
	rows := t.buf
	t.buf = make([]T, 0, t.opt.Chunk)
	select {
	case t.sem <- struct{}{}:
	case <-t.ctx.Done():
		return t.ctx.Err()
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		defer func() { <-t.sem }()
		f, err := t.sink(t.ctx, rows)
		if t.Release != nil {
			t.Release(rows)
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		t.files[k] = f
		if err != nil && t.err == nil {
			t.err = err
			t.cancel()
		}
	}()
	return nil
}

func (t *OrderedTable[T]) name() string          { return t.def.Name }
func (t *OrderedTable[T]) options() TableOptions { return t.opt }
func (t *OrderedTable[T]) rows() int64           { return t.added }

// finish writes the last chunk (one empty file when nothing was added, as
// lake.SortedWriter does) and returns the files in order.
func (t *OrderedTable[T]) finish(ctx context.Context, prefix string) ([]lake.File, error) {
	if prefix != t.prefix {
		t.discard()
		return nil, errors.New("ordered table " + t.def.Name + ": Finish got other commit info than NewOrderedTable")
	}
	var err error
	if len(t.buf) > 0 || t.added == 0 {
		err = t.flush()
	}
	t.wg.Wait()
	t.cancel()
	if err == nil {
		err = t.err
	}
	if err != nil {
		return nil, err
	}
	return t.files, nil
}

// discard stops writing and waits for the chunks in flight; what was
// written stays (content-addressed: data files go to gc, fragment objects
// with their folder).
func (t *OrderedTable[T]) discard() {
	t.cancel()
	t.wg.Wait()
	t.buf = nil
}
