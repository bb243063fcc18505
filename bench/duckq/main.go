// Command duckq is the plain-DuckDB baseline of the start-up benchmark
// (scripts/bench-startup.sh): one process that opens an in-memory DuckDB
// with the same driver cualake links (duckdb-go), runs one SQL statement
// over Parquet files named in it, and prints the rows tab-separated. It
// has no lake, views or checks, so `cualake query` minus duckq is our
// fixed cost per process. An argument "@FILE" reads the statement from
// FILE (a list of thousands of files is longer than one argument may be).
//
// Example:
//
//	go build -o bench/out/duckq ./bench/duckq
//	bench/out/duckq "select action_kind, count(*) from read_parquet(['a.parquet']) group by 1"
package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"

	"github.com/duckdb/duckdb-go/v2"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, `usage: duckq "SQL"`)
		os.Exit(2)
	}
	stmt := os.Args[1]
	if name, ok := strings.CutPrefix(stmt, "@"); ok {
		b, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "duckq:", err)
			os.Exit(1)
		}
		stmt = string(b)
	}
	if err := run(context.Background(), stmt); err != nil {
		fmt.Fprintln(os.Stderr, "duckq:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, stmt string) error {
	connector, err := duckdb.NewConnector("", nil)
	if err != nil {
		return fmt.Errorf("duckdb: %w", err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	rows, err := db.QueryContext(ctx, stmt)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	fmt.Println(strings.Join(cols, "\t"))
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		out := make([]string, len(vals))
		for i, v := range vals {
			out[i] = fmt.Sprint(v)
		}
		fmt.Println(strings.Join(out, "\t"))
	}
	return rows.Err()
}
