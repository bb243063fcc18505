package segment

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// merged streams a table's rows in key order across its files. Each file is
// sorted (the lake writes rows in key order) but appended files interleave,
// so the files are merged: one pull cursor per file, a heap on their heads.
// Memory is one chunk of rows per file.
type merged[T any] struct {
	less    func(a, b *T) bool
	cursors []*cursor[T]
	heap    []*cursor[T]
	err     error
}

type cursor[T any] struct {
	file string
	next func() (T, bool)
	stop func()
	err  error
	head T
	has  bool
}

var errStopScan = errors.New("scan stopped")

// mergeTable opens a merged stream over def's files in m; chunk bounds the
// rows read at a time per file.
func mergeTable[T any](ctx context.Context, l *lake.Lake, m *lake.Manifest, def *schemas.Table[T], chunk int, less func(a, b *T) bool) *merged[T] {
	mg := &merged[T]{less: less}
	tf, ok := m.Tables[def.Name]
	if !ok {
		return mg
	}
	for _, f := range tf.Files {
		one := *m
		one.Tables = map[string]lake.TableFiles{def.Name: {SchemaVersion: tf.SchemaVersion, Files: []lake.File{f}, Rows: f.Rows}}
		c := &cursor[T]{file: f.Path}
		seq := func(yield func(T) bool) {
			err := lake.ScanTable(ctx, l, &one, def, chunk, func(rows []T) error {
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
		mg.cursors = append(mg.cursors, c)
		if mg.advance(c) {
			mg.push(c)
		}
		if mg.err != nil {
			return mg
		}
	}
	return mg
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
		c.stop()
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
