package notebook

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/cualake/cualake/query"
)

// formatValue renders one result value as text, the same way in HTML
// tables, ipynb text/plain outputs and chart attributes, so that a report's
// bytes depend only on the data.
func formatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return formatFloat(x)
	case float32:
		return formatFloat(float64(x))
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprint(x)
	case []byte:
		return fmt.Sprintf("<%d bytes>", len(x))
	case query.Decimal, query.Temporal, query.Interval:
		return x.(fmt.Stringer).String() // DuckDB's text, unquoted
	case fmt.Stringer:
		if _, ok := v.(json.Marshaler); !ok {
			return x.String()
		}
	}
	// Lists, structs and maps print as JSON: encoding/json sorts map keys,
	// which keeps the output deterministic.
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// formatFloat prints integral values without a fraction and others with six
// significant digits.
func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case f == math.Trunc(f) && math.Abs(f) < 1e15:
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return strconv.FormatFloat(f, 'g', 6, 64)
}

// coord prints an SVG coordinate with two decimals.
func coord(f float64) string {
	s := strconv.FormatFloat(f, 'f', 2, 64)
	if s == "-0.00" {
		return "0.00"
	}
	return s
}

// numeric returns v as a float64 when it is a number.
func numeric(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case float32:
		return numeric(float64(x))
	case int:
		return float64(x), true
	case int8:
		return float64(x), true
	case int16:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint8:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case interface{ Float64() float64 }: // query.Decimal
		return numeric(x.Float64())
	}
	return 0, false
}
