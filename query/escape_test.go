package query_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/cualake/cualake/internal/treehash"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/query"
	"github.com/cualake/cualake/query/notebook"
	"github.com/cualake/cualake/query/notebook/notebooktest"
)

// escape is one attempt to leave the read-only confinement, with the words
// its refusal must contain.
type escape struct {
	name, sql, want string
}

// escapes are the attempts of issue #22 against a lake at dir, with the
// engine's private DuckDB temp folder tmp (a file planted.csv lies in it).
func escapes(dir, tmp string) []escape {
	main := filepath.Join(dir, "refs", "heads", "main")
	zeros := strings.Repeat("0", 64)
	evil := filepath.Join(dir, "data", "evil.csv")
	planted := filepath.Join(tmp, "planted.csv")
	return []escape{
		// Several statements: duckdb-go ran all but the last one unchecked.
		{"copy over main, then a select", "COPY (SELECT '" + zeros + "') TO '" + main + "' (FORMAT csv, HEADER false); SELECT 1", "only one SQL statement"},
		{"select, then copy over main", "SELECT 1; COPY (SELECT '" + zeros + "') TO '" + main + "' (FORMAT csv, HEADER false)", "only one SQL statement"},
		{"two selects", "SELECT 1; SELECT 2", "only one SQL statement"},
		{"replace a view, then a select", "CREATE OR REPLACE VIEW tasks AS SELECT * FROM tasks LIMIT 0; SELECT 1", "only one SQL statement"},
		{"a NUL hides a second statement", "SELECT 1\x00; DROP VIEW tasks", "NUL"},
		// EXPLAIN ANALYZE runs its statement.
		{"explain analyze copy into the lake", "EXPLAIN ANALYZE COPY (SELECT 1) TO '" + evil + "'", "EXPLAIN ANALYZE"},
		{"explain analyse, British", "explain /* x */ analyse COPY (SELECT 1) TO '" + evil + "'", "EXPLAIN ANALYZE"},
		{"explain (analyze)", "EXPLAIN (ANALYZE) COPY (SELECT 1) TO '" + evil + "'", "EXPLAIN ANALYZE"},
		{"explain of a copy", "EXPLAIN COPY (SELECT 1) TO '" + evil + "'", "only read statements"},
		// DDL a notebook cell could use to change what later cells read.
		{"replace the trajectories view", "CREATE OR REPLACE VIEW trajectories AS SELECT * FROM trajectories LIMIT 1", "only read statements"},
		{"drop a view", "DROP VIEW tasks", "only read statements"},
		{"a temp view shadowing nothing", "CREATE TEMP VIEW v AS SELECT 1", "only read statements"},
		{"a macro", "CREATE MACRO tasks_count() AS 1", "only read statements"},
		{"a table", "CREATE TABLE t AS SELECT 1", "only read statements"},
		{"alter a view", "ALTER VIEW tasks RENAME TO t2", "only read statements"},
		{"insert into lineage", "INSERT INTO lake_snapshots (id) VALUES ('x')", "only read statements"},
		{"update lineage", "UPDATE lake_snapshots SET stage = 'forged'", "only read statements"},
		{"delete lineage", "DELETE FROM lake_snapshots", "only read statements"},
		{"set", "SET threads = 1", "only read statements"},
		{"set external access", "SET enable_external_access = true", "only read statements"},
		{"reset", "RESET allowed_paths", "only read statements"},
		{"pragma with an effect", "PRAGMA enable_profiling", "only read statements"},
		{"pragma that reads", "PRAGMA version", "only read statements"},
		{"use", "USE system", "only read statements"},
		{"call", "CALL enable_logging(storage = 'file', storage_path = '" + tmp + "')", "only read statements"},
		{"prepare", "PREPARE p AS SELECT 1", "only read statements"},
		{"transaction", "BEGIN TRANSACTION", "only read statements"},
		{"checkpoint", "CHECKPOINT", "only read statements"},
		// Other databases, extensions and exports.
		{"attach a file in the lake", "ATTACH '" + filepath.Join(dir, "evil.db") + "' AS evil", "only read statements"},
		{"detach", "DETACH memory", "only read statements"},
		{"install", "INSTALL httpfs", "only read statements"},
		{"load", "LOAD httpfs", "only read statements"},
		{"export the database into the lake", "EXPORT DATABASE '" + filepath.Join(dir, "export") + "'", "only read statements"},
		// Writes.
		{"copy into the lake", "COPY (SELECT 1) TO '" + evil + "'", "only read statements"},
		{"copy over main", "COPY (SELECT '" + zeros + "') TO '" + main + "' (FORMAT csv, HEADER false)", "only read statements"},
		{"copy into the temp folder", "COPY tasks TO '" + filepath.Join(tmp, "out.csv") + "'", "only read statements"},
		{"copy over the planted file", "COPY (SELECT 1) TO '" + planted + "'", "only read statements"},
		{"copy to /tmp", "COPY (SELECT 1) TO '/tmp/cualake-escape.csv'", "only read statements"},
		// Session changes through table functions (this one crashed the process).
		{"logging to a file", "SELECT * FROM enable_logging(storage = 'file', storage_path = '" + tmp + "')", "table function enable_logging"},
		{"checkpoint function", "SELECT * FROM checkpoint()", "table function checkpoint"},
		{"query function", "SELECT * FROM query('SELECT 1')", "table function query"},
		// Reads outside the lake's views.
		{"read /etc/passwd", "SELECT * FROM read_csv('/etc/passwd')", "table function read_csv"},
		{"read a ref as text", "SELECT * FROM read_text('" + main + "')", "table function read_text"},
		{"read a ref as a blob", "SELECT * FROM read_blob('" + main + "')", "table function read_blob"},
		{"list the lake", "SELECT * FROM glob('" + dir + "/**')", "table function glob"},
		{"home folder", "SELECT * FROM read_csv('~/.bashrc')", "table function read_csv"},
		{"home folder by name", "SELECT * FROM '~/x.csv'", "file"},
		{"upper-case function name", `SELECT * FROM "READ_CSV"('/etc/passwd')`, "table function read_csv"},
		{"a file by name", "SELECT * FROM '/etc/passwd'", "file"},
		{"a lake file by name", "SELECT * FROM '" + filepath.Join(dir, "lake.json") + "'", "file"},
		{"read the planted file", "SELECT * FROM read_csv('" + planted + "')", "table function read_csv"},
		{"the planted file by name", "SELECT * FROM '" + planted + "'", "file"},
		{"the planted file in a subquery", "SELECT (SELECT count(*) FROM '" + planted + "')", "file"},
		{"describe the planted file", "DESCRIBE '" + planted + "'", "file"},
		{"summarize a file", "SUMMARIZE '/etc/passwd'", "file"},
		{"list the temp folder", "SELECT * FROM glob('" + tmp + "/*')", "table function glob"},
		{"a file in a lateral join", "SELECT * FROM range(1), LATERAL (SELECT * FROM read_text('/etc/hostname'))", "table function read_text"},
	}
}

// fixtureLake is notebooktest's lake, in a folder the test knows.
func fixtureLake(t *testing.T) (*lake.Lake, string, *lake.Manifest) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	l, err := lake.OpenDir(ctx, dir, true)
	if err != nil {
		t.Fatal(err)
	}
	m, err := notebooktest.Commit(ctx, l, notebooktest.FixtureRows(), "fixture")
	if err != nil {
		t.Fatal(err)
	}
	return l, dir, m
}

// lakeState is what an escape must leave alone: every file of the lake by
// its sha256, and the main ref.
func lakeState(t *testing.T, dir string) map[string]string {
	t.Helper()
	h, err := treehash.Of(dir)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func folderFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// countsSQL reads the real tables; after any escape it must give the real
// counts.
const countsSQL = `SELECT (SELECT count(*) FROM tasks) AS tasks, (SELECT count(*) FROM trajectories) AS trajectories,
	(SELECT count(*) FROM steps) AS steps, (SELECT count(*) FROM lake_snapshots) AS snapshots,
	(SELECT string_agg(view_name || ':' || sql, '|' ORDER BY view_name) FROM duckdb_views() WHERE NOT internal) AS views`

func tempDirOf(t *testing.T, ctx context.Context, e *query.Engine) string {
	t.Helper()
	res, err := e.Query(ctx, "SELECT current_setting('temp_directory')")
	if err != nil {
		t.Fatal(err)
	}
	tmp, _ := res.Rows[0][0].(string)
	if tmp == "" {
		t.Fatal("the engine has no temp directory")
	}
	return tmp
}

// TestEscapesAreRefused runs every escape through the CLI's path
// (Engine.Query) and, in a separate session, as notebook cells followed by
// a cell reading the real tables: each is refused with a clear error, no
// lake file changes, main stays, nothing appears in the temp folder, and
// later cells still read the real tables.
func TestEscapesAreRefused(t *testing.T) {
	ctx := context.Background()
	l, dir, m := fixtureLake(t)
	before := lakeState(t, dir)
	mainBefore, err := os.ReadFile(filepath.Join(dir, "refs", "heads", "main"))
	if err != nil {
		t.Fatal(err)
	}
	rows := notebooktest.FixtureRows()
	check := func(t *testing.T, what string, e *query.Engine, tmp string, counts []any) {
		t.Helper()
		if after := lakeState(t, dir); !reflect.DeepEqual(after, before) {
			t.Fatalf("%s changed the lake", what)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "refs", "heads", "main")); string(got) != string(mainBefore) {
			t.Fatalf("%s moved main: %q", what, got)
		}
		if got := folderFiles(t, tmp); !reflect.DeepEqual(got, []string{"planted.csv"}) {
			t.Fatalf("%s changed the temp folder: %v", what, got)
		}
		if b, _ := os.ReadFile(filepath.Join(tmp, "planted.csv")); string(b) != "a\n1\n" {
			t.Fatalf("%s changed the planted file: %q", what, b)
		}
		if _, err := os.Stat("/tmp/cualake-escape.csv"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s wrote /tmp/cualake-escape.csv", what)
		}
		if int(counts[0].(int64)) != len(rows.Tasks) || int(counts[1].(int64)) != len(rows.Trajectories) ||
			int(counts[2].(int64)) != len(rows.Steps) || counts[3].(int64) != 1 {
			t.Fatalf("after %s the tables read %v, want %d tasks, %d trajectories, %d steps, 1 snapshot",
				what, counts[:4], len(rows.Tasks), len(rows.Trajectories), len(rows.Steps))
		}
		if views := counts[4].(string); strings.Count(views, "read_parquet") < 9 {
			t.Fatalf("after %s the views are %s", what, views)
		}
	}
	open := func(t *testing.T) (*query.Engine, string) {
		e, err := query.Open(ctx, l, m)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		tmp := tempDirOf(t, ctx, e)
		if err := os.WriteFile(filepath.Join(tmp, "planted.csv"), []byte("a\n1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return e, tmp
	}

	t.Run("query", func(t *testing.T) {
		e, tmp := open(t)
		for _, x := range escapes(dir, tmp) {
			_, err := e.Query(ctx, x.sql)
			if err == nil {
				t.Errorf("%s: %q was allowed", x.name, x.sql)
			} else if !strings.Contains(err.Error(), x.want) {
				t.Errorf("%s: the error %q does not say %q", x.name, err, x.want)
			}
			res, err := e.Query(ctx, countsSQL)
			if err != nil {
				t.Fatalf("after %s: %v", x.name, err)
			}
			check(t, x.name, e, tmp, res.Rows[0])
		}
	})

	t.Run("notebook", func(t *testing.T) {
		e, tmp := open(t)
		for _, x := range escapes(dir, tmp) {
			if strings.Contains(x.sql, "\x00") {
				continue // a notebook is text: a NUL cannot reach a cell unchanged
			}
			src := fmt.Sprintf("# Escape\n\n```sql\n%s\n```\n\n```sql\n%s\n```\n", x.sql, countsSQL)
			r, err := notebook.Run(ctx, e, notebook.Parse("escape.md", []byte(src)))
			if err != nil {
				t.Fatal(err)
			}
			if r.Cells[1].Err == nil {
				t.Errorf("%s: the cell %q ran", x.name, x.sql)
			} else if !strings.Contains(r.Cells[1].Err.Error(), x.want) {
				t.Errorf("%s: the cell's error %q does not say %q", x.name, r.Cells[1].Err, x.want)
			}
			last := r.Cells[len(r.Cells)-1]
			if last.Err != nil {
				t.Fatalf("after %s the next cell failed: %v", x.name, last.Err)
			}
			check(t, x.name, e, tmp, last.Result.Rows[0])
		}
	})
}

// TestReadStatementsStillRun: the forms of a read the confinement keeps.
func TestReadStatementsStillRun(t *testing.T) {
	ctx := context.Background()
	l, m := notebooktest.Lake(t)
	e, err := query.Open(ctx, l, m)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, q := range []string{
		"SELECT count(*) FROM tasks",
		"select 1;",
		"-- a comment\nSELECT 1; -- and another",
		"/* a /* nested */ comment */ SELECT 1",
		"WITH d AS (SELECT domain FROM tasks) SELECT domain, count(*) FROM d GROUP BY 1",
		"FROM tasks LIMIT 1",
		"VALUES (1, 'a'), (2, 'b')",
		"SELECT 1 UNION ALL SELECT 2 EXCEPT SELECT 3",
		"(SELECT 1)",
		"TABLE tasks",
		"EXPLAIN SELECT * FROM tasks",
		"explain /* plan only */ SELECT 1",
		"EXPLAIN (SELECT 1)",
		"DESCRIBE tasks",
		"DESCRIBE SELECT task_id FROM tasks",
		"SHOW TABLES",
		"SUMMARIZE tasks",
		"SELECT * FROM range(3) r(x), unnest([1, 2]) u(y)",
		"SELECT * FROM generate_series(1, 3)",
		"SELECT table_name FROM duckdb_tables() UNION ALL SELECT view_name FROM duckdb_views()",
		"SELECT * FROM information_schema.columns WHERE table_name = 'tasks'",
		"SELECT * FROM pragma_table_info('tasks')",
		"SELECT id FROM lake_snapshots",
		"SELECT current_setting('threads')",
		`SELECT "domain" FROM "tasks" t WHERE t.task_id IN (SELECT task_id FROM trajectories)`,
	} {
		if _, err := e.Query(ctx, q); err != nil {
			t.Errorf("%q: %v", q, err)
		}
	}
	// Parameters still bind.
	res, err := e.Query(ctx, "SELECT count(*) FROM tasks WHERE domain = ?", "mail")
	if err != nil || res.Rows[0][0].(int64) == 0 {
		t.Fatalf("a parameter: %v %v", res, err)
	}
	// A syntax error keeps DuckDB's message.
	if _, err := e.Query(ctx, "selct 1"); err == nil || !strings.Contains(err.Error(), "syntax error") {
		t.Fatalf("syntax error: %v", err)
	}
	if _, err := e.Query(ctx, "  -- nothing\n"); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("an empty text: %v", err)
	}
}

// TestPrivateTempDir: DuckDB spills into a folder the engine made for
// itself and removes on Close; no other folder or file outside the
// snapshot's data files is open to a query.
func TestPrivateTempDir(t *testing.T) {
	ctx := context.Background()
	l, dir, m := fixtureLake(t)
	e, err := query.Open(ctx, l, m)
	if err != nil {
		t.Fatal(err)
	}
	tmp := tempDirOf(t, ctx, e)
	cwd, _ := os.Getwd()
	if !filepath.IsAbs(tmp) || strings.HasPrefix(tmp, cwd) || strings.HasPrefix(tmp, dir) {
		t.Fatalf("temp directory %s is not a private folder", tmp)
	}
	st, err := os.Stat(tmp)
	if err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
		t.Fatalf("temp directory %s: %v %v", tmp, st, err)
	}
	res, err := e.Query(ctx, "SELECT current_setting('allowed_directories')::VARCHAR[], current_setting('allowed_paths')::VARCHAR[]")
	if err != nil {
		t.Fatal(err)
	}
	dirs, paths := res.Rows[0][0].([]any), res.Rows[0][1].([]any)
	if len(dirs) != 1 || dirs[0] != tmp+"/" {
		t.Fatalf("allowed_directories = %v, want only the private temp folder %s/", dirs, tmp)
	}
	var want, got []string
	for _, tf := range m.Tables {
		for _, f := range tf.Files {
			p, err := l.Storage().LocalPath(ctx, f.Path)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, p)
		}
	}
	for _, p := range paths {
		got = append(got, p.(string))
	}
	sort.Strings(want)
	sort.Strings(got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("allowed_paths = %v, want the snapshot's data files %v", got, want)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Close left the temp directory %s: %v", tmp, err)
	}
}

// TestEmptyLakeEngine: a lake without snapshots still opens confined.
func TestEmptyLakeEngine(t *testing.T) {
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	e, err := query.Open(ctx, l, &lake.Manifest{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res, err := e.Query(ctx, "SELECT count(*) FROM tasks")
	if err != nil || res.Rows[0][0].(int64) != 0 {
		t.Fatalf("empty lake: %v %v", res, err)
	}
	if _, err := e.Query(ctx, "SELECT * FROM read_csv('/etc/passwd')"); err == nil {
		t.Fatal("an empty lake's session reads files")
	}
}
