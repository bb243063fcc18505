package query

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// analystQueries are the five queries of the benchmark issue, each run
// through our views and through plain DuckDB on the same files.
var analystQueries = []struct{ name, sql string }{
	{"group-by", "select action_kind, count(*), avg(prompt_tokens) from steps group by 1 order by 1"},
	{"join", "select t.outcome, count(*), avg(s.prompt_tokens) from trajectories t join steps s on s.trajectory_id = t.trajectory_id group by 1 order by 1"},
	{"window", "select max(c), sum(c) from (select sum(response_tokens) over (partition by trajectory_id order by step) as c from steps)"},
	{"unnest", "select sum(m), count(*) from (select unnest(loss_mask) as m from segments)"},
	{"prune", "select count(*), avg(prompt_tokens) from steps where trajectory_id between 'traj-0012000' and 'traj-0012099'"},
}

// tableName finds the lake tables the analyst queries read.
var tableName = regexp.MustCompile(`\b(from|join) (steps|trajectories|segments)\b`)

// benchReps is how many interleaved runs a paired benchmark makes:
// CUALAKE_BENCH_REPS (scripts/bench.sh sets 1 under BENCH_QUICK), else 5.
func benchReps() int {
	if n, err := strconv.Atoi(os.Getenv("CUALAKE_BENCH_REPS")); err == nil && n > 0 {
		return n
	}
	return 5
}

// analystLake commits 1,000,000 steps rows (lake.SyntheticStepsForBench:
// 33,334 trajectories of 30 steps, files sorted by trajectory), their
// trajectories and 2,000 segments of 4,096 tokens.
func analystLake(b *testing.B) (*lake.Lake, *lake.Manifest) {
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, b.TempDir(), true)
	if err != nil {
		b.Fatal(err)
	}
	tx, _ := l.Begin(ctx, "")
	steps := lake.SyntheticStepsForBench(1_000_000)
	var trajs []schemas.Trajectory
	for i := range steps {
		if steps[i].Step == 0 {
			id := steps[i].TrajectoryID
			trajs = append(trajs, schemas.Trajectory{TrajectoryID: id, TaskID: "task-" + id[5:], GroupID: "g-" + id[5:],
				Outcome: []string{schemas.OutcomeSuccess, schemas.OutcomeFailure}[i%2], Reward: float64(i % 2)})
		}
	}
	var segs []schemas.Segment
	for i := 0; i < 2000; i++ {
		const n = 4096
		sg := schemas.Segment{SegmentID: fmt.Sprintf("seg-%05d", i), TrajectoryID: trajs[i].TrajectoryID, TaskID: trajs[i].TaskID,
			GroupID: trajs[i].GroupID, Mode: "window", InputIDs: make([]int32, n), LossMask: make([]int8, n), Logprobs: make([]float32, n),
			HasLogprobs: true, Tokens: n, Tokenizer: "bench"}
		for k := range n {
			sg.InputIDs[k] = int32((i*31 + k*7) % 151_000)
			if k%4 == 3 {
				sg.LossMask[k], sg.Logprobs[k] = 1, -0.25
				sg.TrainableTokens++
			}
		}
		segs = append(segs, sg)
	}
	for _, err := range []error{lake.ReplaceTable(ctx, tx, schemas.Steps, steps), lake.ReplaceTable(ctx, tx, schemas.Trajectories, trajs),
		lake.ReplaceTable(ctx, tx, schemas.Segments, segs)} {
		if err != nil {
			b.Fatal(err)
		}
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	return l, m
}

// BenchmarkAnalystQueries runs each analyst query through our engine
// (Engine.Query: the confined views, the read-only check, the typed result)
// and through a plain DuckDB connection on read_parquet of the same files,
// interleaved (ours, DuckDB, ours, ...) after one warm-up of each. Reported:
// median and min of each, the ratio of medians, and the median of the
// read-only check alone (Engine.CheckReadOnly) and of its two parts
// (json_serialize_sql of the text, a prepare that binds the views), the
// fixed cost a query pays on top of DuckDB's own work.
func BenchmarkAnalystQueries(b *testing.B) {
	ctx := context.Background()
	l, m := analystLake(b)
	e, err := Open(ctx, l, m)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	connector, _ := duckdb.NewConnector("", nil)
	db := sql.OpenDB(connector)
	defer db.Close()
	plain := func(q string) string {
		return tableName.ReplaceAllStringFunc(q, func(w string) string {
			f := strings.Fields(w)
			var paths []string
			for _, file := range m.Tables[f[1]].Files {
				p, _ := l.Storage().LocalPath(ctx, file.Path)
				paths = append(paths, "'"+p+"'")
			}
			return f[0] + " read_parquet([" + strings.Join(paths, ",") + "])"
		})
	}
	ours := func(q string) {
		if _, err := e.Query(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	duck := func(q string) {
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
		}
		if err := rows.Close(); err != nil {
			b.Fatal(err)
		}
	}
	for _, aq := range analystQueries {
		b.Run(aq.name, func(b *testing.B) {
			pq := plain(aq.sql)
			ours(aq.sql)
			duck(pq)
			var o, d, v, ser, prep, oc, dc []float64
			for i := 0; i < b.N; i++ {
				for range benchReps() {
					t0, c0 := time.Now(), cpuNanos()
					ours(aq.sql)
					o = append(o, float64(time.Since(t0).Nanoseconds()))
					oc = append(oc, cpuNanos()-c0)
					t0, c0 = time.Now(), cpuNanos()
					duck(pq)
					d = append(d, float64(time.Since(t0).Nanoseconds()))
					dc = append(dc, cpuNanos()-c0)
					t0 = time.Now()
					if err := e.CheckReadOnly(ctx, aq.sql); err != nil {
						b.Fatal(err)
					}
					v = append(v, float64(time.Since(t0).Nanoseconds()))
					// the check's two parts
					t0 = time.Now()
					if _, err := e.serialize(ctx, aq.sql); err != nil {
						b.Fatal(err)
					}
					ser = append(ser, float64(time.Since(t0).Nanoseconds()))
					t0 = time.Now()
					if _, err := e.prepareType(aq.sql); err != nil {
						b.Fatal(err)
					}
					prep = append(prep, float64(time.Since(t0).Nanoseconds()))
				}
			}
			b.ReportMetric(medianOf(o), "ours-median-ns")
			b.ReportMetric(minOf(o), "ours-min-ns")
			b.ReportMetric(medianOf(d), "duckdb-median-ns")
			b.ReportMetric(minOf(d), "duckdb-min-ns")
			b.ReportMetric(medianOf(v), "check-median-ns")
			b.ReportMetric(medianOf(ser), "serialize-median-ns")
			b.ReportMetric(medianOf(prep), "prepare-median-ns")
			b.ReportMetric(medianOf(o)/medianOf(d), "ratio")
			b.ReportMetric(medianOf(oc), "ours-cpu-median-ns")
			b.ReportMetric(medianOf(dc), "duckdb-cpu-median-ns")
			b.ReportMetric(float64(len(o)), "runs")
		})
	}
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
	reps := benchReps()
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

// cpuNanos is the process's user and system CPU time, every thread's
// (DuckDB's workers included): steadier than wall time on a machine whose
// cores other work takes.
func cpuNanos() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano() + ru.Stime.Nano())
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
