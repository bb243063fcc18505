package lake

import (
	"context"
	"fmt"
	"testing"

	"github.com/cualake/cualake/schemas"
)

// BenchmarkCommitSteps1M commits a 1,000,000-row steps table.
func BenchmarkCommitSteps1M(b *testing.B) {
	ctx := context.Background()
	rows := SyntheticStepsForBench(1_000_000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l, err := OpenDir(ctx, b.TempDir(), true)
		if err != nil {
			b.Fatal(err)
		}
		tx, _ := l.Begin(ctx, "")
		if err := ReplaceTable(ctx, tx, schemas.Steps, rows); err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Commit(ctx, CommitInfo{Stage: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(rows))*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkCommitAfterHistory measures one small commit on a lake that
// already holds 1,000 snapshots; it must not grow with history. (Appending
// to a table grows its file list, and so its manifest, by one file per
// commit; that cost is per table size, not per history length.)
func BenchmarkCommitAfterHistory(b *testing.B) {
	for _, history := range []int{10, 1000} {
		b.Run(fmt.Sprintf("snapshots=%d", history), func(b *testing.B) {
			ctx := context.Background()
			l, _ := OpenDir(ctx, b.TempDir(), true)
			commit := func(i int) {
				tx, _ := l.Begin(ctx, "")
				task := schemas.Task{TaskID: fmt.Sprint("t", i), Domain: "d", Setup: "[]", Judge: "{}", Source: "seed"}
				if err := ReplaceTable(ctx, tx, schemas.Tasks, []schemas.Task{task}); err != nil {
					b.Fatal(err)
				}
				if _, err := tx.Commit(ctx, CommitInfo{Stage: "bench"}); err != nil {
					b.Fatal(err)
				}
			}
			for i := 0; i < history; i++ {
				commit(-i - 1)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				commit(i)
			}
		})
	}
}
