package lake

import (
	"context"

	"github.com/cualake/cualake/schemas"
)

// Appender streams rows into a transaction as a series of files of at most
// chunk rows, so a stage's memory does not grow with its output. Rows must
// arrive in a deterministic order for the files to be reproducible.
type Appender[T any] struct {
	ctx     context.Context
	tx      *Txn
	def     *schemas.Table[T]
	chunk   int
	buf     []T
	replace bool
	files   []File
	wrote   bool
}

// NewAppender returns an Appender that adds to the parent's rows of def.
func NewAppender[T any](ctx context.Context, tx *Txn, def *schemas.Table[T], chunk int) *Appender[T] {
	if chunk <= 0 {
		chunk = 1 << 16
	}
	return &Appender[T]{ctx: ctx, tx: tx, def: def, chunk: chunk}
}

// NewReplacer returns an Appender whose rows replace the table's content.
func NewReplacer[T any](ctx context.Context, tx *Txn, def *schemas.Table[T], chunk int) *Appender[T] {
	a := NewAppender(ctx, tx, def, chunk)
	a.replace = true
	return a
}

// Add buffers rows and writes a file whenever a chunk is full.
func (a *Appender[T]) Add(rows ...T) error {
	a.buf = append(a.buf, rows...)
	for len(a.buf) >= a.chunk {
		if err := a.flush(a.buf[:a.chunk]); err != nil {
			return err
		}
		a.buf = append(a.buf[:0], a.buf[a.chunk:]...)
	}
	return nil
}

func (a *Appender[T]) flush(rows []T) error {
	files, err := WriteRows(a.ctx, a.tx.lake, a.def, rows)
	if err != nil {
		return err
	}
	a.files = append(a.files, files...)
	a.wrote = true
	return nil
}

// Rows returns the number of rows written or buffered so far.
func (a *Appender[T]) Rows() int64 {
	n := int64(len(a.buf))
	for _, f := range a.files {
		n += f.Rows
	}
	return n
}

// Close writes what is buffered and records the files in the transaction.
// An appender that saw no rows changes nothing (a replacer writes an empty
// table).
func (a *Appender[T]) Close() error {
	if len(a.buf) > 0 || (a.replace && !a.wrote) {
		if err := a.flush(a.buf); err != nil {
			return err
		}
		a.buf = nil
	}
	if a.replace {
		return a.tx.Replace(a.def.Name, a.files)
	}
	if len(a.files) == 0 {
		return nil
	}
	return a.tx.Append(a.def.Name, a.files)
}
