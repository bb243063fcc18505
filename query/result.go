package query

import (
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/cualake/cualake/pipeline/outfile"
)

// Result is a fully read query result.
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
	for _, ct := range cts {
		res.Types = append(res.Types, ct.DatabaseTypeName())
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
			vals[i] = normalize(v)
		}
		res.Rows = append(res.Rows, vals)
	}
	return res, cleanError(rows.Err())
}

// normalize turns driver values into JSON-friendly Go values.
func normalize(v any) any {
	switch x := v.(type) {
	case *big.Int:
		if x.IsInt64() {
			return x.Int64()
		}
		return x.String()
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case []byte:
		if utf8.Valid(x) {
			return string(x)
		}
		return x
	}
	return v
}

// Formats understood by Write.
var Formats = []string{"table", "csv", "json", "parquet"}

// Write renders res to w as table, csv (a header line, then rows) or json
// (an array of objects, one per row).
func Write(w io.Writer, format string, res *Result) error {
	switch format {
	case "table", "":
		return writeTable(w, res)
	case "csv":
		cw := csv.NewWriter(w)
		if err := cw.Write(res.Columns); err != nil {
			return err
		}
		for _, r := range res.Rows {
			rec := make([]string, len(r))
			for i, v := range r {
				rec[i] = cell(v)
			}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	case "json":
		objs := make([]map[string]any, 0, len(res.Rows))
		for _, r := range res.Rows {
			o := make(map[string]any, len(r))
			for i, v := range r {
				o[res.Columns[i]] = v
			}
			objs = append(objs, o)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(objs)
	case "parquet":
		return fmt.Errorf("format parquet needs --out FILE")
	}
	return fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(Formats, ", "))
}

func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []any, map[string]any:
		b, _ := json.Marshal(x)
		return string(b)
	case []byte:
		return fmt.Sprintf("<%d bytes>", len(x))
	}
	return fmt.Sprint(v)
}

func writeTable(w io.Writer, res *Result) error {
	const maxWidth = 60
	width := make([]int, len(res.Columns))
	for i, c := range res.Columns {
		width[i] = utf8.RuneCountInString(c)
	}
	cells := make([][]string, len(res.Rows))
	for r, row := range res.Rows {
		cells[r] = make([]string, len(row))
		for i, v := range row {
			s := strings.ReplaceAll(cell(v), "\n", `\n`)
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

// arrowOf maps a DuckDB type name to an Arrow type.
func arrowOf(t string) arrow.DataType {
	if strings.HasSuffix(t, "[]") {
		return arrow.ListOf(arrowOf(strings.TrimSuffix(t, "[]")))
	}
	switch t {
	case "BOOLEAN":
		return arrow.FixedWidthTypes.Boolean
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "HUGEINT":
		return arrow.PrimitiveTypes.Int64
	case "FLOAT", "DOUBLE":
		return arrow.PrimitiveTypes.Float64
	case "BLOB":
		return arrow.BinaryTypes.Binary
	}
	if strings.HasPrefix(t, "DECIMAL") {
		return arrow.PrimitiveTypes.Float64
	}
	return arrow.BinaryTypes.String
}

func writeParquet(w io.Writer, res *Result) error {
	fields := make([]arrow.Field, len(res.Columns))
	for i, c := range res.Columns {
		fields[i] = arrow.Field{Name: c, Type: arrowOf(res.Types[i]), Nullable: true}
	}
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, row := range res.Rows {
		for i, v := range row {
			appendValue(b.Field(i), v)
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

func appendValue(b array.Builder, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch bb := b.(type) {
	case *array.BooleanBuilder:
		x, _ := v.(bool)
		bb.Append(x)
	case *array.Int64Builder:
		bb.Append(toInt64(v))
	case *array.Float64Builder:
		bb.Append(toFloat64(v))
	case *array.BinaryBuilder:
		switch x := v.(type) {
		case []byte:
			bb.Append(x)
		default:
			bb.Append([]byte(cell(x)))
		}
	case *array.StringBuilder:
		bb.Append(cell(v))
	case *array.ListBuilder:
		xs, _ := v.([]any)
		bb.Append(true)
		for _, x := range xs {
			appendValue(bb.ValueBuilder(), x)
		}
	default:
		b.AppendNull()
	}
}

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return x
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case uint64:
		return int64(x)
	case int:
		return int64(x)
	}
	return 0
}

func toFloat64(v any) float64 {
	switch x := v.(type) {
	case float32:
		return float64(x)
	case float64:
		return x
	}
	return float64(toInt64(v))
}
