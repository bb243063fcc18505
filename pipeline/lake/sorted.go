package lake

import (
	"container/heap"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/cualake/cualake/schemas"
)

// SortedWriter collects one table's rows in any order, from any number of
// producers, and writes them as final data files: all rows sorted by the
// table's order and cut every Chunk rows. The files therefore depend only on
// the set of rows, not on how the work was split or in which order rows
// arrived, which is what lets N shard fragments merge into exactly the files
// an unsharded run writes.
//
// Memory stays bounded: rows are buffered up to Chunk, then spilled as a
// sorted run to a local temporary file; Finish merges the runs (and any
// sorted lake objects added with AddSorted) k-way.
type SortedWriter[T any] struct {
	l     *Lake
	def   *schemas.Table[T]
	chunk int
	dedup bool
	buf   []T
	runs  []string // local spill files, each sorted
	srcs  []File   // lake objects, each sorted
	added int64
}

// NewSortedWriter returns a writer of def's rows cutting files every chunk
// rows (0: 65,536; at most MaxFileRows). With dedup, rows with equal keys
// are taken to be equal (content-addressed tables such as blobs) and kept
// once; without it an equal key is an error.
func NewSortedWriter[T any](l *Lake, def *schemas.Table[T], chunk int, dedup bool) *SortedWriter[T] {
	if chunk <= 0 {
		chunk = defaultRowGroupRows
	}
	chunk = min(chunk, MaxFileRows)
	return &SortedWriter[T]{l: l, def: def, chunk: chunk, dedup: dedup}
}

// Added returns the number of rows given to the writer so far (before
// de-duplication), counting the rows of sources added with AddSorted.
func (w *SortedWriter[T]) Added() int64 { return w.added }

// Add buffers rows; a full buffer is sorted and spilled to a local run.
func (w *SortedWriter[T]) Add(rows ...T) error {
	w.buf = append(w.buf, rows...)
	w.added += int64(len(rows))
	if len(w.buf) >= w.chunk {
		return w.spill()
	}
	return nil
}

// AddSorted adds a lake object whose rows are already sorted (a file this
// or another SortedWriter wrote) as one more input of the merge.
func (w *SortedWriter[T]) AddSorted(f File) {
	w.srcs = append(w.srcs, f)
	w.added += f.Rows
}

func (w *SortedWriter[T]) spill() error {
	if len(w.buf) == 0 {
		return nil
	}
	w.def.Sort(w.buf)
	dir := w.l.store.TempDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("spill %s: %w", w.def.Name, err)
	}
	f, err := os.CreateTemp(dir, w.def.Name+tmpMarker+"run-*")
	if err != nil {
		return fmt.Errorf("spill %s: %w", w.def.Name, err)
	}
	// Runs are private scratch: no compression, only the row-group size of
	// the table so that reading one back stays small in memory.
	rg := int64(defaultRowGroupRows)
	if w.def.Name == schemas.Blobs.Name {
		rg = blobRowGroupRows
	}
	pw := parquet.NewGenericWriter[T](f, parquet.MaxRowsPerRowGroup(rg))
	_, err = pw.Write(w.buf)
	if err == nil {
		err = pw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("spill %s: %w", w.def.Name, err)
	}
	w.runs = append(w.runs, f.Name())
	clear(w.buf)
	w.buf = w.buf[:0]
	return nil
}

// Discard removes the writer's temporary files; use it on error paths.
func (w *SortedWriter[T]) Discard() {
	for _, r := range w.runs {
		os.Remove(r)
	}
	w.runs, w.buf = nil, nil
}

// Sink writes one chunk of sorted rows somewhere and says which file it
// became.
type Sink[T any] func(ctx context.Context, rows []T) (File, error)

// DataSink writes chunks as the table's data files (data/<table>/<sha>),
// exactly as WriteRows does.
func DataSink[T any](l *Lake, def *schemas.Table[T]) Sink[T] {
	return func(ctx context.Context, rows []T) (File, error) {
		files, err := WriteRows(ctx, l, def, rows)
		if err != nil {
			return File{}, err
		}
		if len(files) != 1 {
			return File{}, fmt.Errorf("write %s: %d rows became %d files, want 1", def.Name, len(rows), len(files))
		}
		return files[0], nil
	}
}

// ObjectSink writes chunks as content-addressed objects under prefix
// (prefix + "data/<table>/<sha256>.parquet"), with the same bytes a data
// file of the same rows has. Shard fragments keep their files there, out of
// reach of gc, until a merge turns them into data files.
func ObjectSink[T any](l *Lake, def *schemas.Table[T], prefix string) Sink[T] {
	return func(ctx context.Context, rows []T) (File, error) {
		if err := def.ValidateAll(rows); err != nil {
			return File{}, err
		}
		return writeObject(ctx, l, def, rows, prefix)
	}
}

// Finish merges everything added into sorted chunks and hands each to sink,
// returning the files in order. It writes at least one file (an empty one
// for no rows), as WriteRows does, and removes its temporary files.
func (w *SortedWriter[T]) Finish(ctx context.Context, sink Sink[T]) ([]File, error) {
	defer w.Discard()
	var streams []*rowStream[T]
	defer func() {
		for _, s := range streams {
			s.close()
		}
	}()
	if len(w.runs) > 0 || len(w.srcs) > 0 {
		if err := w.spill(); err != nil {
			return nil, err
		}
		for _, r := range w.runs {
			s, err := openLocalStream[T](r, w.def.Name, -1)
			if err != nil {
				return nil, err
			}
			streams = append(streams, s)
		}
		for _, f := range w.srcs {
			s, err := openObjectStream[T](ctx, w.l, w.def.Name, f)
			if err != nil {
				return nil, err
			}
			streams = append(streams, s)
		}
	} else {
		w.def.Sort(w.buf)
		streams = append(streams, memStream(w.buf))
	}
	h := &streamHeap[T]{less: w.def.Less}
	for i, s := range streams {
		ok, err := s.fill()
		if err != nil {
			return nil, err
		}
		if ok {
			h.items = append(h.items, streamItem[T]{s: s, order: i})
		}
	}
	heap.Init(h)
	var files []File
	out := make([]T, 0, min(w.chunk, 4096))
	flush := func() error {
		f, err := sink(ctx, out)
		if err != nil {
			return err
		}
		files = append(files, f)
		out = make([]T, 0, min(w.chunk, 4096))
		return nil
	}
	prevKey, havePrev := "", false
	for h.Len() > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		top := h.items[0].s
		row := top.head()
		key := w.def.KeyOf(row)
		switch {
		case havePrev && key == prevKey && w.dedup:
			// an equal copy of a row already written
		case havePrev && key == prevKey:
			return nil, fmt.Errorf("%s: duplicate key %q", w.def.Name, key)
		default:
			out = append(out, *row)
			prevKey, havePrev = key, true
		}
		ok, err := top.advance()
		if err != nil {
			return nil, err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
		if len(out) == w.chunk {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if len(out) > 0 || len(files) == 0 {
		if err := flush(); err != nil {
			return nil, err
		}
	}
	for _, s := range streams {
		if err := s.check(); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// rowStream reads sorted rows from a Parquet file (or memory) in batches.
type rowStream[T any] struct {
	name    string
	f       *os.File
	r       *parquet.GenericReader[T]
	batch   int
	buf     []T
	pos     int
	total   int64
	want    int64 // -1: unknown
	done    bool
	cleanup func()
}

func memStream[T any](rows []T) *rowStream[T] {
	return &rowStream[T]{name: "memory", buf: rows, want: -1, done: true}
}

func batchFor(table string) int {
	if table == schemas.Blobs.Name {
		return 16 // blob rows are large
	}
	return 512
}

func openLocalStream[T any](path, table string, want int64) (*rowStream[T], error) {
	fh, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", path, ErrNotExist)
		}
		return nil, err
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, err
	}
	pf, err := parquet.OpenFile(fh, st.Size())
	if err != nil {
		fh.Close()
		return nil, fmt.Errorf("%s: %w: %v", path, ErrCorrupt, err)
	}
	return &rowStream[T]{name: path, f: fh, r: parquet.NewGenericReader[T](pf), batch: batchFor(table), want: want}, nil
}

// openObjectStream opens a sorted lake object through LocalPath (a remote
// backend downloads it into its cache and checks its hash).
func openObjectStream[T any](ctx context.Context, l *Lake, table string, f File) (*rowStream[T], error) {
	p, err := l.store.LocalPath(ctx, f.Path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Path, err)
	}
	if st, err := os.Stat(p); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("read %s: %w: the file is missing", f.Path, ErrNotExist)
		}
		return nil, fmt.Errorf("read %s: %w", f.Path, err)
	} else if st.Size() != f.Bytes {
		return nil, fmt.Errorf("read %s: %w: %d bytes, the manifest says %d", f.Path, ErrCorrupt, st.Size(), f.Bytes)
	}
	s, err := openLocalStream[T](p, table, f.Rows)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Path, err)
	}
	s.name = f.Path
	return s, nil
}

// fill makes sure a row is available; false at the end.
func (s *rowStream[T]) fill() (bool, error) {
	for s.pos >= len(s.buf) {
		if s.done {
			return false, nil
		}
		// A fresh batch each time: rows handed out must not be overwritten
		// by the next read.
		s.buf, s.pos = make([]T, s.batch), 0
		n, err := s.r.Read(s.buf)
		s.buf = s.buf[:n]
		s.total += int64(n)
		if errors.Is(err, io.EOF) {
			s.done = true
		} else if err != nil {
			return false, fmt.Errorf("read %s: %w: %v", s.name, ErrCorrupt, err)
		}
	}
	return true, nil
}

func (s *rowStream[T]) head() *T { return &s.buf[s.pos] }

func (s *rowStream[T]) advance() (bool, error) {
	s.pos++
	return s.fill()
}

// check compares the rows read with the count the manifest promised.
func (s *rowStream[T]) check() error {
	if s.want >= 0 && s.total != s.want {
		return fmt.Errorf("read %s: %w: %d rows, the manifest says %d", s.name, ErrCorrupt, s.total, s.want)
	}
	return nil
}

func (s *rowStream[T]) close() {
	if s.r != nil {
		s.r.Close()
	}
	if s.f != nil {
		s.f.Close()
	}
}

type streamItem[T any] struct {
	s     *rowStream[T]
	order int // ties go to the earlier stream, so merging is deterministic
}

type streamHeap[T any] struct {
	items []streamItem[T]
	less  func(a, b *T) bool
}

func (h *streamHeap[T]) Len() int { return len(h.items) }
func (h *streamHeap[T]) Less(i, j int) bool {
	a, b := h.items[i].s.head(), h.items[j].s.head()
	if h.less(a, b) {
		return true
	}
	if h.less(b, a) {
		return false
	}
	return h.items[i].order < h.items[j].order
}
func (h *streamHeap[T]) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *streamHeap[T]) Push(x any)    { h.items = append(h.items, x.(streamItem[T])) }
func (h *streamHeap[T]) Pop() any {
	it := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return it
}

// writeObject writes rows (already sorted) as one Parquet file under
// prefix + data/<table>/<sha256>.parquet. It is writeFile with a key
// prefix: the same options, so the same rows give the same bytes.
func writeObject[T any](ctx context.Context, l *Lake, def *schemas.Table[T], rows []T, prefix string) (File, error) {
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	dir := l.store.TempDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return File{}, fmt.Errorf("write %s: %w", def.Name, err)
	}
	f, err := os.CreateTemp(dir, def.Name+tmpMarker+"*")
	if err != nil {
		return File{}, fmt.Errorf("write %s: %w", def.Name, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	hw := &hashWriter{w: f, h: sha256.New()}
	w := parquet.NewGenericWriter[T](hw, writerOptions(def.Name)...)
	_, err = w.Write(rows)
	if err == nil {
		err = w.Close()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return File{}, fmt.Errorf("write %s: %w", def.Name, err)
	}
	sum := hex.EncodeToString(hw.h.Sum(nil))
	file := File{Path: prefix + dataKey(def.Name, sum), SHA256: sum, Rows: int64(len(rows)), Bytes: hw.n}
	if err := l.store.PutFile(ctx, file.Path, tmp); err != nil {
		return File{}, err
	}
	return file, nil
}
