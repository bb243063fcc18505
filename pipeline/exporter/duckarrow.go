package exporter

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// duckArrow maps a DuckDB type name, as duckdb-go's DatabaseTypeName writes
// it (INTEGER, VARCHAR[], STRUCT("role" VARCHAR, "content" VARCHAR)[]), to
// the Arrow type an export writes. Types without a faithful Hugging Face
// form (DECIMAL, HUGEINT, MAP, UNION, fixed-size arrays, time zones,
// intervals, UUID, ...) are an error; CAST them in the query.
func duckArrow(t string) (arrow.DataType, error) {
	p := &typeParser{s: t}
	dt, err := p.parse()
	if err == nil && p.i != len(p.s) {
		err = fmt.Errorf("unexpected %q", p.s[p.i:])
	}
	if err != nil {
		return nil, fmt.Errorf("DuckDB type %s: %w", t, err)
	}
	return dt, nil
}

type typeParser struct {
	s string
	i int
}

var duckScalars = map[string]arrow.DataType{
	"BOOLEAN": arrow.FixedWidthTypes.Boolean,
	"TINYINT": arrow.PrimitiveTypes.Int8, "SMALLINT": arrow.PrimitiveTypes.Int16,
	"INTEGER": arrow.PrimitiveTypes.Int32, "BIGINT": arrow.PrimitiveTypes.Int64,
	"UTINYINT": arrow.PrimitiveTypes.Uint8, "USMALLINT": arrow.PrimitiveTypes.Uint16,
	"UINTEGER": arrow.PrimitiveTypes.Uint32, "UBIGINT": arrow.PrimitiveTypes.Uint64,
	"FLOAT": arrow.PrimitiveTypes.Float32, "DOUBLE": arrow.PrimitiveTypes.Float64,
	"VARCHAR": arrow.BinaryTypes.String, "ENUM": arrow.BinaryTypes.String, "BLOB": arrow.BinaryTypes.Binary,
	"DATE": arrow.FixedWidthTypes.Date32, "TIMESTAMP": arrow.FixedWidthTypes.Timestamp_us,
}

func (p *typeParser) parse() (arrow.DataType, error) {
	var dt arrow.DataType
	if strings.HasPrefix(p.s[p.i:], "STRUCT(") {
		p.i += len("STRUCT(")
		var fields []arrow.Field
		for {
			name, err := p.ident()
			if err != nil {
				return nil, err
			}
			if p.i >= len(p.s) || p.s[p.i] != ' ' {
				return nil, fmt.Errorf("struct field %q has no type", name)
			}
			p.i++
			ft, err := p.parse()
			if err != nil {
				return nil, err
			}
			fields = append(fields, arrow.Field{Name: name, Type: ft, Nullable: true})
			if strings.HasPrefix(p.s[p.i:], ", ") {
				p.i += 2
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == ')' {
				p.i++
				break
			}
			return nil, fmt.Errorf("struct: unexpected %q", p.s[p.i:])
		}
		dt = arrow.StructOf(fields...)
	} else {
		j := p.i
		for j < len(p.s) && (p.s[j] >= 'A' && p.s[j] <= 'Z' || p.s[j] >= '0' && p.s[j] <= '9' || p.s[j] == '_') {
			j++
		}
		name := p.s[p.i:j]
		p.i = j
		var ok bool
		if dt, ok = duckScalars[name]; !ok {
			return nil, fmt.Errorf("%s has no Hugging Face form here; CAST it (e.g. to DOUBLE or VARCHAR)", name)
		}
	}
	for strings.HasPrefix(p.s[p.i:], "[") {
		if !strings.HasPrefix(p.s[p.i:], "[]") {
			return nil, fmt.Errorf("fixed-size arrays have no Hugging Face form here; CAST to a list")
		}
		p.i += 2
		dt = arrow.ListOf(dt)
	}
	return dt, nil
}

// ident reads a struct field name: "quoted" with "" for a quote, or bare.
func (p *typeParser) ident() (string, error) {
	if p.i < len(p.s) && p.s[p.i] == '"' {
		var b strings.Builder
		for j := p.i + 1; j < len(p.s); j++ {
			if p.s[j] != '"' {
				b.WriteByte(p.s[j])
				continue
			}
			if j+1 < len(p.s) && p.s[j+1] == '"' {
				b.WriteByte('"')
				j++
				continue
			}
			p.i = j + 1
			return b.String(), nil
		}
		return "", fmt.Errorf("unterminated field name")
	}
	j := strings.IndexByte(p.s[p.i:], ' ')
	if j <= 0 {
		return "", fmt.Errorf("struct field without a name")
	}
	name := p.s[p.i : p.i+j]
	p.i += j
	return name, nil
}

// appendValue appends one value as duckdb-go scans it (bool, the sized
// integers, float32/64, string, []byte, time.Time, []any for lists,
// map[string]any for structs) to a builder of the type duckArrow gave.
func appendValue(b array.Builder, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	bad := func() error { return fmt.Errorf("value %v (%T) for a %s column", v, v, b.Type()) }
	switch bb := b.(type) {
	case *array.BooleanBuilder:
		x, ok := v.(bool)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.Int8Builder:
		x, ok := v.(int8)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.Int16Builder:
		x, ok := v.(int16)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.Int32Builder:
		x, ok := v.(int32)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.Int64Builder:
		x, ok := v.(int64)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.Uint8Builder:
		x, ok := v.(uint8)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.Uint16Builder:
		x, ok := v.(uint16)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.Uint32Builder:
		x, ok := v.(uint32)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.Uint64Builder:
		x, ok := v.(uint64)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.Float32Builder:
		x, ok := v.(float32)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.Float64Builder:
		x, ok := v.(float64)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.StringBuilder:
		x, ok := v.(string)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.BinaryBuilder:
		x, ok := v.([]byte)
		if !ok {
			return bad()
		}
		bb.Append(x)
	case *array.Date32Builder:
		x, ok := v.(time.Time)
		if !ok {
			return bad()
		}
		bb.Append(arrow.Date32FromTime(x))
	case *array.TimestampBuilder:
		x, ok := v.(time.Time)
		if !ok {
			return bad()
		}
		bb.Append(arrow.Timestamp(x.UnixMicro()))
	case *array.ListBuilder:
		xs, ok := v.([]any)
		if !ok {
			return bad()
		}
		bb.Append(true)
		for _, x := range xs {
			if err := appendValue(bb.ValueBuilder(), x); err != nil {
				return err
			}
		}
	case *array.StructBuilder:
		x, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		bb.Append(true)
		st := bb.Type().(*arrow.StructType)
		for i, f := range st.Fields() {
			if err := appendValue(bb.FieldBuilder(i), x[f.Name]); err != nil {
				return fmt.Errorf("field %s: %w", f.Name, err)
			}
		}
	default:
		return bad()
	}
	return nil
}
