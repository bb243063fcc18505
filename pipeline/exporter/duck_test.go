package exporter

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2" // the independent reader every export is checked with
)

// duck opens a private DuckDB: exports are read back with DuckDB's own
// Parquet reader, never with the code that wrote them.
func duck(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// sqlLit quotes a string for DuckDB.
func sqlLit(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// duckRows runs a query and returns its rows as column -> value, as
// duckdb-go scans them (lists []any, structs map[string]any).
func duckRows(t *testing.T, db *sql.DB, q string) []map[string]any {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []map[string]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		r := map[string]any{}
		for i, c := range cols {
			r[c] = vals[i]
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// parquetRows reads every row of Parquet files (a path or glob) in file
// order.
func parquetRows(t *testing.T, db *sql.DB, path string) []map[string]any {
	return duckRows(t, db, "SELECT * FROM read_parquet("+sqlLit(path)+")")
}

// parquetTypes returns DuckDB's type of each column of a Parquet file, in
// order, as "name TYPE" strings.
func parquetTypes(t *testing.T, db *sql.DB, path string) []string {
	t.Helper()
	var out []string
	for _, r := range duckRows(t, db, "DESCRIBE SELECT * FROM read_parquet("+sqlLit(path)+")") {
		out = append(out, r["column_name"].(string)+" "+r["column_type"].(string))
	}
	return out
}

// parquetKV returns a Parquet file's key-value metadata.
func parquetKV(t *testing.T, db *sql.DB, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range duckRows(t, db, "SELECT key, value FROM parquet_kv_metadata("+sqlLit(path)+")") {
		out[string(r["key"].([]byte))] = string(r["value"].([]byte))
	}
	return out
}

// checkTypes fails unless the columns have exactly these DuckDB types.
func checkTypes(t *testing.T, db *sql.DB, path string, want ...string) {
	t.Helper()
	got := parquetTypes(t, db, path)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s: DuckDB reads the columns as\n%s\nwant\n%s", path, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
