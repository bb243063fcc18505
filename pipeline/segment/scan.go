package segment

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// merged streams a table's rows in key order across its files. Each file is
// sorted (the lake writes rows in key order) but appended files may
// interleave, so the files are merged: one pull cursor per file, a heap on
// their heads. A file is opened only once the merge reaches its first key,
// so files with disjoint key ranges (say, one per rollout iteration) are
// read one after the other; memory is one open Parquet reader and one chunk
// of rows per file whose key range overlaps the current key.
type merged[T any] struct {
	ctx     context.Context
	l       *lake.Lake
	def     *schemas.Table[T]
	chunk   int
	less    func(a, b *T) bool
	cursors []*cursor[T]
	pending []*cursor[T] // not opened yet, by first key
	heap    []*cursor[T]
	err     error
}

type cursor[T any] struct {
	file  string
	one   lake.Manifest // the snapshot restricted to this file
	first T
	next  func() (T, bool)
	stop  func()
	err   error
	head  T
	has   bool
}

var errStopScan = errors.New("scan stopped")

// mergeTable opens a merged stream over def's files in m; chunk bounds the
// rows read at a time per file. It reads the first row of every file to
// order them.
func mergeTable[T any](ctx context.Context, l *lake.Lake, m *lake.Manifest, def *schemas.Table[T], chunk int, less func(a, b *T) bool) *merged[T] {
	mg := &merged[T]{ctx: ctx, l: l, def: def, chunk: chunk, less: less}
	tf, ok := m.Tables[def.Name]
	if !ok {
		return mg
	}
	for _, f := range tf.Files {
		c := &cursor[T]{file: f.Path, one: *m}
		c.one.Tables = map[string]lake.TableFiles{def.Name: {SchemaVersion: tf.SchemaVersion, Files: []lake.File{f}, Rows: f.Rows}}
		mg.cursors = append(mg.cursors, c)
		mg.open(c)
		c.first, c.has = c.next()
		c.stop()
		if c.err != nil {
			mg.err = c.err
			return mg
		}
		if c.has {
			mg.pending = append(mg.pending, c)
		}
		c.has = false
	}
	slices.SortStableFunc(mg.pending, func(a, b *cursor[T]) int {
		switch {
		case less(&a.first, &b.first):
			return -1
		case less(&b.first, &a.first):
			return 1
		}
		return 0
	})
	return mg
}

// open starts (or restarts) reading c's file from its first row.
func (mg *merged[T]) open(c *cursor[T]) {
	c.err = nil
	seq := func(yield func(T) bool) {
		err := lake.ScanTable(mg.ctx, mg.l, &c.one, mg.def, mg.chunk, func(rows []T) error {
			for i := range rows {
				if !yield(rows[i]) {
					return errStopScan
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStopScan) {
			c.err = err
		}
	}
	c.next, c.stop = iter.Pull(seq)
}

// activate opens the pending files whose first key is not after the
// smallest open head.
func (mg *merged[T]) activate() {
	for mg.err == nil && len(mg.pending) > 0 && (len(mg.heap) == 0 || !mg.less(&mg.heap[0].head, &mg.pending[0].first)) {
		c := mg.pending[0]
		mg.pending = mg.pending[1:]
		mg.open(c)
		if mg.advance(c) {
			mg.push(c)
		}
	}
}

// advance moves c to its next row, checking the file's order.
func (mg *merged[T]) advance(c *cursor[T]) bool {
	prev, had := c.head, c.has
	c.head, c.has = c.next()
	if c.err != nil {
		mg.err = c.err
		return false
	}
	if c.has && had && mg.less(&c.head, &prev) {
		mg.err = fmt.Errorf("%s: %w: rows are not sorted by the table's key", c.file, lake.ErrCorrupt)
		return false
	}
	return c.has
}

// Next returns the smallest remaining row; ok is false at the end or on an
// error (see Err).
func (mg *merged[T]) Next() (row T, ok bool) {
	mg.activate()
	if mg.err != nil || len(mg.heap) == 0 {
		return row, false
	}
	c := mg.heap[0]
	row = c.head
	if mg.advance(c) {
		mg.down(0)
	} else {
		last := len(mg.heap) - 1
		mg.heap[0] = mg.heap[last]
		mg.heap = mg.heap[:last]
		mg.down(0)
	}
	return row, true
}

// Peek returns the smallest remaining row without taking it.
func (mg *merged[T]) Peek() (*T, bool) {
	mg.activate()
	if mg.err != nil || len(mg.heap) == 0 {
		return nil, false
	}
	return &mg.heap[0].head, true
}

// Err is the first read error.
func (mg *merged[T]) Err() error { return mg.err }

// Close stops every cursor.
func (mg *merged[T]) Close() {
	for _, c := range mg.cursors {
		if c.stop != nil {
			c.stop()
		}
	}
}

func (mg *merged[T]) push(c *cursor[T]) {
	mg.heap = append(mg.heap, c)
	for i := len(mg.heap) - 1; i > 0; {
		p := (i - 1) / 2
		if !mg.less(&mg.heap[i].head, &mg.heap[p].head) {
			break
		}
		mg.heap[i], mg.heap[p] = mg.heap[p], mg.heap[i]
		i = p
	}
}

func (mg *merged[T]) down(i int) {
	h := mg.heap
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && mg.less(&h[l].head, &h[m].head) {
			m = l
		}
		if r < len(h) && mg.less(&h[r].head, &h[m].head) {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
