package query

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// typedColumn is one column of the typed round-trip query: its DuckDB type
// and a SQL literal per row (the last row is all NULL).
type typedColumn struct {
	name, typ string
	values    []string
	nested    bool // a LIST, STRUCT or MAP: JSON text in CSV, JSON values in JSON
}

var typedColumns = []typedColumn{
	{"dec", "DECIMAL(38,10)", []string{"-1234567890123456789012345678.0123456789", "0.0000000001"}, false},
	{"dec_small", "DECIMAL(4,1)", []string{"1.5", "-0.5"}, false},
	{"dec_scale", "DECIMAL(10,2)", []string{"1", "0.05"}, false},
	{"literal", "DECIMAL(2,1)", []string{"0.5", "0.0"}, false},
	{"huge", "HUGEINT", []string{"-12345678901234567890123456789012345678", "9223372036854775808"}, false},
	{"uhuge", "UHUGEINT", []string{"18446744073709551616", "0"}, false},
	{"small", "HUGEINT", []string{"42", "-1"}, false},
	{"ubig", "UBIGINT", []string{"18446744073709551615", "1"}, false},
	{"dt", "DATE", []string{"DATE '2024-02-29'", "DATE '0044-03-15 (BC)'"}, false},
	{"tm", "TIME", []string{"TIME '13:14:15.123456'", "TIME '00:00:00'"}, false},
	{"ts", "TIMESTAMP", []string{"TIMESTAMP '2024-01-02 03:04:05.678901'", "TIMESTAMP '1969-12-31 23:59:59.5'"}, false},
	{"ts_ns", "TIMESTAMP_NS", []string{"TIMESTAMP_NS '2024-01-02 03:04:05.123456789'", "TIMESTAMP_NS '2024-01-02 03:04:05'"}, false},
	{"ts_ms", "TIMESTAMP_MS", []string{"TIMESTAMP_MS '2024-01-02 03:04:05.12'", "TIMESTAMP_MS '2000-01-01 00:00:00'"}, false},
	{"ts_s", "TIMESTAMP_S", []string{"TIMESTAMP_S '2024-01-02 03:04:05'", "TIMESTAMP_S '1900-01-01 00:00:00'"}, false},
	{"tstz", "TIMESTAMPTZ", []string{"TIMESTAMPTZ '2024-01-02 03:04:05.678901+05'", "TIMESTAMPTZ '2024-06-30 23:00:00-02:30'"}, false},
	{"iv", "INTERVAL", []string{"INTERVAL '1 year 2 months 3 days 04:05:06.789'", "INTERVAL '-1 year 2 months -3 days -100:00:00.000001'"}, false},
	{"iv_zero", "INTERVAL", []string{"INTERVAL '0 seconds'", "INTERVAL '1 month'"}, false},
	{"ttz", "TIMETZ", []string{"TIMETZ '13:14:15.5+02:30'", "TIMETZ '00:00:00+00'"}, false},
	{"enum", "ENUM('x', 'y')", []string{"'y'", "'x'"}, false},
	{"bits", "BIT", []string{"'101'", "'0'"}, false},
	{"u", "UUID", []string{"'12345678-1234-5678-1234-567812345678'", "'00000000-0000-0000-0000-000000000000'"}, false},
	{"b", "BLOB", []string{"from_hex('AA00616227225C20C3A90A7F')", "'plain text'::BLOB"}, false},
	{"s", "VARCHAR", []string{"'it''s \"quoted\", <b>'", "''"}, false},
	{"l_dec", "DECIMAL(10,2)[]", []string{"[1.25, NULL]", "[]"}, true},
	{"l_huge", "HUGEINT[]", []string{"[12345678901234567890123456789012345678, -1]", "[NULL]"}, true},
	{"arr", "INTEGER[2]", []string{"[1, 2]", "[NULL, 3]"}, true},
	{"l_dt", "DATE[]", []string{"[DATE '2020-01-01', NULL]", "[]"}, true},
	{"l_ts", "TIMESTAMPTZ[]", []string{"[TIMESTAMPTZ '2020-01-01 00:00:00+01']", "[NULL]"}, true},
	{"st", "STRUCT(z DECIMAL(4,1), a DATE, c TIMESTAMP, d INTERVAL, e UUID, f HUGEINT, g TIME, h VARCHAR[])",
		[]string{"{'z': 1.5, 'a': DATE '2020-01-01', 'c': TIMESTAMP '2020-01-01 01:02:03.5', 'd': INTERVAL '1 day', 'e': '12345678-1234-5678-1234-567812345678', 'f': 12345678901234567890123, 'g': TIME '01:02:03', 'h': ['x', NULL]}",
			"{'z': NULL, 'a': NULL, 'c': NULL, 'd': NULL, 'e': NULL, 'f': NULL, 'g': NULL, 'h': NULL}"}, true},
	{"mp", "MAP(VARCHAR, DECIMAL(4,1))", []string{"MAP {'k': 1.5, 'j': NULL}", "MAP {}"}, true},
	{"mp_int", "MAP(INTEGER, DATE[])", []string{"MAP {2: [DATE '2020-01-01'], 1: []}", "MAP {}"}, true},
	{"l_st", "STRUCT(x INTERVAL, y DECIMAL(38,0))[]", []string{"[{'x': INTERVAL '2 hours', 'y': 12345678901234567890123456789012345678}]", "[NULL]"}, true},
}

// typedSQL is the round-trip query: an ordering column i, then every typed
// column, one row per value and a last row of NULLs.
func typedSQL() string {
	var rows []string
	for r := 0; r <= 2; r++ {
		cols := []string{fmt.Sprintf("%d AS i", r)}
		for _, c := range typedColumns {
			v := "NULL"
			if r < len(c.values) {
				v = c.values[r]
			}
			cols = append(cols, fmt.Sprintf("CAST(%s AS %s) AS %s", v, c.typ, c.name))
		}
		rows = append(rows, "SELECT "+strings.Join(cols, ", "))
	}
	return "SELECT * FROM (" + strings.Join(rows, " UNION ALL ") + ") ORDER BY i"
}

// duckText is DuckDB's own rendering of every typed column (NULL as nil),
// the reference each output must give back.
func duckText(t *testing.T, ctx context.Context, e *Engine) [][]any {
	t.Helper()
	var casts []string
	for _, c := range typedColumns {
		casts = append(casts, "CAST("+c.name+" AS VARCHAR)")
	}
	res, err := e.Query(ctx, "SELECT "+strings.Join(casts, ", ")+" FROM ("+typedSQL()+") ORDER BY i")
	if err != nil {
		t.Fatal(err)
	}
	return res.Rows
}

// readBack runs stmt in an unconfined DuckDB (UTC, like the engine) and
// returns its rows as DuckDB's VARCHAR text.
func readBack(t *testing.T, ctx context.Context, stmt string, args ...any) [][]any {
	t.Helper()
	db, conn, err := internal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET TimeZone = 'UTC'"); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.QueryContext(ctx, stmt, args...)
	if err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	defer rows.Close()
	res, err := collect(rows)
	if err != nil {
		t.Fatal(err)
	}
	return res.Rows
}

func compareText(t *testing.T, format string, got, want [][]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", format, len(got), len(want))
	}
	for r := range want {
		for i, c := range typedColumns {
			if fmt.Sprint(got[r][i]) != fmt.Sprint(want[r][i]) {
				t.Errorf("%s: row %d column %s (%s): got %v, want DuckDB's %v", format, r, c.name, c.typ, got[r][i], want[r][i])
			}
		}
	}
}

func typedResult(t *testing.T) (context.Context, *Engine, *Result, [][]any) {
	t.Helper()
	ctx := context.Background()
	l, _, m := fixture(t, 1)
	e, err := Open(ctx, l, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	res, err := e.Query(ctx, typedSQL())
	if err != nil {
		t.Fatal(err)
	}
	return ctx, e, res, duckText(t, ctx, e)
}

// TestTypedParquet: every typed value, nested ones and NULLs, written by
// writeParquet, reads back in DuckDB as the same value, in a proper
// Parquet type.
func TestTypedParquet(t *testing.T) {
	ctx, _, res, want := typedResult(t)
	path := filepath.Join(t.TempDir(), "typed.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeParquet(f, res); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var casts []string
	for _, c := range typedColumns {
		casts = append(casts, "CAST("+c.name+" AS VARCHAR)")
	}
	got := readBack(t, ctx, "SELECT "+strings.Join(casts, ", ")+" FROM read_parquet(?) ORDER BY i", path)
	compareText(t, "parquet", got, want)
	// The columns keep their types (INTERVAL is text: Parquet's INTERVAL
	// holds neither microseconds nor negative parts; DuckDB reads
	// millisecond timestamps as TIMESTAMP).
	types := readBack(t, ctx, "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet(?))", path)
	wantTypes := map[string]string{
		"dec": "DECIMAL(38,10)", "dec_small": "DECIMAL(4,1)", "huge": "DECIMAL(38,0)", "uhuge": "DECIMAL(38,0)",
		"ubig": "UBIGINT", "dt": "DATE", "tm": "TIME", "ts": "TIMESTAMP", "ts_ns": "TIMESTAMP_NS", "ts_ms": "TIMESTAMP",
		"tstz": "TIMESTAMP WITH TIME ZONE", "iv": "VARCHAR", "u": "UUID", "b": "BLOB", "l_dec": "DECIMAL(10,2)[]",
		"l_dt": "DATE[]", "mp": "MAP(VARCHAR, DECIMAL(4,1))", "mp_int": "MAP(INTEGER, DATE[])",
	}
	for _, row := range types {
		if w, ok := wantTypes[row[0].(string)]; ok && row[1] != w {
			t.Errorf("parquet column %s is %s, want %s", row[0], row[1], w)
		}
	}
}

// TestTypedParquetRefusesWhatItCannotHold: a HUGEINT beyond DECIMAL(38,0)
// is an error naming the column and row, not a wrong number.
func TestTypedParquetRefusesWhatItCannotHold(t *testing.T) {
	ctx := context.Background()
	l, _, m := fixture(t, 1)
	e, err := Open(ctx, l, m)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res, err := e.Query(ctx, "SELECT 1::HUGEINT AS h UNION ALL SELECT 170141183460469231731687303715884105727::HUGEINT")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	err = writeParquet(&buf, res)
	if err == nil || !strings.Contains(err.Error(), `column "h"`) || !strings.Contains(err.Error(), "row 2") || !strings.Contains(err.Error(), "DECIMAL(38,0)") {
		t.Fatalf("want a clear refusal, got %v", err)
	}
}

// TestTypedCSV: scalar cells are DuckDB's own text, nested cells are JSON,
// and DuckDB reads both back to the same values.
func TestTypedCSV(t *testing.T) {
	ctx, _, res, want := typedResult(t)
	var buf bytes.Buffer
	if err := Write(&buf, "csv", res); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(buf.Bytes())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || recs[0][1] != "dec" {
		t.Fatalf("csv: %q", recs)
	}
	for r, want := range want {
		for i, c := range typedColumns {
			cell := recs[r+1][i+1]
			if want[i] == nil {
				if cell != "" {
					t.Errorf("csv: row %d column %s: NULL written as %q", r, c.name, cell)
				}
				continue
			}
			if !c.nested && cell != want[i] {
				t.Errorf("csv: row %d column %s: %q, want DuckDB's %q", r, c.name, cell, want[i])
			}
		}
	}
	path := filepath.Join(t.TempDir(), "typed.csv")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var casts []string
	for _, c := range typedColumns {
		if c.nested {
			casts = append(casts, fmt.Sprintf("CAST(CAST(CAST(%s AS JSON) AS %s) AS VARCHAR)", c.name, c.typ))
		} else {
			casts = append(casts, fmt.Sprintf("CAST(CAST(%s AS %s) AS VARCHAR)", c.name, c.typ))
		}
	}
	got := readBack(t, ctx, "SELECT "+strings.Join(casts, ", ")+" FROM read_csv(?, header = true, all_varchar = true) ORDER BY i::INTEGER", path)
	// CSV has one NULL: the empty cell, so the empty string reads back as NULL.
	for i, c := range typedColumns {
		if c.name == "s" && got[1][i] == nil {
			got[1][i] = ""
		}
	}
	compareText(t, "csv", got, want)
}

// TestTypedJSON: decimals and big integers are exact JSON numbers, other
// scalars DuckDB's text, nested values JSON that DuckDB reads back to the
// same values, columns in the query's order.
func TestTypedJSON(t *testing.T) {
	ctx, _, res, want := typedResult(t)
	var buf bytes.Buffer
	if err := Write(&buf, "json", res); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if i, j := strings.Index(out, `"dec"`), strings.Index(out, `"dt"`); i < 0 || j < i {
		t.Errorf("json keys are not in column order:\n%s", out[:min(len(out), 400)])
	}
	if !strings.Contains(out, `"dec": -1234567890123456789012345678.0123456789,`) || !strings.Contains(out, `"huge": -12345678901234567890123456789012345678,`) ||
		!strings.Contains(out, `"dec_scale": 1.00,`) {
		t.Errorf("decimals and HUGEINTs are not exact JSON numbers:\n%s", out)
	}
	var objs []map[string]json.RawMessage
	if err := json.Unmarshal(buf.Bytes(), &objs); err != nil {
		t.Fatal(err)
	}
	if len(objs) != 3 {
		t.Fatalf("json: %d objects", len(objs))
	}
	for r, want := range want {
		for i, c := range typedColumns {
			raw, ok := objs[r][c.name]
			if !ok {
				t.Fatalf("json: row %d lacks %s", r, c.name)
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
			switch {
			case want[i] == nil:
				if v != nil {
					t.Errorf("json: row %d column %s: NULL written as %v", r, c.name, v)
				}
			case c.nested:
				got := readBack(t, ctx, fmt.Sprintf("SELECT CAST(CAST(CAST(? AS JSON) AS %s) AS VARCHAR)", c.typ), string(raw))
				if got[0][0] != want[i] {
					t.Errorf("json: row %d column %s: %s reads back as %v, want DuckDB's %v", r, c.name, raw, got[0][0], want[i])
				}
			default:
				if fmt.Sprint(v) != want[i] {
					t.Errorf("json: row %d column %s: %v (%T), want DuckDB's %v", r, c.name, v, v, want[i])
				}
				_, isNum := v.(json.Number)
				wantNum := strings.HasPrefix(c.typ, "DECIMAL") || strings.HasSuffix(c.typ, "HUGEINT") || c.typ == "UBIGINT"
				if isNum != wantNum {
					t.Errorf("json: row %d column %s: %v is a %T", r, c.name, v, v)
				}
			}
		}
	}
	// A BLOB inside a list is DuckDB's escaped text too.
	res2 := &Result{Columns: []string{"bs"}, Types: []string{"BLOB[]"}, Rows: [][]any{{[]any{[]byte{0xAA, 0, 'a'}, nil}}}}
	buf.Reset()
	if err := Write(&buf, "json", res2); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"bs": ["\\xAA\\x00a",null]`) {
		t.Errorf("blob list: %s", buf.String())
	}
	// NaN and infinities have no JSON number: they are DuckDB's text.
	res3 := &Result{Columns: []string{"x"}, Types: []string{"DOUBLE"}, Rows: [][]any{{math.NaN()}, {math.Inf(-1)}}}
	buf.Reset()
	if err := Write(&buf, "json", res3); err != nil || !strings.Contains(buf.String(), `"x": "nan"`) || !strings.Contains(buf.String(), `"x": "-inf"`) {
		t.Errorf("nan: %v %s", err, buf.String())
	}
}

// TestTypedTable: the table format shows values, not Go structs.
func TestTypedTable(t *testing.T) {
	_, _, res, _ := typedResult(t)
	var buf bytes.Buffer
	if err := Write(&buf, "table", res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-1234567890123456789012345678.0123456789", "2024-02-29", "1 year 2 months 3 days 04:05:06.789", "12345678-1234-5678-1234-567812345678", `{"k":1.5,"j":null}`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %s:\n%s", want, buf.String())
		}
	}
	if strings.Contains(buf.String(), "Width") {
		t.Errorf("table shows Go values:\n%s", buf.String())
	}
}
