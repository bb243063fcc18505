package query

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

const groupBy = "select action_kind, count(*), avg(prompt_tokens) from steps group by 1 order by 1"

// BenchmarkQueryGroupBy runs the same group-by over a 1,000,000-row steps
// table through our confined views and through plain DuckDB on the same
// files; compare the two ns/op figures for the overhead ratio.
func BenchmarkQueryGroupBy(b *testing.B) {
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, b.TempDir(), true)
	if err != nil {
		b.Fatal(err)
	}
	tx, _ := l.Begin(ctx, "")
	if err := lake.ReplaceTable(ctx, tx, schemas.Steps, lake.SyntheticStepsForBench(1_000_000)); err != nil {
		b.Fatal(err)
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("cualake", func(b *testing.B) {
		e, err := Open(ctx, l, m)
		if err != nil {
			b.Fatal(err)
		}
		defer e.Close()
		for i := 0; i < b.N; i++ {
			if _, err := e.Query(ctx, groupBy); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("duckdb", func(b *testing.B) {
		var paths []string
		for _, f := range m.Tables["steps"].Files {
			p, _ := l.Storage().LocalPath(ctx, f.Path)
			paths = append(paths, "'"+p+"'")
		}
		connector, _ := duckdb.NewConnector("", nil)
		db := sql.OpenDB(connector)
		defer db.Close()
		q := strings.Replace(groupBy, "from steps", "from read_parquet(["+strings.Join(paths, ",")+"])", 1)
		for i := 0; i < b.N; i++ {
			rows, err := db.QueryContext(ctx, q)
			if err != nil {
				b.Fatal(err)
			}
			for rows.Next() {
			}
			rows.Close()
		}
	})
}

// BenchmarkCommitVsDuckDBCopy pairs our commit of 1,000,000 steps rows
// (Go rows to zstd Parquet in a new snapshot) with DuckDB's own COPY of
// the same rows, already in a DuckDB table, to zstd Parquet with our row
// group size: five runs each, interleaved (ours, DuckDB, ours, ...), so
// load from the shared machine falls on both. Reported: min and median
// rows/s of each and the ratio of medians.
func BenchmarkCommitVsDuckDBCopy(b *testing.B) {
	ctx := context.Background()
	rows := lake.SyntheticStepsForBench(1_000_000)
	commit := func() (string, *lake.Lake, *lake.Manifest) {
		dir := b.TempDir()
		l, err := lake.OpenDir(ctx, dir, true)
		if err != nil {
			b.Fatal(err)
		}
		tx, _ := l.Begin(ctx, "")
		if err := lake.ReplaceTable(ctx, tx, schemas.Steps, rows); err != nil {
			b.Fatal(err)
		}
		m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		return dir, l, m
	}
	_, l, m := commit() // the rows DuckDB loads
	var paths []string
	for _, f := range m.Tables["steps"].Files {
		p, _ := l.Storage().LocalPath(ctx, f.Path)
		paths = append(paths, "'"+p+"'")
	}
	connector, _ := duckdb.NewConnector("", nil)
	db := sql.OpenDB(connector)
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE s AS SELECT * FROM read_parquet(["+strings.Join(paths, ",")+"])"); err != nil {
		b.Fatal(err)
	}
	out := b.TempDir()
	const reps = 5
	var ours, duck []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := 0; r < reps; r++ {
			t0 := time.Now()
			commit()
			ours = append(ours, float64(len(rows))/time.Since(t0).Seconds())
			t0 = time.Now()
			q := fmt.Sprintf("COPY s TO '%s/%d-%d.parquet' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE %d)", out, i, r, 64*1024)
			if _, err := db.ExecContext(ctx, q); err != nil {
				b.Fatal(err)
			}
			duck = append(duck, float64(len(rows))/time.Since(t0).Seconds())
		}
	}
	mo, md := medianOf(ours), medianOf(duck)
	b.ReportMetric(mo, "ours-median-rows/s")
	b.ReportMetric(minOf(ours), "ours-min-rows/s")
	b.ReportMetric(md, "duckdb-median-rows/s")
	b.ReportMetric(minOf(duck), "duckdb-min-rows/s")
	b.ReportMetric(mo/md, "ratio")
}

func medianOf(x []float64) float64 {
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func minOf(x []float64) float64 {
	m := x[0]
	for _, v := range x[1:] {
		m = min(m, v)
	}
	return m
}
