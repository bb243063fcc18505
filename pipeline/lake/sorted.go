package lake

import (
	"bytes"
	"container/heap"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unsafe"

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
// sorted lake objects added with AddSorted or AddSortedSeq) k-way. Each
// input of the merge is read a few rows at a time (fewer for wide rows),
// one file of a sequence at a time, and when there are more than
// maxMergeFanIn inputs, groups of them are first merged into local runs, so
// the memory of Finish does not grow with the number of inputs or files.
//
// The merge is a stable one: rows equal in the table's order come out in
// the order their inputs were added (spilled runs first, in the order their
// rows were added, then the sorted sources in the order they were added),
// which with dedup decides the copy kept.
type SortedWriter[T any] struct {
	l     *Lake
	def   *schemas.Table[T]
	chunk int
	dedup bool
	buf   []T
	runs  []string // local spill files, each sorted
	srcs  [][]File // lake objects: each a sequence of files, sorted read one after the other
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
// de-duplication), counting the rows of sources added with AddSorted and
// AddSortedSeq.
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
func (w *SortedWriter[T]) AddSorted(f File) { w.AddSortedSeq([]File{f}) }

// AddSortedSeq adds consecutive files of one sorted sequence as one input
// of the merge: files whose rows, read one file after the other, are in the
// table's order, such as the files a SortedWriter or an ordered shard table
// wrote for one table, in their order. The merge opens a file only when the
// one before it is exhausted, so the files of a sequence cost the memory of
// one. The files written are the same as with AddSorted for each file in
// turn; rows found out of order are an error (ErrCorrupt).
func (w *SortedWriter[T]) AddSortedSeq(files []File) {
	if len(files) == 0 {
		return
	}
	w.srcs = append(w.srcs, slices.Clone(files))
	for _, f := range files {
		w.added += f.Rows
	}
}

func (w *SortedWriter[T]) spill() error {
	if len(w.buf) == 0 {
		return nil
	}
	w.def.Sort(w.buf)
	f, err := w.createRun()
	if err != nil {
		return fmt.Errorf("spill %s: %w", w.def.Name, err)
	}
	pw := parquet.NewGenericWriter[T](f, w.runOptions()...)
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

// createRun creates a local temporary file for a run.
func (w *SortedWriter[T]) createRun() (*os.File, error) {
	dir := w.l.store.TempDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return os.CreateTemp(dir, w.def.Name+tmpMarker+"run-*")
}

// runOptions are the Parquet options of local runs. Runs are private
// scratch: no compression, only the row-group size of the table so that
// reading one back stays small in memory.
func (w *SortedWriter[T]) runOptions() []parquet.WriterOption {
	rg := int64(defaultRowGroupRows)
	if w.def.Name == schemas.Blobs.Name {
		rg = blobRowGroupRows
	}
	return []parquet.WriterOption{parquet.MaxRowsPerRowGroup(rg)}
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

// maxMergeFanIn is the most inputs merged at once; more are first merged
// in groups into local runs. A variable for tests.
var maxMergeFanIn = 64

// Limits of the merge's memory.
const (
	// mergeBatchBytes and mergeBatchRows bound the rows an input holds
	// decoded at a time.
	mergeBatchBytes = 4 << 20
	mergeBatchRows  = 64
	// runRowGroupBytes cuts the row groups of the runs an intermediate
	// merge writes, so that writing and reading them stays small in memory.
	runRowGroupBytes = 32 << 20
)

// mergeInput is one sorted input of the merge: a local run or a sequence
// of lake objects.
type mergeInput struct {
	run   string
	files []File
}

// Finish merges everything added into sorted chunks and hands each to sink,
// returning the files in order. It writes at least one file (an empty one
// for no rows), as WriteRows does, and removes its temporary files.
func (w *SortedWriter[T]) Finish(ctx context.Context, sink Sink[T]) ([]File, error) {
	defer w.Discard()
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
	emit := func(row *T, _ int64) error {
		key := w.def.KeyOf(row)
		switch {
		case havePrev && key == prevKey && w.dedup:
			// an equal copy of a row already written
		case havePrev && key == prevKey:
			return fmt.Errorf("%s: duplicate key %q", w.def.Name, key)
		default:
			out = append(out, *row)
			prevKey, havePrev = key, true
		}
		if len(out) == w.chunk {
			return flush()
		}
		return nil
	}
	if len(w.runs) == 0 && len(w.srcs) == 0 {
		w.def.Sort(w.buf)
		for i := range w.buf {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := emit(&w.buf[i], 0); err != nil {
				return nil, err
			}
		}
	} else {
		if err := w.spill(); err != nil {
			return nil, err
		}
		inputs := make([]mergeInput, 0, len(w.runs)+len(w.srcs))
		for _, r := range w.runs {
			inputs = append(inputs, mergeInput{run: r})
		}
		for _, s := range w.srcs {
			inputs = append(inputs, mergeInput{files: s})
		}
		inputs, err := w.reduce(ctx, inputs)
		if err != nil {
			return nil, err
		}
		if err := w.merge(ctx, inputs, emit); err != nil {
			return nil, err
		}
	}
	if len(out) > 0 || len(files) == 0 {
		if err := flush(); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// reduce merges groups of consecutive inputs into local runs until at most
// maxMergeFanIn are left. Merging consecutive inputs keeps the merge
// stable: the rows of a group come out in the order the group's inputs had.
func (w *SortedWriter[T]) reduce(ctx context.Context, inputs []mergeInput) ([]mergeInput, error) {
	for len(inputs) > maxMergeFanIn {
		var next []mergeInput
		for i := 0; i < len(inputs); i += maxMergeFanIn {
			group := inputs[i:min(i+maxMergeFanIn, len(inputs))]
			if len(group) == 1 {
				next = append(next, group[0])
				continue
			}
			run, err := w.mergeToRun(ctx, group)
			if err != nil {
				return nil, err
			}
			next = append(next, mergeInput{run: run})
			for _, in := range group {
				if in.run != "" {
					os.Remove(in.run) // still listed in w.runs; removing twice is harmless
				}
			}
		}
		inputs = next
	}
	return inputs, nil
}

// mergeToRun merges inputs, keeping every row, into a new local run.
func (w *SortedWriter[T]) mergeToRun(ctx context.Context, inputs []mergeInput) (string, error) {
	f, err := w.createRun()
	if err != nil {
		return "", fmt.Errorf("merge %s: %w", w.def.Name, err)
	}
	w.runs = append(w.runs, f.Name())
	pw := parquet.NewGenericWriter[T](f, w.runOptions()...)
	var pending []T
	var pendingBytes, flushed int64
	write := func() error {
		if _, err := pw.Write(pending); err != nil {
			return err
		}
		clear(pending)
		pending, pendingBytes = pending[:0], 0
		if pw.Size()-flushed >= runRowGroupBytes {
			if err := pw.Flush(); err != nil {
				return err
			}
			flushed = pw.Size()
		}
		return nil
	}
	err = w.merge(ctx, inputs, func(row *T, size int64) error {
		pending = append(pending, *row)
		pendingBytes += size
		if len(pending) >= mergeBatchRows || pendingBytes >= mergeBatchBytes {
			return write()
		}
		return nil
	})
	if err == nil && len(pending) > 0 {
		err = write()
	}
	if err == nil {
		err = pw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("merge %s: %w", w.def.Name, err)
	}
	return f.Name(), nil
}

// merge reads the sorted inputs k-way and calls emit with every row in the
// table's order, rows equal in that order in input order. emit must copy
// the row; size is an estimate of its bytes.
func (w *SortedWriter[T]) merge(ctx context.Context, inputs []mergeInput, emit func(row *T, size int64) error) error {
	plan := decodePlanFor[T]()
	streams := make([]*rowStream[T], 0, len(inputs))
	defer func() {
		for _, s := range streams {
			s.close()
		}
	}()
	h := &streamHeap[T]{less: w.def.Less}
	for i, in := range inputs {
		s := &rowStream[T]{ctx: ctx, l: w.l, table: w.def.Name, less: w.def.Less, plan: plan, in: in}
		streams = append(streams, s)
		ok, err := s.fill()
		if err != nil {
			return err
		}
		if ok {
			h.items = append(h.items, streamItem[T]{s: s, order: i})
		}
	}
	heap.Init(h)
	for n := 0; h.Len() > 0; n++ {
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		top := h.items[0].s
		if err := emit(top.head(), top.rowBytes); err != nil {
			return err
		}
		ok, err := top.advance()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
			top.close()
		}
	}
	return nil
}

// rowStream reads the rows of one merge input in small batches, one file
// at a time, and checks that they are sorted.
type rowStream[T any] struct {
	ctx   context.Context
	l     *Lake
	table string
	less  func(a, b *T) bool
	plan  *decodePlan
	in    mergeInput
	next  int // the next file of in.files (a run: 1 once opened)

	fh       *os.File
	r        batchReader[T]
	name     string // the file being read, for messages
	want     int64  // its rows according to the manifest; -1 unknown
	got      int64
	batch    int   // rows per read
	rowBytes int64 // estimated bytes of a row of the file
	fresh    bool  // read into a new batch each time (the reader may share memory across reads)

	buf  []T
	pos  int
	prev T // the row before head, to check the order
	done bool
}

// batchReader reads a file's rows; io.EOF at the end.
type batchReader[T any] interface {
	Read(rows []T) (int, error)
	Close() error
}

// fill makes sure a row is available; false at the end.
func (s *rowStream[T]) fill() (bool, error) {
	for s.pos >= len(s.buf) {
		if s.done {
			return false, nil
		}
		if s.r == nil {
			ok, err := s.open()
			if err != nil {
				return false, err
			}
			if !ok {
				s.done = true
				s.buf, s.pos = nil, 0
				return false, nil
			}
		}
		if s.fresh || cap(s.buf) < s.batch {
			s.buf = make([]T, s.batch)
		} else {
			s.buf = s.buf[:s.batch]
			clear(s.buf)
		}
		s.pos = 0
		n, err := s.r.Read(s.buf)
		s.buf = s.buf[:n]
		s.got += int64(n)
		if errors.Is(err, io.EOF) {
			if err := s.closeFile(); err != nil {
				return false, err
			}
		} else if err != nil {
			return false, fmt.Errorf("read %s: %w: %v", s.name, ErrCorrupt, err)
		}
	}
	return true, nil
}

func (s *rowStream[T]) head() *T { return &s.buf[s.pos] }

// advance moves to the next row and checks it does not come before the
// one it follows.
func (s *rowStream[T]) advance() (bool, error) {
	s.prev = s.buf[s.pos]
	s.pos++
	ok, err := s.fill()
	if ok && s.less(&s.buf[s.pos], &s.prev) {
		return false, fmt.Errorf("read %s: %w: rows are not in the order of table %s", s.name, ErrCorrupt, s.table)
	}
	return ok, err
}

// open opens the input's next file; false when there is none.
func (s *rowStream[T]) open() (bool, error) {
	var path string
	s.want = -1
	switch {
	case s.in.run != "":
		if s.next > 0 {
			return false, nil
		}
		path, s.name = s.in.run, s.in.run
	case s.next < len(s.in.files):
		f := s.in.files[s.next]
		p, err := s.l.store.LocalPath(s.ctx, f.Path)
		if err != nil {
			return false, fmt.Errorf("read %s: %w", f.Path, err)
		}
		path, s.name, s.want = p, f.Path, f.Rows
	default:
		return false, nil
	}
	s.next++
	fh, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, fmt.Errorf("read %s: %w: the file is missing", s.name, ErrNotExist)
		}
		return false, fmt.Errorf("read %s: %w", s.name, err)
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return false, fmt.Errorf("read %s: %w", s.name, err)
	}
	if s.in.run == "" && st.Size() != s.in.files[s.next-1].Bytes {
		fh.Close()
		return false, fmt.Errorf("read %s: %w: %d bytes, the manifest says %d", s.name, ErrCorrupt, st.Size(), s.in.files[s.next-1].Bytes)
	}
	pf, err := parquet.OpenFile(fh, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		fh.Close()
		return false, fmt.Errorf("read %s: %w: %v", s.name, ErrCorrupt, err)
	}
	s.fh, s.got = fh, 0
	var rows, size int64
	for _, rg := range pf.Metadata().RowGroups {
		rows += rg.NumRows
		size += rg.TotalByteSize
	}
	s.rowBytes = int64(unsafe.Sizeof(*new(T)))
	if rows > 0 {
		s.rowBytes = max(s.rowBytes, size/rows)
	}
	s.batch = int(max(1, min(mergeBatchRows, mergeBatchBytes/s.rowBytes)))
	if s.plan != nil && parquet.EqualNodes(pf.Schema(), s.plan.schema) {
		s.r, s.fresh = newColumnReader[T](pf, s.plan), false
	} else {
		s.r, s.fresh = parquet.NewGenericReader[T](pf), true
	}
	return true, nil
}

// closeFile closes the current file and compares the rows read with the
// count the manifest promised.
func (s *rowStream[T]) closeFile() error {
	if s.r == nil {
		return nil
	}
	s.r.Close()
	s.fh.Close()
	s.r, s.fh = nil, nil
	if s.want >= 0 && s.got != s.want {
		return fmt.Errorf("read %s: %w: %d rows, the manifest says %d", s.name, ErrCorrupt, s.got, s.want)
	}
	return nil
}

func (s *rowStream[T]) close() {
	if s.r != nil {
		s.r.Close()
	}
	if s.fh != nil {
		s.fh.Close()
	}
	s.r, s.fh, s.buf = nil, nil, nil
	s.done = true
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

// Reading rows column by column.
//
// parquet-go's GenericReader turns every value of a row into a
// parquet.Value and then rebuilds the Go row from them through reflection,
// which for rows that carry long lists (token ids, masks, log-probabilities)
// costs far more than the rest of a merge. The tables of the lake are flat:
// every field is a scalar, a pointer to a scalar (optional) or a list of
// scalars. For such row types columnReader decodes each column of a row
// group page by page straight into the rows' fields, copying whole runs of
// list values at once; the rows are the ones GenericReader returns (it is
// used for any other row type, and for files whose schema is not exactly
// the row type's).

// fieldKind is the Go type of a field (or of a list's elements).
type fieldKind uint8

const (
	kindString fieldKind = iota
	kindBytes
	kindBool
	kindInt8
	kindInt16
	kindInt32
	kindInt64
	kindFloat32
	kindFloat64
)

// leafTypes is the Parquet type of each kind's column, as parquet-go
// derives it from the Go type: a column of another type (a timestamp, a
// decimal, an unsigned integer) is not decoded here.
var leafTypes = map[fieldKind]string{
	kindString:  "STRING",
	kindBytes:   "BYTE_ARRAY",
	kindBool:    "BOOLEAN",
	kindInt8:    "INT(8,true)",
	kindInt16:   "INT(16,true)",
	kindInt32:   "INT(32,true)",
	kindInt64:   "INT(64,true)",
	kindFloat32: "FLOAT",
	kindFloat64: "DOUBLE",
}

func kindOf(t reflect.Type) (fieldKind, bool) {
	switch t.Kind() {
	case reflect.String:
		return kindString, true
	case reflect.Bool:
		return kindBool, true
	case reflect.Int8:
		return kindInt8, true
	case reflect.Int16:
		return kindInt16, true
	case reflect.Int32:
		return kindInt32, true
	case reflect.Int64:
		return kindInt64, true
	case reflect.Int:
		return kindInt64, t.Size() == 8
	case reflect.Float32:
		return kindFloat32, true
	case reflect.Float64:
		return kindFloat64, true
	case reflect.Slice:
		return kindBytes, t.Elem().Kind() == reflect.Uint8
	}
	return 0, false
}

type fieldShape uint8

const (
	shapeRequired fieldShape = iota // a value per row
	shapeOptional                   // a pointer, nil for null
	shapeList                       // a slice, one value per element
)

// colPlan says where one leaf column goes.
type colPlan struct {
	offset uintptr
	kind   fieldKind
	shape  fieldShape
	elem   reflect.Type // the pointed-to type of an optional field
}

// decodePlan maps the leaf columns of a row type's schema to its fields.
type decodePlan struct {
	schema *parquet.Schema
	cols   []colPlan
}

var decodePlans sync.Map // reflect.Type -> *decodePlan (nil: not decodable)

// decodePlanFor returns T's plan, nil when columnReader cannot read T.
func decodePlanFor[T any]() *decodePlan {
	t := reflect.TypeFor[T]()
	if p, ok := decodePlans.Load(t); ok {
		return p.(*decodePlan)
	}
	p := newDecodePlan(t)
	decodePlans.Store(t, p)
	return p
}

func newDecodePlan(t reflect.Type) (plan *decodePlan) {
	if t.Kind() != reflect.Struct {
		return nil
	}
	defer func() {
		if recover() != nil { // a type parquet-go cannot map
			plan = nil
		}
	}()
	schema := parquet.SchemaOf(reflect.New(t).Interface())
	fields := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("parquet")
		if f.Anonymous {
			return nil // embedded structs: left to parquet-go
		}
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		fields[name] = f
	}
	plan = &decodePlan{schema: schema}
	for i, path := range schema.Columns() {
		leaf, ok := schema.Lookup(path...)
		f, found := fields[path[0]]
		if !ok || !found || leaf.ColumnIndex != i {
			return nil
		}
		c := colPlan{offset: f.Offset}
		ft := f.Type
		switch {
		case len(path) == 1 && leaf.MaxRepetitionLevel == 0 && leaf.MaxDefinitionLevel == 0:
			c.shape = shapeRequired
		case len(path) == 1 && leaf.MaxRepetitionLevel == 0 && leaf.MaxDefinitionLevel == 1 && ft.Kind() == reflect.Pointer:
			c.shape, c.elem, ft = shapeOptional, ft.Elem(), ft.Elem()
		case len(path) == 3 && path[1] == "list" && path[2] == "element" &&
			leaf.MaxRepetitionLevel == 1 && leaf.MaxDefinitionLevel == 1 && ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8:
			c.shape, ft = shapeList, ft.Elem()
		default:
			return nil
		}
		kind, ok := kindOf(ft)
		if !ok || leaf.Node.Type().String() != leafTypes[kind] {
			return nil
		}
		c.kind = kind
		plan.cols = append(plan.cols, c)
	}
	if len(plan.cols) == 0 {
		return nil
	}
	return plan
}

// columnReader reads a file's rows column by column (see decodePlan).
type columnReader[T any] struct {
	plan *decodePlan
	rgs  []parquet.RowGroup
	rg   int   // next row group
	left int64 // rows left in the open row group
	cols []columnCursor
}

func newColumnReader[T any](f *parquet.File, plan *decodePlan) *columnReader[T] {
	return &columnReader[T]{plan: plan, rgs: f.RowGroups(), cols: make([]columnCursor, len(plan.cols))}
}

func (r *columnReader[T]) Read(rows []T) (int, error) {
	for r.left == 0 {
		r.closeColumns()
		if r.rg == len(r.rgs) {
			return 0, io.EOF
		}
		rg := r.rgs[r.rg]
		r.rg++
		chunks := rg.ColumnChunks()
		if len(chunks) != len(r.cols) {
			return 0, fmt.Errorf("row group %d has %d columns, want %d", r.rg-1, len(chunks), len(r.cols))
		}
		for i := range r.cols {
			r.cols[i] = columnCursor{plan: &r.plan.cols[i], pages: chunks[i].Pages(), scratch: r.cols[i].scratch}
		}
		r.left = rg.NumRows()
	}
	n := int(min(int64(len(rows)), r.left))
	base, stride := unsafe.Pointer(unsafe.SliceData(rows)), unsafe.Sizeof(rows[0])
	for i := range r.cols {
		if err := r.cols[i].decode(base, stride, n); err != nil {
			return 0, fmt.Errorf("column %s: %w", strings.Join(r.plan.schema.Columns()[i], "."), err)
		}
	}
	r.left -= int64(n)
	return n, nil
}

func (r *columnReader[T]) closeColumns() {
	for i := range r.cols {
		r.cols[i].close()
	}
}

func (r *columnReader[T]) Close() error {
	r.closeColumns()
	r.left, r.rg = 0, len(r.rgs)
	return nil
}

// columnCursor decodes one column chunk, a page at a time.
type columnCursor struct {
	plan  *colPlan
	pages parquet.Pages
	page  parquet.Page
	eof   bool
	// The current page: levels (nil where the column has none) and its
	// non-null values, in the slice of the column's type.
	n        int // values, nulls and empty lists included
	li, vi   int // next level, next non-null value
	rep, def []byte
	i32      []int32
	i64      []int64
	f32      []float32
	f64      []float64
	bools    []bool
	data     []byte
	offsets  []uint32 // byte arrays: value i is data[offsets[i]:offsets[i+1]]
	scratch  *cursorScratch
}

// cursorScratch holds the buffers of pages read through parquet.Value
// (dictionary-encoded and boolean pages).
type cursorScratch struct {
	values   []parquet.Value
	rep, def []byte
	i32      []int32
	i64      []int64
	f32      []float32
	f64      []float64
	bools    []bool
	data     []byte
	offsets  []uint32
}

func (c *columnCursor) close() {
	if c.page != nil {
		parquet.Release(c.page)
		c.page = nil
	}
	if c.pages != nil {
		c.pages.Close()
		c.pages = nil
	}
}

// nextPage moves to the next page of the chunk; io.EOF after the last.
func (c *columnCursor) nextPage() error {
	if c.page != nil {
		parquet.Release(c.page)
		c.page = nil
	}
	if c.eof {
		return io.EOF
	}
	pg, err := c.pages.ReadPage()
	if err != nil {
		if errors.Is(err, io.EOF) {
			c.eof = true
			return io.EOF
		}
		return err
	}
	c.page = pg
	c.n, c.li, c.vi = int(pg.NumValues()), 0, 0
	c.rep, c.def, c.i32, c.i64, c.f32, c.f64, c.bools, c.data, c.offsets = nil, nil, nil, nil, nil, nil, nil, nil, nil
	if pg.Dictionary() != nil || c.plan.kind == kindBool {
		if err := c.readValues(pg); err != nil {
			return err
		}
	} else {
		c.rep, c.def = pg.RepetitionLevels(), pg.DefinitionLevels()
		v := pg.Data()
		switch c.plan.kind {
		case kindString, kindBytes:
			c.data, c.offsets = v.ByteArray()
		case kindInt8, kindInt16, kindInt32:
			c.i32 = v.Int32()
		case kindInt64:
			c.i64 = v.Int64()
		case kindFloat32:
			c.f32 = v.Float()
		case kindFloat64:
			c.f64 = v.Double()
		}
	}
	if c.n < 0 || (c.plan.shape == shapeList && len(c.rep) != c.n) || (c.plan.shape != shapeRequired && len(c.def) != c.n) {
		return fmt.Errorf("page of %d values has %d repetition and %d definition levels", c.n, len(c.rep), len(c.def))
	}
	return nil
}

// readValues fills the current page's levels and values through
// parquet.Value, for pages whose Data is not the values themselves.
func (c *columnCursor) readValues(pg parquet.Page) error {
	if c.scratch == nil {
		c.scratch = new(cursorScratch)
	}
	s := c.scratch
	s.values = slices.Grow(s.values[:0], c.n)[:c.n]
	vr := pg.Values()
	for got := 0; got < c.n; {
		k, err := vr.ReadValues(s.values[got:])
		got += k
		if errors.Is(err, io.EOF) && got < c.n {
			return fmt.Errorf("page holds %d of %d values", got, c.n)
		} else if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if k == 0 && err == nil {
			return fmt.Errorf("page holds %d of %d values", got, c.n)
		}
	}
	s.rep, s.def = s.rep[:0], s.def[:0]
	s.i32, s.i64, s.f32, s.f64, s.bools = s.i32[:0], s.i64[:0], s.f32[:0], s.f64[:0], s.bools[:0]
	s.data, s.offsets = s.data[:0], append(s.offsets[:0], 0)
	maxDef := 0
	if c.plan.shape != shapeRequired {
		maxDef = 1
	}
	for _, v := range s.values {
		if c.plan.shape == shapeList {
			s.rep = append(s.rep, byte(v.RepetitionLevel()))
		}
		if maxDef > 0 {
			s.def = append(s.def, byte(v.DefinitionLevel()))
		}
		if v.DefinitionLevel() != maxDef {
			continue
		}
		switch c.plan.kind {
		case kindString, kindBytes:
			s.data = append(s.data, v.ByteArray()...)
			s.offsets = append(s.offsets, uint32(len(s.data)))
		case kindBool:
			s.bools = append(s.bools, v.Boolean())
		case kindInt8, kindInt16, kindInt32:
			s.i32 = append(s.i32, v.Int32())
		case kindInt64:
			s.i64 = append(s.i64, v.Int64())
		case kindFloat32:
			s.f32 = append(s.f32, v.Float())
		case kindFloat64:
			s.f64 = append(s.f64, v.Double())
		}
	}
	clear(s.values) // drop references to the page's memory
	c.rep, c.def, c.i32, c.i64, c.f32, c.f64, c.bools = s.rep, s.def, s.i32, s.i64, s.f32, s.f64, s.bools
	if c.plan.kind == kindString || c.plan.kind == kindBytes {
		c.data, c.offsets = s.data, s.offsets
	}
	return nil
}

// values returns how many non-null values the page holds.
func (c *columnCursor) values() int {
	switch c.plan.kind {
	case kindString, kindBytes:
		return max(len(c.offsets)-1, 0)
	case kindBool:
		return len(c.bools)
	case kindInt8, kindInt16, kindInt32:
		return len(c.i32)
	case kindInt64:
		return len(c.i64)
	case kindFloat32:
		return len(c.f32)
	default:
		return len(c.f64)
	}
}

// ensure moves to a page with levels left to read.
func (c *columnCursor) ensure() error {
	for c.page == nil || c.li >= c.n {
		if err := c.nextPage(); err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("fewer values than rows")
			}
			return err
		}
	}
	return nil
}

// decode sets the column's field of n rows, stride bytes apart from base.
func (c *columnCursor) decode(base unsafe.Pointer, stride uintptr, n int) error {
	p := c.plan
	for i := range n {
		if err := c.ensure(); err != nil {
			return err
		}
		field := unsafe.Add(base, uintptr(i)*stride+p.offset)
		switch p.shape {
		case shapeRequired:
			if c.vi >= c.values() {
				return errors.New("fewer values than levels")
			}
			c.setScalar(field)
			c.vi++
		case shapeOptional:
			if c.def[c.li] == 1 {
				if c.vi >= c.values() {
					return errors.New("fewer values than levels")
				}
				v := reflect.New(p.elem).UnsafePointer()
				c.setScalar(v)
				c.vi++
				*(*unsafe.Pointer)(field) = v
			} else {
				*(*unsafe.Pointer)(field) = nil
			}
		case shapeList:
			if err := c.decodeList(field); err != nil {
				return err
			}
			continue // decodeList moved past the row's levels
		}
		c.li++
	}
	return nil
}

// decodeList sets the list that starts at the current level, which may
// go on in the next pages.
func (c *columnCursor) decodeList(field unsafe.Pointer) error {
	if c.rep[c.li] != 0 {
		return errors.New("a list does not start at a row")
	}
	if c.def[c.li] == 0 {
		c.setList(field, 0, false) // an empty list (parquet-go reads it as empty, not nil)
		c.li++
		return nil
	}
	for appendTo := false; ; appendTo = true {
		end := c.n
		if k := bytes.IndexByte(c.rep[c.li+1:], 0); k >= 0 {
			end = c.li + 1 + k
		}
		if bytes.IndexByte(c.def[c.li:end], 0) >= 0 {
			return errors.New("an empty element in a list")
		}
		count := end - c.li
		if c.vi+count > c.values() {
			return errors.New("fewer values than levels")
		}
		c.setList(field, count, appendTo)
		c.vi += count
		c.li = end
		if end < c.n {
			return nil
		}
		// The page ends with this list; a data page v1 may continue it.
		for {
			if err := c.nextPage(); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			if c.n > 0 {
				break
			}
		}
		if c.rep[0] == 0 {
			return nil
		}
	}
}

// setScalar stores the current value into the field at p.
func (c *columnCursor) setScalar(p unsafe.Pointer) {
	i := c.vi
	switch c.plan.kind {
	case kindString:
		*(*string)(p) = string(c.data[c.offsets[i]:c.offsets[i+1]])
	case kindBytes:
		*(*[]byte)(p) = append([]byte{}, c.data[c.offsets[i]:c.offsets[i+1]]...)
	case kindBool:
		*(*bool)(p) = c.bools[i]
	case kindInt8:
		*(*int8)(p) = int8(c.i32[i])
	case kindInt16:
		*(*int16)(p) = int16(c.i32[i])
	case kindInt32:
		*(*int32)(p) = c.i32[i]
	case kindInt64:
		*(*int64)(p) = c.i64[i]
	case kindFloat32:
		*(*float32)(p) = c.f32[i]
	case kindFloat64:
		*(*float64)(p) = c.f64[i]
	}
}

// setList stores the next count values as the list at p, or appends them.
func (c *columnCursor) setList(p unsafe.Pointer, count int, appendTo bool) {
	i, j := c.vi, c.vi+count
	switch c.plan.kind {
	case kindString:
		putList(p, appendTo, count, func(k int) string { return string(c.data[c.offsets[i+k]:c.offsets[i+k+1]]) })
	case kindBytes:
		putList(p, appendTo, count, func(k int) []byte {
			return append([]byte{}, c.data[c.offsets[i+k]:c.offsets[i+k+1]]...)
		})
	case kindBool:
		putSlice(p, appendTo, c.bools[i:j])
	case kindInt8:
		putList(p, appendTo, count, func(k int) int8 { return int8(c.i32[i+k]) })
	case kindInt16:
		putList(p, appendTo, count, func(k int) int16 { return int16(c.i32[i+k]) })
	case kindInt32:
		putSlice(p, appendTo, c.i32[i:j])
	case kindInt64:
		putSlice(p, appendTo, c.i64[i:j])
	case kindFloat32:
		putSlice(p, appendTo, c.f32[i:j])
	case kindFloat64:
		putSlice(p, appendTo, c.f64[i:j])
	}
}

// putSlice stores a copy of src as the []E at p, or appends it.
func putSlice[E any](p unsafe.Pointer, appendTo bool, src []E) {
	dst := (*[]E)(p)
	if appendTo {
		*dst = append(*dst, src...)
		return
	}
	s := make([]E, len(src))
	copy(s, src)
	*dst = s
}

// putList stores the n elements at(0..n-1) as the []E at p, or appends them.
func putList[E any](p unsafe.Pointer, appendTo bool, n int, at func(int) E) {
	dst := (*[]E)(p)
	if !appendTo {
		*dst = make([]E, 0, n)
	}
	for k := range n {
		*dst = append(*dst, at(k))
	}
}
