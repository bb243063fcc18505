package lake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"

	"github.com/cualake/cualake/schemas"
)

// fillRandom sets every exported field of v (a struct) to random values:
// nil, empty and long lists, nil pointers, empty strings, negative numbers.
func fillRandom(rng *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillRandom(rng, v.Field(i))
			}
		}
	case reflect.String:
		if rng.Intn(5) > 0 {
			v.SetString(fmt.Sprintf("s%x", rng.Int63n(1<<uint(rng.Intn(60)+1))))
		}
	case reflect.Bool:
		v.SetBool(rng.Intn(2) == 0)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		v.SetInt(rng.Int63() - 1<<62)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(rng.NormFloat64())
	case reflect.Pointer:
		if rng.Intn(3) > 0 {
			p := reflect.New(v.Type().Elem())
			fillRandom(rng, p.Elem())
			v.Set(p)
		}
	case reflect.Slice:
		n := 0
		switch rng.Intn(6) {
		case 0:
			return // nil
		case 1: // empty
		case 2:
			n = 1000 + rng.Intn(3000) // spans pages
		default:
			n = rng.Intn(20)
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fillRandom(rng, s.Index(i))
		}
		v.Set(s)
	case reflect.Uint8:
		v.SetUint(uint64(rng.Intn(256)))
	default:
		panic("fillRandom: " + v.Type().String())
	}
}

func randomRows[T any](rng *rand.Rand, n int) []T {
	rows := make([]T, n)
	for i := range rows {
		fillRandom(rng, reflect.ValueOf(&rows[i]).Elem())
	}
	return rows
}

func parquetBytes[T any](t *testing.T, rows []T, opts ...parquet.WriterOption) *parquet.File {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[T](&buf, opts...)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// checkColumnReader writes random rows of def's type in several layouts
// and checks that columnReader reads exactly the rows GenericReader reads.
func checkColumnReader[T any](t *testing.T, def *schemas.Table[T]) {
	plan := decodePlanFor[T]()
	if plan == nil {
		t.Fatalf("%s: no column plan: the merge would fall back to the slow reader", def.Name)
	}
	rng := rand.New(rand.NewSource(int64(len(def.Name))))
	rows := randomRows[T](rng, 60)
	layouts := map[string][]parquet.WriterOption{
		"lake":       writerOptions(def.Name),
		"run":        {parquet.MaxRowsPerRowGroup(defaultRowGroupRows)},
		"smallpages": append(writerOptions(def.Name), parquet.PageBufferSize(256), parquet.MaxRowsPerRowGroup(7)),
		"v1":         append(writerOptions(def.Name), parquet.DataPageVersion(1), parquet.PageBufferSize(1024)),
		"dictionary": append(writerOptions(def.Name), parquet.DefaultEncodingFor(parquet.ByteArray, &parquet.RLEDictionary),
			parquet.DefaultEncodingFor(parquet.Int32, &parquet.RLEDictionary), parquet.PageBufferSize(2048), parquet.MaxRowsPerRowGroup(13)),
	}
	for name, opts := range layouts {
		f := parquetBytes(t, rows, opts...)
		if !parquet.EqualNodes(f.Schema(), plan.schema) {
			t.Fatalf("%s/%s: the file schema differs from the row type's", def.Name, name)
		}
		want := make([]T, len(rows))
		gr := parquet.NewGenericReader[T](f)
		if n, err := gr.Read(want); n != len(rows) || (err != nil && !errors.Is(err, io.EOF)) {
			t.Fatalf("%s/%s: generic read %d rows: %v", def.Name, name, n, err)
		}
		for _, batch := range []int{1, 3, 64} {
			cr := newColumnReader[T](f, plan)
			var got []T
			for {
				b := make([]T, batch)
				n, err := cr.Read(b)
				got = append(got, b[:n]...)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("%s/%s: %v", def.Name, name, err)
				}
			}
			cr.Close()
			if len(got) != len(want) {
				t.Fatalf("%s/%s batch %d: %d rows, want %d", def.Name, name, batch, len(got), len(want))
			}
			for i := range want {
				if !reflect.DeepEqual(got[i], want[i]) {
					g, w := reflect.ValueOf(got[i]), reflect.ValueOf(want[i])
					for j := range g.NumField() {
						if !reflect.DeepEqual(g.Field(j).Interface(), w.Field(j).Interface()) {
							t.Fatalf("%s/%s batch %d: row %d field %s differs", def.Name, name, batch, i, g.Type().Field(j).Name)
						}
					}
				}
			}
		}
	}
}

func TestColumnReaderEveryTable(t *testing.T) {
	checkColumnReader(t, schemas.Tasks)
	checkColumnReader(t, schemas.SynthesisRecords)
	checkColumnReader(t, schemas.Trajectories)
	checkColumnReader(t, schemas.Steps)
	checkColumnReader(t, schemas.Blobs)
	checkColumnReader(t, schemas.Segments)
	checkColumnReader(t, schemas.PassRates)
	checkColumnReader(t, schemas.Batches)
	checkColumnReader(t, schemas.Verifications)
	checkColumnReader(t, schemas.TrainMetrics)
	checkColumnReader(t, schemas.Checkpoints)
	checkColumnReader(t, schemas.Audits)
	checkColumnReader(t, schemas.Rejects)
	checkColumnReader(t, schemas.SamplerSims)
}

// mergeRow is a test table whose order (by Group) has ties between rows of
// different keys, so the files show the order ties come out in.
type mergeRow struct {
	Group   string   `parquet:"group"`
	Name    string   `parquet:"name"`
	Payload string   `parquet:"payload"`
	IDs     []int32  `parquet:"ids,list"`
	Score   *float64 `parquet:"score,optional"`
	Flag    bool     `parquet:"flag"`
}

var mergeTable = &schemas.Table[mergeRow]{
	Name: "mergetest", Version: 1, Key: []string{"group", "name"},
	KeyOf:    func(r *mergeRow) string { return r.Group + "/" + r.Name },
	Less:     func(a, b *mergeRow) bool { return a.Group < b.Group },
	Validate: func(*mergeRow) error { return nil },
}

// nestedRow is a row type columnReader does not decode (a nested struct):
// the merge reads it through parquet-go's reader.
type nestedRow struct {
	Key  string `parquet:"key"`
	Meta struct {
		A int32  `parquet:"a"`
		B string `parquet:"b"`
	} `parquet:"meta"`
	IDs []int32 `parquet:"ids,list"`
}

var nestedTable = &schemas.Table[nestedRow]{
	Name: "nestedtest", Version: 1, Key: []string{"key"},
	KeyOf:    func(r *nestedRow) string { return r.Key },
	Less:     func(a, b *nestedRow) bool { return a.Key < b.Key },
	Validate: func(*nestedRow) error { return nil },
}

func makeMergeRows(rng *rand.Rand, n, groups int, tag string) []mergeRow {
	rows := make([]mergeRow, n)
	for i := range rows {
		rows[i] = mergeRow{Group: fmt.Sprintf("g%04d", rng.Intn(groups)), Name: fmt.Sprintf("%s-%d", tag, i),
			Payload: strings.Repeat("p", rng.Intn(40)), IDs: make([]int32, rng.Intn(300)), Flag: i%3 == 0}
		for j := range rows[i].IDs {
			rows[i].IDs[j] = rng.Int31()
		}
		if i%4 != 0 {
			s := rng.Float64()
			rows[i].Score = &s
		}
	}
	return rows
}

// writeSeq writes sorted rows as consecutive objects of per rows each, as
// a shard's fragment holds them.
func writeSeq[T any](t *testing.T, l *Lake, def *schemas.Table[T], rows []T, per int) []File {
	t.Helper()
	rows = slices.Clone(rows)
	def.Sort(rows)
	var files []File
	for i := 0; i < len(rows); i += per {
		f, err := writeObject(context.Background(), l, def, rows[i:min(i+per, len(rows))], "fragments/x/")
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// referenceMerge is what Finish must write, by definition: the rows given
// to Add, then those of every sorted source in the order added, stably
// sorted; equal adjacent keys kept once (dedup) or refused; cut every chunk
// rows, each chunk written with WriteRows.
func referenceMerge[T any](t *testing.T, l *Lake, def *schemas.Table[T], chunk int, dedup bool, added []T, srcs [][]T) ([]string, error) {
	t.Helper()
	all := slices.Clone(added)
	for _, s := range srcs {
		all = append(all, s...)
	}
	def.Sort(all)
	var kept []T
	for i := range all {
		if i > 0 && def.KeyOf(&all[i]) == def.KeyOf(&all[i-1]) {
			if dedup {
				continue
			}
			return nil, fmt.Errorf("%s: duplicate key %q", def.Name, def.KeyOf(&all[i]))
		}
		kept = append(kept, all[i])
	}
	var shas []string
	for i := 0; i == 0 || i < len(kept); i += chunk {
		files, err := WriteRows(context.Background(), l, def, slices.Clone(kept[i:min(i+chunk, len(kept))]))
		if err != nil {
			t.Fatal(err)
		}
		shas = append(shas, files[0].SHA256)
	}
	return shas, nil
}

func shasOf(files []File) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.SHA256)
	}
	return out
}

type mergeCase[T any] struct {
	name  string
	chunk int
	dedup bool
	added []T   // rows given to Add, in this order
	frags [][]T // sorted sources
	per   int   // rows per source file
}

// checkMerge runs the case with every source as one sequence
// (AddSortedSeq) and file by file (AddSorted), and compares the files with
// referenceMerge.
func checkMerge[T any](t *testing.T, l *Lake, def *schemas.Table[T], c mergeCase[T]) {
	t.Helper()
	ctx := context.Background()
	want, werr := referenceMerge(t, l, def, c.chunk, c.dedup, c.added, c.frags)
	var seqs [][]File
	var sorted [][]T
	for _, fr := range c.frags {
		seqs = append(seqs, writeSeq(t, l, def, fr, c.per))
		s := slices.Clone(fr)
		def.Sort(s)
		sorted = append(sorted, s)
	}
	if w2, _ := referenceMerge(t, l, def, c.chunk, c.dedup, c.added, sorted); !slices.Equal(w2, want) {
		t.Fatalf("%s: the reference depends on the sources' order", c.name)
	}
	for _, mode := range []string{"seq", "files"} {
		w := NewSortedWriter(l, def, c.chunk, c.dedup)
		for _, r := range c.added {
			if err := w.Add(r); err != nil {
				t.Fatal(err)
			}
		}
		var n int64 = int64(len(c.added))
		for _, s := range seqs {
			if mode == "seq" {
				w.AddSortedSeq(s)
			} else {
				for _, f := range s {
					w.AddSorted(f)
				}
			}
			for _, f := range s {
				n += f.Rows
			}
		}
		if w.Added() != n {
			t.Fatalf("%s/%s: Added %d, want %d", c.name, mode, w.Added(), n)
		}
		files, err := w.Finish(ctx, DataSink(l, def))
		if werr != nil {
			if err == nil || err.Error() != werr.Error() {
				t.Fatalf("%s/%s: error %v, want %v", c.name, mode, err, werr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s/%s: %v", c.name, mode, err)
		}
		if got := shasOf(files); !slices.Equal(got, want) {
			t.Fatalf("%s/%s: files\n%v\nwant\n%v", c.name, mode, got, want)
		}
	}
}

func TestSortedWriterMatchesReference(t *testing.T) {
	l, _ := newLake(t)
	rng := rand.New(rand.NewSource(1))
	frags := func(n, rows, groups int) [][]mergeRow {
		var out [][]mergeRow
		for i := range n {
			out = append(out, makeMergeRows(rng, rows, groups, fmt.Sprintf("f%d", i)))
		}
		return out
	}
	dups := frags(3, 50, 10)
	// the same keys in several sources, with other payloads: dedup keeps
	// the first source's copy
	dups = append(dups, slices.Clone(dups[1][:20]), slices.Clone(dups[0][10:30]))
	for i := range dups[3] {
		dups[3][i].Payload = "other"
	}
	cases := []mergeCase[mergeRow]{
		{name: "shards", chunk: 7, frags: frags(4, 60, 25), per: 5},
		{name: "one file per source", chunk: 16, frags: frags(5, 30, 8), per: 100},
		{name: "single rows", chunk: 3, frags: frags(3, 10, 4), per: 1},
		{name: "ties only", chunk: 10, frags: frags(4, 20, 1), per: 3},
		{name: "dedup", chunk: 9, dedup: true, frags: dups, per: 4},
		{name: "duplicate key", chunk: 9, frags: dups, per: 4},
		{name: "runs and sources", chunk: 6, added: makeMergeRows(rng, 40, 12, "a"), frags: frags(3, 25, 12), per: 4},
		{name: "runs only", chunk: 5, added: makeMergeRows(rng, 33, 6, "b")},
		{name: "memory only", chunk: 50, added: makeMergeRows(rng, 33, 6, "c")},
		{name: "nothing", chunk: 5},
		{name: "empty sources", chunk: 5, frags: [][]mergeRow{nil, makeMergeRows(rng, 4, 2, "d"), nil}, per: 2},
	}
	for _, c := range cases {
		checkMerge(t, l, mergeTable, c)
	}
	// More inputs than the fan-in: merged in groups into local runs first,
	// over several levels.
	defer func(n int) { maxMergeFanIn = n }(maxMergeFanIn)
	maxMergeFanIn = 3
	for _, c := range cases {
		c.name += " fan-in 3"
		checkMerge(t, l, mergeTable, c)
	}
	checkMerge(t, l, mergeTable, mergeCase[mergeRow]{name: "many", chunk: 11, added: makeMergeRows(rng, 50, 30, "e"), frags: frags(11, 17, 30), per: 2})
	checkMerge(t, l, mergeTable, mergeCase[mergeRow]{name: "many dedup", chunk: 11, dedup: true, frags: dups, per: 2})
	// a row type columnReader does not decode
	nested := func(n int, tag string) []nestedRow {
		rows := make([]nestedRow, n)
		for i := range rows {
			rows[i].Key = fmt.Sprintf("k%05d-%s", rng.Intn(100000), tag)
			rows[i].Meta.A, rows[i].Meta.B = rng.Int31(), tag
			rows[i].IDs = make([]int32, rng.Intn(5))
		}
		return rows
	}
	if decodePlanFor[nestedRow]() != nil {
		t.Fatal("nestedRow should not have a column plan")
	}
	checkMerge(t, l, nestedTable, mergeCase[nestedRow]{name: "nested", chunk: 7, added: nested(20, "a"), frags: [][]nestedRow{nested(30, "b"), nested(25, "c")}, per: 4})
	if tmp := runFiles(l); len(tmp) > 0 {
		t.Fatalf("temporary files left: %v", tmp)
	}
}

// runFiles lists the merge's temporary runs left in the lake's temp dir.
func runFiles(l *Lake) []string {
	var out []string
	ents, _ := os.ReadDir(l.store.TempDir())
	for _, e := range ents {
		if strings.Contains(e.Name(), tmpMarker+"run-") {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestSortedWriterRejectsBadSources(t *testing.T) {
	ctx := context.Background()
	l, _ := newLake(t)
	rng := rand.New(rand.NewSource(2))
	rows := makeMergeRows(rng, 30, 30, "x")
	seq := writeSeq(t, l, mergeTable, rows, 10)
	other := writeSeq(t, l, mergeTable, makeMergeRows(rng, 10, 30, "y"), 10)

	finish := func(add func(w *SortedWriter[mergeRow])) error {
		w := NewSortedWriter(l, mergeTable, 8, false)
		add(w)
		_, err := w.Finish(ctx, DataSink(l, mergeTable))
		return err
	}
	// files of a sequence out of order
	err := finish(func(w *SortedWriter[mergeRow]) { w.AddSortedSeq([]File{seq[1], seq[0], seq[2]}) })
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "not in the order") {
		t.Fatalf("sequence out of order: %v", err)
	}
	// a manifest that promises other rows
	bad := slices.Clone(seq)
	bad[1].Rows++
	if err := finish(func(w *SortedWriter[mergeRow]) { w.AddSortedSeq(bad) }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("wrong row count: %v", err)
	}
	bad = slices.Clone(seq)
	bad[2].Bytes++
	if err := finish(func(w *SortedWriter[mergeRow]) { w.AddSortedSeq(bad) }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("wrong size: %v", err)
	}
	missing := File{Path: "fragments/x/data/mergetest/none.parquet", Rows: 1, Bytes: 10}
	if err := finish(func(w *SortedWriter[mergeRow]) { w.AddSortedSeq(append(slices.Clone(seq), missing)) }); err == nil {
		t.Fatal("missing file: no error")
	}
	// sequences that are fine on their own
	if err := finish(func(w *SortedWriter[mergeRow]) { w.AddSortedSeq(seq); w.AddSortedSeq(other) }); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel := context.WithCancel(ctx)
	cancel()
	w := NewSortedWriter(l, mergeTable, 8, false)
	w.AddSortedSeq(seq)
	if _, err := w.Finish(ctx2, DataSink(l, mergeTable)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// splitPage is a page of a list column with levels of our choosing, such
// as data page v1 writers produce when a row goes on in the next page.
type splitPage struct {
	parquet.Page
	rep, def []byte
}

func (p splitPage) RepetitionLevels() []byte { return p.rep }
func (p splitPage) DefinitionLevels() []byte { return p.def }
func (p splitPage) NumValues() int64         { return int64(len(p.rep)) }

type pageList struct{ pages []parquet.Page }

func (p *pageList) ReadPage() (parquet.Page, error) {
	if len(p.pages) == 0 {
		return nil, io.EOF
	}
	pg := p.pages[0]
	p.pages = p.pages[1:]
	return pg, nil
}
func (p *pageList) SeekToRow(int64) error { return errors.New("no seeking") }
func (p *pageList) Close() error          { return nil }

func TestColumnReaderListAcrossPages(t *testing.T) {
	type row struct {
		Name string
		IDs  []int32
	}
	page := func(rep, def []byte, vals ...int32) parquet.Page {
		return splitPage{Page: parquet.Int32Type.NewPage(0, len(vals), encoding.Int32Values(vals)), rep: rep, def: def}
	}
	pages := &pageList{pages: []parquet.Page{
		page([]byte{0, 1}, []byte{1, 1}, 1, 2),
		page(nil, nil),
		page([]byte{1, 0, 0, 1}, []byte{1, 0, 1, 1}, 3, 4, 5),
		page([]byte{1, 1, 0}, []byte{1, 1, 1}, 6, 7, 8),
	}}
	c := columnCursor{plan: &colPlan{offset: unsafe.Offsetof(row{}.IDs), kind: kindInt32, shape: shapeList}, pages: pages}
	rows := make([]row, 4)
	for i := range rows {
		if err := c.decode(unsafe.Pointer(&rows[i]), unsafe.Sizeof(row{}), 1); err != nil {
			t.Fatal(err)
		}
	}
	want := [][]int32{{1, 2, 3}, {}, {4, 5, 6, 7}, {8}}
	for i := range rows {
		if !reflect.DeepEqual(rows[i].IDs, want[i]) {
			t.Fatalf("row %d: %v, want %v", i, rows[i].IDs, want[i])
		}
	}
	if err := c.decode(unsafe.Pointer(&rows[0]), unsafe.Sizeof(row{}), 1); err == nil {
		t.Fatal("a row past the last value: no error")
	}
}
