package query

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
)

// arrowOf maps a DuckDB type to the Arrow type its Parquet column gets:
// the same integer widths, DECIMAL(w,s) as decimal128(w,s), HUGEINT and
// UHUGEINT as decimal128(38,0), DATE, TIME and TIMESTAMPs as date32,
// time64[us] and timestamps of their unit (TIMESTAMPTZ in UTC), UUID as
// Parquet's UUID, LIST, STRUCT and MAP as themselves. INTERVAL is its
// DuckDB text: Parquet's INTERVAL holds milliseconds and no negative
// parts. Other types (TIMETZ, BIGNUM, ENUM, BIT, UNION, JSON) are text.
func arrowOf(t *colType) arrow.DataType {
	switch t.id {
	case "BOOLEAN":
		return arrow.FixedWidthTypes.Boolean
	case "TINYINT":
		return arrow.PrimitiveTypes.Int8
	case "SMALLINT":
		return arrow.PrimitiveTypes.Int16
	case "INTEGER":
		return arrow.PrimitiveTypes.Int32
	case "BIGINT":
		return arrow.PrimitiveTypes.Int64
	case "UTINYINT":
		return arrow.PrimitiveTypes.Uint8
	case "USMALLINT":
		return arrow.PrimitiveTypes.Uint16
	case "UINTEGER":
		return arrow.PrimitiveTypes.Uint32
	case "UBIGINT":
		return arrow.PrimitiveTypes.Uint64
	case "FLOAT":
		return arrow.PrimitiveTypes.Float32
	case "DOUBLE":
		return arrow.PrimitiveTypes.Float64
	case "DECIMAL":
		return &arrow.Decimal128Type{Precision: int32(t.width), Scale: int32(t.scale)}
	case "HUGEINT", "UHUGEINT":
		return &arrow.Decimal128Type{Precision: 38, Scale: 0}
	case "BLOB", "GEOMETRY":
		return arrow.BinaryTypes.Binary
	case "DATE":
		return arrow.FixedWidthTypes.Date32
	case "TIME":
		return arrow.FixedWidthTypes.Time64us
	case "TIMESTAMP":
		return &arrow.TimestampType{Unit: arrow.Microsecond}
	case "TIMESTAMP_S":
		return &arrow.TimestampType{Unit: arrow.Second}
	case "TIMESTAMP_MS":
		return &arrow.TimestampType{Unit: arrow.Millisecond}
	case "TIMESTAMP_NS":
		return &arrow.TimestampType{Unit: arrow.Nanosecond}
	case "TIMESTAMPTZ":
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	case "UUID":
		return extensions.NewUUIDType()
	case "LIST", "ARRAY":
		return arrow.ListOf(arrowOf(t.elem))
	case "STRUCT":
		fields := make([]arrow.Field, len(t.fields))
		for i, f := range t.fields {
			fields[i] = arrow.Field{Name: f.name, Type: arrowOf(f.typ), Nullable: true}
		}
		return arrow.StructOf(fields...)
	case "MAP":
		return arrow.MapOf(arrowOf(t.key), arrowOf(t.value))
	}
	return arrow.BinaryTypes.String
}

// appendValue appends v, a Result value of type t, to b, a builder of
// arrowOf(t). A value that does not fit is an error, never a zero.
func appendValue(b array.Builder, v any, t *colType) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	mismatch := func() error { return fmt.Errorf("a %s column holds %T %v", t.id, v, v) }
	switch bb := b.(type) {
	case *array.BooleanBuilder:
		x, ok := v.(bool)
		if !ok {
			return mismatch()
		}
		bb.Append(x)
	case *array.Int8Builder:
		n, err := intIn(v, math.MinInt8, math.MaxInt8)
		if err != nil {
			return err
		}
		bb.Append(int8(n))
	case *array.Int16Builder:
		n, err := intIn(v, math.MinInt16, math.MaxInt16)
		if err != nil {
			return err
		}
		bb.Append(int16(n))
	case *array.Int32Builder:
		n, err := intIn(v, math.MinInt32, math.MaxInt32)
		if err != nil {
			return err
		}
		bb.Append(int32(n))
	case *array.Int64Builder:
		n, err := intIn(v, math.MinInt64, math.MaxInt64)
		if err != nil {
			return err
		}
		bb.Append(n)
	case *array.Uint8Builder:
		n, err := uintIn(v, math.MaxUint8)
		if err != nil {
			return err
		}
		bb.Append(uint8(n))
	case *array.Uint16Builder:
		n, err := uintIn(v, math.MaxUint16)
		if err != nil {
			return err
		}
		bb.Append(uint16(n))
	case *array.Uint32Builder:
		n, err := uintIn(v, math.MaxUint32)
		if err != nil {
			return err
		}
		bb.Append(uint32(n))
	case *array.Uint64Builder:
		n, err := uintIn(v, math.MaxUint64)
		if err != nil {
			return err
		}
		bb.Append(n)
	case *array.Float32Builder:
		f, ok := v.(float32)
		if !ok {
			return mismatch()
		}
		bb.Append(f)
	case *array.Float64Builder:
		switch f := v.(type) {
		case float64:
			bb.Append(f)
		case float32:
			bb.Append(float64(f))
		default:
			return mismatch()
		}
	case *array.Decimal128Builder:
		dt := bb.Type().(*arrow.Decimal128Type)
		var unscaled *big.Int
		switch x := v.(type) {
		case Decimal:
			if int32(x.Scale) != dt.Scale || x.Value == nil {
				return mismatch()
			}
			unscaled = x.Value
		case *big.Int:
			unscaled = x
		case int64:
			unscaled = big.NewInt(x)
		default:
			return mismatch()
		}
		n := decimal128.FromBigInt(unscaled)
		if n.BigInt().Cmp(unscaled) != 0 || !n.FitsInPrecision(dt.Precision) {
			return fmt.Errorf("%s %v does not fit Parquet's DECIMAL(%d,%d)", t.id, v, dt.Precision, dt.Scale)
		}
		bb.Append(n)
	case *array.BinaryBuilder:
		x, ok := v.([]byte)
		if !ok {
			return mismatch()
		}
		bb.Append(x)
	case *array.StringBuilder:
		bb.Append(cellText(v, t))
	case *array.Date32Builder:
		x, ok := v.(Temporal)
		if !ok {
			return mismatch()
		}
		y, m, d := x.Time.Date()
		days := time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400 // midnight: an exact division
		bb.Append(arrow.Date32(days))
	case *array.Time64Builder:
		x, ok := v.(Temporal)
		if !ok {
			return mismatch()
		}
		bb.Append(arrow.Time64(x.Time.Sub(time.Date(1, 1, 1, 0, 0, 0, 0, x.Time.Location())) / time.Microsecond))
	case *array.TimestampBuilder:
		x, ok := v.(Temporal)
		if !ok {
			return mismatch()
		}
		switch bb.Type().(*arrow.TimestampType).Unit {
		case arrow.Second:
			bb.Append(arrow.Timestamp(x.Time.Unix()))
		case arrow.Millisecond:
			bb.Append(arrow.Timestamp(x.Time.UnixMilli()))
		case arrow.Microsecond:
			bb.Append(arrow.Timestamp(x.Time.UnixMicro()))
		default:
			bb.Append(arrow.Timestamp(x.Time.UnixNano()))
		}
	case *extensions.UUIDBuilder:
		x, ok := v.(string)
		raw, err := hex.DecodeString(strings.ReplaceAll(x, "-", ""))
		if !ok || err != nil || len(raw) != 16 {
			return mismatch()
		}
		bb.AppendBytes([16]byte(raw))
	case *array.MapBuilder:
		x, ok := v.(Map)
		if !ok {
			return mismatch()
		}
		bb.Append(true)
		for _, e := range x {
			if e.Key == nil {
				return fmt.Errorf("a MAP key is NULL")
			}
			if err := appendValue(bb.KeyBuilder(), e.Key, t.key); err != nil {
				return fmt.Errorf("map key: %w", err)
			}
			if err := appendValue(bb.ItemBuilder(), e.Value, t.value); err != nil {
				return fmt.Errorf("map value: %w", err)
			}
		}
	case *array.ListBuilder:
		x, ok := v.([]any)
		if !ok {
			return mismatch()
		}
		bb.Append(true)
		for i, e := range x {
			if err := appendValue(bb.ValueBuilder(), e, t.elem); err != nil {
				return fmt.Errorf("element %d: %w", i+1, err)
			}
		}
	case *array.StructBuilder:
		x, ok := v.(map[string]any)
		if !ok {
			return mismatch()
		}
		bb.Append(true)
		for i, f := range t.fields {
			if err := appendValue(bb.FieldBuilder(i), x[f.name], f.typ); err != nil {
				return fmt.Errorf("field %s: %w", f.name, err)
			}
		}
	default:
		return fmt.Errorf("no Parquet writer for %s", t.id)
	}
	return nil
}

// intIn returns an integer value when it lies in [lo, hi].
func intIn(v any, lo, hi int64) (int64, error) {
	var n int64
	switch x := v.(type) {
	case int8:
		n = int64(x)
	case int16:
		n = int64(x)
	case int32:
		n = int64(x)
	case int64:
		n = x
	case int:
		n = int64(x)
	case uint8:
		n = int64(x)
	case uint16:
		n = int64(x)
	case uint32:
		n = int64(x)
	case uint64:
		if x > math.MaxInt64 {
			return 0, fmt.Errorf("%d is out of range", x)
		}
		n = int64(x)
	default:
		return 0, fmt.Errorf("an integer column holds %T %v", v, v)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%d is out of range", n)
	}
	return n, nil
}

// uintIn returns a non-negative integer value when it is at most hi.
func uintIn(v any, hi uint64) (uint64, error) {
	if x, ok := v.(uint64); ok {
		if x > hi {
			return 0, fmt.Errorf("%d is out of range", x)
		}
		return x, nil
	}
	n, err := intIn(v, 0, math.MaxInt64)
	if err != nil {
		return 0, err
	}
	if uint64(n) > hi {
		return 0, fmt.Errorf("%d is out of range", n)
	}
	return uint64(n), nil
}
