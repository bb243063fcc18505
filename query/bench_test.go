package query

import (
	"context"
	"database/sql"
	"strings"
	"testing"

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
