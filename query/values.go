package query

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// Values in Result.Rows, by DuckDB type: booleans, integers and floats as
// the Go types duckdb-go gives; HUGEINT, UHUGEINT and BIGNUM as int64 when
// they fit, else *big.Int; DECIMAL as Decimal; DATE, TIME, TIMETZ,
// TIMESTAMP* and TIMESTAMPTZ as Temporal; INTERVAL as Interval; UUID as
// its canonical string; BLOB as []byte; LIST and ARRAY as []any; STRUCT as
// map[string]any; MAP as Map. Each prints (String) as DuckDB's
// CAST(x AS VARCHAR) does, with TimeZone UTC.

// Decimal is an exact DECIMAL value: Value × 10^-Scale.
type Decimal struct {
	Value        *big.Int
	Width, Scale uint8
}

// String is the exact value with Scale digits after the point, as DuckDB
// prints it ("1.00" for DECIMAL(10,2)).
func (d Decimal) String() string {
	if d.Value == nil {
		return "0"
	}
	digits := new(big.Int).Abs(d.Value).String()
	sign := ""
	if d.Value.Sign() < 0 {
		sign = "-"
	}
	s := int(d.Scale)
	if s == 0 {
		return sign + digits
	}
	if len(digits) <= s {
		digits = strings.Repeat("0", s-len(digits)+1) + digits
	}
	return sign + digits[:len(digits)-s] + "." + digits[len(digits)-s:]
}

// Float64 is the nearest float64, for charts and arithmetic.
func (d Decimal) Float64() float64 {
	if d.Value == nil {
		return 0
	}
	f, _ := new(big.Float).Quo(new(big.Float).SetInt(d.Value),
		new(big.Float).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale)), nil))).Float64()
	return f
}

// MarshalJSON writes the exact value as a JSON number.
func (d Decimal) MarshalJSON() ([]byte, error) { return []byte(d.String()), nil }

// Temporal is a DATE, TIME, TIMETZ, TIMESTAMP, TIMESTAMP_S, TIMESTAMP_MS,
// TIMESTAMP_NS or TIMESTAMPTZ value (Type); TIMESTAMPTZ is an instant and
// prints in UTC.
type Temporal struct {
	Time time.Time
	Type string
}

// String prints the value as DuckDB does.
func (t Temporal) String() string {
	switch t.Type {
	case "DATE":
		d, bc := dateText(t.Time)
		return d + bc
	case "TIME":
		return clockText(t.Time.Sub(time.Date(1, 1, 1, 0, 0, 0, 0, t.Time.Location())), 6)
	case "TIMETZ":
		_, off := t.Time.Zone()
		return clockText(t.Time.Sub(time.Date(1, 1, 1, 0, 0, 0, 0, t.Time.Location())), 6) + offsetText(off)
	case "TIMESTAMPTZ":
		u := t.Time.UTC()
		return timestampText(u, 6) + "+00"
	}
	digits := map[string]int{"TIMESTAMP_S": 0, "TIMESTAMP_MS": 3, "TIMESTAMP_NS": 9}
	n, ok := digits[t.Type]
	if !ok {
		n = 6
	}
	return timestampText(t.Time, n)
}

// MarshalJSON writes the value as a JSON string of its text.
func (t Temporal) MarshalJSON() ([]byte, error) { return json.Marshal(t.String()) }

func dateText(t time.Time) (date, bc string) {
	y, m, d := t.Date()
	if y <= 0 { // year 0 is 1 BC
		y, bc = 1-y, " (BC)"
	}
	return fmt.Sprintf("%04d-%02d-%02d", y, m, d), bc
}

func timestampText(t time.Time, digits int) string {
	d, bc := dateText(t)
	clock := time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute +
		time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond())
	return d + bc + " " + clockText(clock, digits)
}

// clockText prints a time of day as HH:MM:SS with up to digits fractional
// digits, trailing zeros dropped.
func clockText(d time.Duration, digits int) string {
	ns := int64(d)
	s := fmt.Sprintf("%02d:%02d:%02d", ns/int64(time.Hour), ns/int64(time.Minute)%60, ns/int64(time.Second)%60)
	return s + fraction(ns%int64(time.Second), digits)
}

// fraction prints ns (under a second) with digits digits, trailing zeros
// dropped, or "" when nothing is left.
func fraction(ns int64, digits int) string {
	if digits == 0 {
		return ""
	}
	f := fmt.Sprintf("%09d", ns)[:digits]
	f = strings.TrimRight(f, "0")
	if f == "" {
		return ""
	}
	return "." + f
}

func offsetText(off int) string {
	sign := "+"
	if off < 0 {
		sign, off = "-", -off
	}
	s := fmt.Sprintf("%s%02d", sign, off/3600)
	if m, sec := off/60%60, off%60; m != 0 || sec != 0 {
		s += fmt.Sprintf(":%02d", m)
		if sec != 0 {
			s += fmt.Sprintf(":%02d", sec)
		}
	}
	return s
}

// Interval is an INTERVAL: months, days and microseconds, each signed.
type Interval struct {
	Months, Days int32
	Micros       int64
}

// String prints the interval as DuckDB does: "1 year 2 months 3 days
// 04:05:06.789", "00:00:00" when zero.
func (iv Interval) String() string {
	var parts []string
	unit := func(n int64, name string) {
		if n == 0 {
			return
		}
		if n != 1 && n != -1 {
			name += "s"
		}
		parts = append(parts, fmt.Sprintf("%d %s", n, name))
	}
	unit(int64(iv.Months/12), "year")
	unit(int64(iv.Months%12), "month")
	unit(int64(iv.Days), "day")
	if iv.Micros != 0 {
		sign, us := "", uint64(iv.Micros)
		if iv.Micros < 0 {
			sign, us = "-", uint64(-(iv.Micros+1))+1 // no overflow at math.MinInt64
		}
		const perSecond = 1_000_000
		s := fmt.Sprintf("%s%02d:%02d:%02d", sign, us/(3600*perSecond), us/(60*perSecond)%60, us/perSecond%60)
		parts = append(parts, s+fraction(int64(us%perSecond)*1000, 6))
	}
	if len(parts) == 0 {
		return "00:00:00"
	}
	return strings.Join(parts, " ")
}

// MarshalJSON writes the interval as a JSON string of its text.
func (iv Interval) MarshalJSON() ([]byte, error) { return json.Marshal(iv.String()) }

// Map is a DuckDB MAP, its entries in order.
type Map []MapEntry

// MapEntry is one key and value of a Map.
type MapEntry struct {
	Key, Value any
}

// MarshalJSON writes the map as a JSON object, keys as their text.
func (m Map) MarshalJSON() ([]byte, error) { return appendJSON(nil, m, nil) }

// colType is a DuckDB type as duckdb-go spells it (DatabaseTypeName): a
// name, DECIMAL(w,s), T[], T[n], STRUCT("a" T, ...), MAP(K, V) or
// UNION("a" T, ...).
type colType struct {
	id           string // LIST, ARRAY, STRUCT, MAP, UNION, DECIMAL or the type's name
	width, scale int    // DECIMAL
	elem         *colType
	key, value   *colType
	fields       []typeField // STRUCT, UNION
}

type typeField struct {
	name string
	typ  *colType
}

func (t *colType) field(name string) *colType {
	if t == nil {
		return nil
	}
	for _, f := range t.fields {
		if f.name == name {
			return f.typ
		}
	}
	return nil
}

func (t *colType) is(ids ...string) bool {
	if t == nil {
		return false
	}
	for _, id := range ids {
		if t.id == id {
			return true
		}
	}
	return false
}

// parseType reads a type name; a spelling it does not know is kept as one
// opaque name, whose values are written as text.
func parseType(s string) *colType {
	p := typeParser{s: s}
	t, ok := p.parse()
	if !ok || p.i != len(s) {
		return &colType{id: s}
	}
	return t
}

type typeParser struct {
	s string
	i int
}

func (p *typeParser) eat(tok string) bool {
	if strings.HasPrefix(p.s[p.i:], tok) {
		p.i += len(tok)
		return true
	}
	return false
}

func (p *typeParser) parse() (*colType, bool) {
	t, ok := p.base()
	for ok && p.eat("[") {
		j := strings.IndexByte(p.s[p.i:], ']')
		if j < 0 {
			return nil, false
		}
		size := p.s[p.i : p.i+j]
		p.i += j + 1
		id := "LIST"
		if size != "" {
			if _, err := strconv.Atoi(size); err != nil {
				return nil, false
			}
			id = "ARRAY"
		}
		t = &colType{id: id, elem: t}
	}
	return t, ok
}

func (p *typeParser) base() (*colType, bool) {
	j := p.i
	for j < len(p.s) && (p.s[j] == '_' || p.s[j] >= 'A' && p.s[j] <= 'Z' || p.s[j] >= 'a' && p.s[j] <= 'z' || p.s[j] >= '0' && p.s[j] <= '9') {
		j++
	}
	t := &colType{id: p.s[p.i:j]}
	p.i = j
	if t.id == "" {
		return nil, false
	}
	if !p.eat("(") {
		return t, true
	}
	switch t.id {
	case "DECIMAL":
		var err error
		k := strings.IndexByte(p.s[p.i:], ')')
		if k < 0 {
			return nil, false
		}
		ws, ss, found := strings.Cut(p.s[p.i:p.i+k], ",")
		if !found {
			return nil, false
		}
		if t.width, err = strconv.Atoi(strings.TrimSpace(ws)); err != nil {
			return nil, false
		}
		if t.scale, err = strconv.Atoi(strings.TrimSpace(ss)); err != nil {
			return nil, false
		}
		p.i += k + 1
		return t, true
	case "MAP":
		var ok bool
		if t.key, ok = p.parse(); !ok || !p.eat(", ") {
			return nil, false
		}
		if t.value, ok = p.parse(); !ok || !p.eat(")") {
			return nil, false
		}
		return t, true
	case "STRUCT", "UNION":
		for {
			name, ok := p.quoted()
			if !ok || !p.eat(" ") {
				return nil, false
			}
			ft, ok := p.parse()
			if !ok {
				return nil, false
			}
			t.fields = append(t.fields, typeField{name, ft})
			if p.eat(")") {
				return t, true
			}
			if !p.eat(", ") {
				return nil, false
			}
		}
	}
	return nil, false
}

// quoted reads a "name" with "" for a quote inside.
func (p *typeParser) quoted() (string, bool) {
	if !p.eat(`"`) {
		return "", false
	}
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		if c != '"' {
			b.WriteByte(c)
			continue
		}
		if !p.eat(`"`) {
			return b.String(), true
		}
		b.WriteByte('"')
	}
	return "", false
}

// normalize turns a driver value of type t into the value Result.Rows
// holds for it (see above).
func normalize(v any, t *colType) any {
	if v == nil {
		return nil
	}
	switch x := v.(type) {
	case duckdb.Decimal:
		return Decimal{Value: x.Value, Width: x.Width, Scale: x.Scale}
	case *big.Int:
		if x.IsInt64() {
			return x.Int64()
		}
		return x
	case time.Time:
		typ := "TIMESTAMPTZ" // an instant, when the type is not known
		if t != nil && t.id != "" {
			typ = t.id
		}
		return Temporal{Time: x, Type: typ}
	case duckdb.Interval:
		return Interval{Months: x.Months, Days: x.Days, Micros: x.Micros}
	case duckdb.UUID:
		return uuidText(x[:])
	case *duckdb.UUID:
		return uuidText(x[:])
	case []byte:
		if t.is("UUID") && len(x) == 16 {
			return uuidText(x)
		}
		return x
	case []any:
		var elem *colType
		if t.is("LIST", "ARRAY") {
			elem = t.elem
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e, elem)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e, t.field(k))
		}
		return out
	case duckdb.OrderedMap:
		var kt, vt *colType
		if t.is("MAP") {
			kt, vt = t.key, t.value
		}
		keys, vals := x.Keys(), x.Values()
		out := make(Map, len(keys))
		for i := range keys {
			out[i] = MapEntry{Key: normalize(keys[i], kt), Value: normalize(vals[i], vt)}
		}
		return out
	case duckdb.Union:
		return normalize(x.Value, t.field(x.Tag))
	}
	return v
}

func uuidText(b []byte) string {
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// blobText escapes bytes as DuckDB prints a BLOB: printable ASCII stays,
// other bytes and the quotes and backslash become \xHH. DuckDB's
// CAST(text AS BLOB) reads it back.
func blobText(b []byte) string {
	var s strings.Builder
	for _, c := range b {
		if c >= 32 && c <= 126 && c != '\'' && c != '"' && c != '\\' {
			s.WriteByte(c)
		} else {
			fmt.Fprintf(&s, `\x%02X`, c)
		}
	}
	return s.String()
}

// floatText prints a float as Go does, NaN and infinities as DuckDB does.
func floatText(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}

// cellText is a value as one CSV or table cell: DuckDB's text for scalars,
// JSON for lists, structs and maps, "" for NULL.
func cellText(v any, t *colType) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return blobText(x)
	case float64:
		return floatText(x, 64)
	case float32:
		return floatText(float64(x), 32)
	case []any, map[string]any, Map:
		b, err := appendJSON(nil, x, t)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	}
	return fmt.Sprint(v)
}

// appendJSON appends v (of type t, nil when unknown) as JSON: decimals and
// big integers as exact numbers, other scalars as DuckDB's text, structs'
// fields in their type's order, maps as objects keyed by the keys' text.
func appendJSON(b []byte, v any, t *colType) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case int8, int16, int32, int64, int, uint8, uint16, uint32, uint64, uint:
		return fmt.Append(b, x), nil
	case float64, float32:
		f, bits := 0.0, 64
		if g, ok := x.(float32); ok {
			f, bits = float64(g), 32
		} else {
			f = x.(float64)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return appendJSONString(b, floatText(f, bits)), nil
		}
		j, err := json.Marshal(x)
		return append(b, j...), err
	case string:
		return appendJSONString(b, x), nil
	case []byte:
		return appendJSONString(b, blobText(x)), nil
	case Decimal:
		return append(b, x.String()...), nil
	case *big.Int:
		return append(b, x.String()...), nil
	case Temporal, Interval:
		return appendJSONString(b, fmt.Sprint(x)), nil
	case []any:
		var elem *colType
		if t.is("LIST", "ARRAY") {
			elem = t.elem
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSON(b, e, elem); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		var keys []string
		seen := map[string]bool{}
		if t.is("STRUCT") {
			for _, f := range t.fields {
				if _, ok := x[f.name]; ok {
					keys, seen[f.name] = append(keys, f.name), true
				}
			}
		}
		var rest []string
		for k := range x {
			if !seen[k] {
				rest = append(rest, k)
			}
		}
		sort.Strings(rest)
		keys = append(keys, rest...)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(appendJSONString(b, k), ':')
			var err error
			if b, err = appendJSON(b, x[k], t.field(k)); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case Map:
		var kt, vt *colType
		if t.is("MAP") {
			kt, vt = t.key, t.value
		}
		b = append(b, '{')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(appendJSONString(b, cellText(e.Key, kt)), ':')
			var err error
			if b, err = appendJSON(b, e.Value, vt); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	j, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%T: %w", v, err)
	}
	return append(b, j...), nil
}

// appendJSONString appends s as a JSON string, without encoding/json's
// escaping of <, > and &.
func appendJSONString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
