package query

import (
	"context"
	"database/sql"
	"encoding/csv"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/outfile"
)

// Result is a fully read query result. Rows hold typed values (see
// Decimal, Temporal, Interval and Map) that print as DuckDB prints them.
type Result struct {
	Columns []string
	Types   []string // DuckDB type names
	Rows    [][]any
}

// Query runs a read-only statement and reads every row.
func (e *Engine) Query(ctx context.Context, stmt string, args ...any) (*Result, error) {
	rows, err := e.Rows(ctx, stmt, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return collect(rows)
}

// QueryAt opens an engine on snapshot m, runs one read-only statement,
// reads every row and closes the engine: for callers with a single query.
func QueryAt(ctx context.Context, l *lake.Lake, m *lake.Manifest, stmt string, args ...any) (*Result, error) {
	e, err := Open(ctx, l, m)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	return e.Query(ctx, stmt, args...)
}

func collect(rows *sql.Rows) (*Result, error) {
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	cts, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: cols}
	types := make([]*colType, len(cts))
	for i, ct := range cts {
		res.Types = append(res.Types, ct.DatabaseTypeName())
		types[i] = parseType(ct.DatabaseTypeName())
	}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, cleanError(err)
		}
		for i, v := range vals {
			vals[i] = normalize(v, types[i])
		}
		res.Rows = append(res.Rows, vals)
	}
	return res, cleanError(rows.Err())
}

// types parses res.Types, one per column (nil where a type is missing).
func (res *Result) types() []*colType {
	out := make([]*colType, len(res.Columns))
	for i := range out {
		if i < len(res.Types) {
			out[i] = parseType(res.Types[i])
		}
	}
	return out
}

func typeAt(types []*colType, i int) *colType {
	if i < len(types) {
		return types[i]
	}
	return nil
}

// column is the name of column i, for rows wider than the header.
func (res *Result) column(i int) string {
	if i < len(res.Columns) {
		return res.Columns[i]
	}
	return fmt.Sprintf("column%d", i+1)
}

// Formats understood by Write.
var Formats = []string{"table", "csv", "json", "parquet"}

// Write renders res to w as table, csv (a header line, then rows) or json
// (an array of objects, one per row, keys in column order). CSV cells and
// JSON scalars are DuckDB's own text of each value (a BLOB escaped as
// \xHH, TIMESTAMPTZ in UTC with +00, INTERVAL as "1 day 02:00:00"); in
// JSON, DECIMAL and HUGEINT values are exact numbers (a reader that parses
// numbers as float64 rounds them); lists, structs and maps are JSON in CSV
// and JSON alike; NULL is an empty cell or null.
func Write(w io.Writer, format string, res *Result) error {
	switch format {
	case "table", "":
		return writeTable(w, res)
	case "csv":
		types := res.types()
		cw := csv.NewWriter(w)
		if err := cw.Write(res.Columns); err != nil {
			return err
		}
		for _, r := range res.Rows {
			rec := make([]string, len(r))
			for i, v := range r {
				rec[i] = cellText(v, typeAt(types, i))
			}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	case "json":
		return writeJSON(w, res)
	case "parquet":
		return fmt.Errorf("format parquet needs --out FILE")
	}
	return fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
}

// writeJSON writes one object per row, a key per line and each value on
// one line.
func writeJSON(w io.Writer, res *Result) error {
	types := res.types()
	b := []byte("[")
	for r, row := range res.Rows {
		if r > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n  {"...)
		for i, v := range row {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(appendJSONString(append(b, "\n    "...), res.column(i)), ": "...)
			var err error
			if b, err = appendJSON(b, v, typeAt(types, i)); err != nil {
				return fmt.Errorf("json: row %d column %q: %w", r+1, res.column(i), err)
			}
		}
		if len(row) > 0 {
			b = append(b, "\n  "...)
		}
		b = append(b, '}')
	}
	if len(res.Rows) > 0 {
		b = append(b, '\n')
	}
	b = append(b, "]\n"...)
	_, err := w.Write(b)
	return err
}

func writeTable(w io.Writer, res *Result) error {
	const maxWidth = 60
	types := res.types()
	width := make([]int, len(res.Columns))
	for i, c := range res.Columns {
		width[i] = utf8.RuneCountInString(c)
	}
	cells := make([][]string, len(res.Rows))
	for r, row := range res.Rows {
		cells[r] = make([]string, len(row))
		for i, v := range row {
			s := cellText(v, typeAt(types, i))
			if b, ok := v.([]byte); ok {
				s = fmt.Sprintf("<%d bytes>", len(b)) // a terminal is no place for binary
			}
			s = strings.ReplaceAll(s, "\n", `\n`)
			if utf8.RuneCountInString(s) > maxWidth {
				s = string([]rune(s)[:maxWidth-1]) + "…"
			}
			cells[r][i] = s
			width[i] = max(width[i], utf8.RuneCountInString(s))
		}
	}
	line := func(vals []string) string {
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = v + strings.Repeat(" ", width[i]-utf8.RuneCountInString(v))
		}
		return strings.TrimRight(strings.Join(parts, " | "), " ") + "\n"
	}
	var b strings.Builder
	b.WriteString(line(res.Columns))
	seps := make([]string, len(width))
	for i, n := range width {
		seps[i] = strings.Repeat("-", n)
	}
	b.WriteString(strings.ReplaceAll(line(seps), " | ", "-+-"))
	for _, r := range cells {
		b.WriteString(line(r))
	}
	fmt.Fprintf(&b, "(%d row%s)\n", len(res.Rows), map[bool]string{true: "", false: "s"}[len(res.Rows) == 1])
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteFile writes res to path in the given format with our own code (never
// DuckDB's COPY, which the confinement refuses), by outfile's rules: a
// regular file is replaced atomically, a device or FIFO (/dev/stdout) is
// written through, a symbolic link is followed, and a directory or a path
// inside a lake folder (found by its marker, or one of lakes) is refused.
func WriteFile(path, format string, res *Result, lakes ...string) error {
	err := outfile.Write(path, func(w io.Writer) error {
		if format == "parquet" {
			return writeParquet(w, res) // w hides Close: pqarrow closes writers it can
		}
		return Write(w, format, res)
	}, lakes...)
	if err != nil {
		return fmt.Errorf("--out %w", err)
	}
	return nil
}

func writeParquet(w io.Writer, res *Result) error {
	types := res.types()
	fields := make([]arrow.Field, len(res.Columns))
	for i, c := range res.Columns {
		t := types[i]
		if t == nil {
			t = &colType{id: "VARCHAR"}
			types[i] = t
		}
		fields[i] = arrow.Field{Name: c, Type: arrowOf(t), Nullable: true}
	}
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for r, row := range res.Rows {
		if len(row) != len(fields) {
			return fmt.Errorf("row %d has %d values for %d columns", r+1, len(row), len(fields))
		}
		for i, v := range row {
			if err := appendValue(b.Field(i), v, types[i]); err != nil {
				return fmt.Errorf("parquet: column %q row %d: %w", res.Columns[i], r+1, err)
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithCreatedBy("cualake"))
	fw, err := pqarrow.NewFileWriter(schema, w, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return err
	}
	if err := fw.Write(rec); err != nil {
		return err
	}
	return fw.Close()
}
