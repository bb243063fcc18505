package query

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

func fixture(t *testing.T, n int) (*lake.Lake, string, *lake.Manifest) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	l, err := lake.OpenDir(ctx, dir, true)
	if err != nil {
		t.Fatal(err)
	}
	l.Now = func() time.Time { return time.Unix(0, 0) }
	var rows []schemas.Task
	for i := 0; i < n; i++ {
		rows = append(rows, schemas.Task{TaskID: fmt.Sprintf("t%02d", i), Domain: []string{"files", "sheet", "mail"}[i%3],
			Instruction: "it's task " + fmt.Sprint(i), Setup: "[]", Judge: "{}", Source: schemas.SourceSeed, Abilities: []string{"x", "y"}})
	}
	tx, _ := l.Begin(ctx, "")
	if err := lake.ReplaceTable(ctx, tx, schemas.Tasks, rows); err != nil {
		t.Fatal(err)
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "fixture"})
	if err != nil {
		t.Fatal(err)
	}
	return l, dir, m
}

func TestViewsAndFormats(t *testing.T) {
	ctx := context.Background()
	l, _, m := fixture(t, 9)
	e, err := Open(ctx, l, m)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res, err := e.Query(ctx, "select domain, count(*) as n from tasks group by 1 order by 1")
	if err != nil {
		t.Fatal(err)
	}
	var csv bytes.Buffer
	if err := Write(&csv, "csv", res); err != nil {
		t.Fatal(err)
	}
	if csv.String() != "domain,n\nfiles,3\nmail,3\nsheet,3\n" {
		t.Fatalf("csv:\n%s", csv.String())
	}
	var js bytes.Buffer
	Write(&js, "json", res)
	if !strings.Contains(js.String(), `"domain": "files"`) || !strings.Contains(js.String(), `"n": 3`) {
		t.Fatalf("json: %s", js.String())
	}
	// Tables the snapshot lacks are empty views with their columns.
	res, err = e.Query(ctx, "select count(*), count(segment_id) from segments")
	if err != nil || res.Rows[0][0].(int64) != 0 {
		t.Fatalf("empty segments view: %v %v", res, err)
	}
	// Lineage is a table.
	res, err = e.Query(ctx, "select stage from lake_snapshots")
	if err != nil || res.Rows[0][0] != "fixture" {
		t.Fatalf("lineage: %v %v", res, err)
	}
	// Parquet output is written by our code and reads back.
	out := filepath.Join(t.TempDir(), "out.parquet")
	res, _ = e.Query(ctx, "select task_id, abilities from tasks order by 1")
	if err := WriteFile(out, "parquet", res); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(out); err != nil || st.Size() == 0 {
		t.Fatalf("parquet out: %v", err)
	}
}

func TestConfinement(t *testing.T) {
	ctx := context.Background()
	l, dir, m := fixture(t, 3)
	e, err := Open(ctx, l, m)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	refused := []string{
		"select * from read_csv('/etc/passwd')",
		"select * from read_parquet('" + filepath.Join(os.TempDir(), "x.parquet") + "')",
		"copy (select 1) to '/tmp/cualake-escape.csv'",
		"copy (select 1) to '" + filepath.Join(dir, "data", "evil.csv") + "'",
		"attach '/tmp/x.db' as x",
		"install httpfs",
		"load httpfs",
		"create table t as select 1",
		"insert into lake_snapshots (id) values ('x')",
		"drop view tasks",
		"set enable_external_access=true",
		"select 1; drop view tasks",
	}
	for _, q := range refused {
		if _, err := e.Query(ctx, q); err == nil {
			t.Errorf("%q was allowed", q)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "evil.csv")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a COPY wrote into the lake")
	}
	if _, err := e.Query(ctx, "select count(*) from tasks"); err != nil {
		t.Fatalf("views stopped working after locking: %v", err)
	}
	_, err = e.Query(ctx, "selct 1")
	if err == nil || !strings.Contains(err.Error(), "syntax error") {
		t.Fatalf("a wrong query should show DuckDB's message: %v", err)
	}
}

func TestDiffAndExport(t *testing.T) {
	ctx := context.Background()
	l, _, m1 := fixture(t, 4)
	tx, _ := l.Begin(ctx, "")
	rows, _ := lake.ReadTable(ctx, l, m1, schemas.Tasks)
	rows = rows[1:]
	rows = append(rows, schemas.Task{TaskID: "new1", Domain: "files", Setup: "[]", Judge: "{}", Source: "seed"},
		schemas.Task{TaskID: "new2", Domain: "mail", Setup: "[]", Judge: "{}", Source: "seed"})
	lake.ReplaceTable(ctx, tx, schemas.Tasks, rows)
	m2, err := tx.Commit(ctx, lake.CommitInfo{Stage: "edit"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := Diff(ctx, l, m1, m2)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != 1 || d[0].Added != 2 || d[0].Removed != 1 {
		t.Fatalf("diff: %+v", d)
	}
	out1, out2 := filepath.Join(t.TempDir(), "rel"), filepath.Join(t.TempDir(), "rel")
	if err := Export(ctx, l, m2, out1); err != nil {
		t.Fatal(err)
	}
	if err := Export(ctx, l, m2, out2); err != nil {
		t.Fatal(err)
	}
	s1, _ := os.ReadFile(filepath.Join(out1, "SHA256SUMS"))
	s2, _ := os.ReadFile(filepath.Join(out2, "SHA256SUMS"))
	if !bytes.Equal(s1, s2) || !bytes.Contains(s1, []byte("tasks/domain=files/data_0.parquet")) {
		t.Fatalf("export not deterministic or not partitioned:\n%s\n%s", s1, s2)
	}
	card, _ := os.ReadFile(filepath.Join(out1, "README.md"))
	if !bytes.Contains(card, []byte("| tasks | 5 |")) || !bytes.Contains(card, []byte("## Lineage")) {
		t.Fatalf("dataset card:\n%s", card)
	}
	// Any engine reads the bundle: DuckDB with hive partitioning.
	db, conn, _ := internal(ctx)
	defer db.Close()
	defer conn.Close()
	var n int
	if err := conn.QueryRowContext(ctx, "select count(*) from read_parquet('"+out1+"/tasks/**/*.parquet', hive_partitioning=true) where domain='files'").Scan(&n); err != nil || n != 2 {
		t.Fatalf("reading the bundle: n=%d err=%v", n, err)
	}
}

// TestParserOnlyForRefusals: a text json_serialize_sql takes as one SELECT
// runs without the statement parser's own DuckDB database (the fixed cost
// of every query process); the first text that is not opens it, and is
// refused as it always was.
func TestParserOnlyForRefusals(t *testing.T) {
	ctx := context.Background()
	l, _, m := fixture(t, 3)
	e, err := Open(ctx, l, m)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, q := range []string{"select count(*) from tasks", "EXPLAIN select domain from tasks", "with x as (select 1 as a) select a from x"} {
		if _, err := e.Query(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if e.parser != nil {
		t.Fatal("the statement parser was opened for single SELECTs")
	}
	if _, err := e.Query(ctx, "select 1; select 2"); !errors.Is(err, ErrMultipleStatements) {
		t.Fatalf("two selects: %v, want ErrMultipleStatements", err)
	}
	if e.parser == nil {
		t.Fatal("a refused text did not go through the statement parser")
	}
	if _, err := e.Query(ctx, "select 1; drop view tasks"); !errors.Is(err, ErrMultipleStatements) {
		t.Fatalf("select then drop: %v, want ErrMultipleStatements", err)
	}
}
