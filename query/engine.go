// Package query runs SQL over a lake snapshot with DuckDB: every table of
// the snapshot is a view named after it, and the session is confined to
// single read-only statements over the snapshot's own data files.
package query

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/mapping"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

var (
	// ErrNotReadOnly: the statement would do more than read.
	ErrNotReadOnly = errors.New("only read statements (SELECT, WITH, VALUES, EXPLAIN, DESCRIBE, SHOW, SUMMARIZE) are allowed")
	// ErrMultipleStatements: the text holds more than one statement.
	ErrMultipleStatements = errors.New("only one SQL statement is allowed")
	// ErrOutsideLake: the statement reads something other than the
	// snapshot's tables (a file, or a table function that reads files or
	// changes the session).
	ErrOutsideLake = errors.New("only the snapshot's tables may be read")
)

// Engine is a DuckDB session over one snapshot.
type Engine struct {
	db       *sql.DB
	conn     *sql.Conn
	parserMu sync.Mutex
	parser   *parser // opened on the first text the fast path of vet refuses
	tmp      string  // DuckDB's private temp_directory, removed by Close
	Snapshot *lake.Manifest
}

// Open creates views for every table of snapshot m (tables the snapshot
// lacks are empty views with the right columns), a `lake_snapshots` table of
// the lineage, and then locks the session down: no file access but the
// snapshot's data files and a private spill folder, no extensions, no
// configuration changes.
func Open(ctx context.Context, l *lake.Lake, m *lake.Manifest) (*Engine, error) {
	// DuckDB's default temp directory is <cwd>/.tmp, which it then allows
	// reads and writes in; a folder of our own holds only its spill files.
	tmp, err := os.MkdirTemp("", "cualake-duckdb-")
	if err != nil {
		return nil, fmt.Errorf("duckdb temp directory: %w", err)
	}
	e := &Engine{tmp: tmp, Snapshot: m}
	connector, err := duckdb.NewConnector("", nil)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("duckdb: %w", err)
	}
	e.db = sql.OpenDB(connector)
	e.db.SetMaxOpenConns(1)
	if e.conn, err = e.db.Conn(ctx); err != nil {
		e.Close()
		return nil, fmt.Errorf("duckdb: %w", err)
	}
	if err := e.setup(ctx, l); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

func (e *Engine) setup(ctx context.Context, l *lake.Lake) error {
	var files []string
	for _, info := range schemas.All() {
		stmt, paths, err := viewSQL(ctx, l, e.Snapshot, info)
		if err != nil {
			return err
		}
		files = append(files, paths...)
		if _, err := e.conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("create view %s: %w", info.Name, err)
		}
	}
	if err := e.lineage(ctx, l); err != nil {
		return err
	}
	lock := []string{
		// Times render the same on every machine, in DuckDB and in our output.
		"SET TimeZone='UTC'",
		"SET temp_directory=" + quoteString(e.tmp),
		"SET allowed_directories=[]",
		// Every query binds its views twice, once when vet prepares it to
		// confirm a SELECT and once when it runs, and each bind of
		// read_parquet reads every file's footer. The lake's data files
		// never change under a name (content-addressed), so the footers
		// read once serve both binds and every later query.
		"SET parquet_metadata_cache=true",
	}
	if len(files) > 0 {
		sort.Strings(files)
		q := make([]string, len(files))
		for i, f := range files {
			q[i] = quoteString(f)
		}
		// The exact data files, not the lake folder: refs and manifests
		// are not readable.
		lock = append(lock, "SET allowed_paths=["+strings.Join(q, ",")+"]")
	}
	lock = append(lock,
		// From here DuckDB opens only allowed paths and its temp_directory.
		"SET enable_external_access=false",
		"SET autoinstall_known_extensions=false",
		"SET autoload_known_extensions=false",
		"SET lock_configuration=true",
	)
	for _, s := range lock {
		if _, err := e.conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("confine duckdb (%s): %w", s, err)
		}
	}
	return nil
}

// viewSQL returns the CREATE VIEW statement for a table and the absolute
// paths of the files it reads.
func viewSQL(ctx context.Context, l *lake.Lake, m *lake.Manifest, info schemas.Info) (string, []string, error) {
	tf, ok := m.Tables[info.Name]
	if !ok || len(tf.Files) == 0 {
		return "CREATE VIEW " + quoteIdent(info.Name) + " AS " + emptySelect(info.Arrow()), nil, nil
	}
	var paths, quoted []string
	for _, f := range tf.Files {
		p, err := l.Storage().LocalPath(ctx, f.Path)
		if err == nil {
			p, err = filepath.Abs(p)
		}
		if err != nil {
			return "", nil, fmt.Errorf("table %s file %s: %w", info.Name, f.Path, err)
		}
		paths = append(paths, p)
		quoted = append(quoted, quoteString(p))
	}
	return fmt.Sprintf("CREATE VIEW %s AS SELECT * FROM read_parquet([%s])", quoteIdent(info.Name), strings.Join(quoted, ",")), paths, nil
}

// emptySelect is a typed zero-row SELECT, so queries against tables a
// snapshot does not have yet still find their columns.
func emptySelect(s *arrow.Schema) string {
	var cols []string
	for _, f := range s.Fields() {
		cols = append(cols, fmt.Sprintf("CAST(NULL AS %s) AS %s", duckType(f.Type), quoteIdent(f.Name)))
	}
	return "SELECT " + strings.Join(cols, ", ") + " WHERE false"
}

func duckType(t arrow.DataType) string {
	switch t.ID() {
	case arrow.STRING:
		return "VARCHAR"
	case arrow.BOOL:
		return "BOOLEAN"
	case arrow.INT8:
		return "TINYINT"
	case arrow.INT32:
		return "INTEGER"
	case arrow.INT64:
		return "BIGINT"
	case arrow.FLOAT32:
		return "FLOAT"
	case arrow.FLOAT64:
		return "DOUBLE"
	case arrow.BINARY:
		return "BLOB"
	case arrow.LIST:
		return duckType(t.(*arrow.ListType).Elem()) + "[]"
	}
	return "VARCHAR"
}

// lineage loads the snapshot's ancestry as the table lake_snapshots, so
// lineage is queryable like any other table. Its last column, heads, names
// the branches whose head is that snapshot when the engine opened (sorted;
// refs move, so unlike the other columns it is not pinned by the snapshot).
func (e *Engine) lineage(ctx context.Context, l *lake.Lake) error {
	if _, err := e.conn.ExecContext(ctx, `CREATE TABLE lake_snapshots (id VARCHAR, parent VARCHAR, depth INTEGER,
		stage VARCHAR, params VARCHAR, seed BIGINT, inputs VARCHAR[], changed VARCHAR[], code_version VARCHAR, committed_at VARCHAR,
		heads VARCHAR[], started_at VARCHAR)`); err != nil {
		return fmt.Errorf("lineage: %w", err)
	}
	if e.Snapshot.ID == "" {
		return nil
	}
	log, err := l.Log(ctx, e.Snapshot.ID, 0)
	if err != nil {
		return err
	}
	branches, err := l.Branches(ctx)
	if err != nil {
		return fmt.Errorf("lineage: %w", err)
	}
	heads := map[string][]string{}
	for name, id := range branches {
		heads[id] = append(heads[id], name)
	}
	for i, m := range log {
		hs := heads[m.ID]
		sort.Strings(hs)
		_, err := e.conn.ExecContext(ctx, `INSERT INTO lake_snapshots VALUES (?, ?, ?, ?, ?, ?, ?::VARCHAR[], ?::VARCHAR[], ?, ?, ?::VARCHAR[], ?)`,
			m.ID, m.Parent, i, m.Stage, string(m.Params), m.Seed, listLiteral(m.Inputs), listLiteral(m.Changed), m.CodeVersion, m.CommittedAt, listLiteral(hs), m.StartedAt)
		if err != nil {
			return fmt.Errorf("lineage: %w", err)
		}
	}
	return nil
}

func listLiteral(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = quoteString(x)
	}
	return "[" + strings.Join(q, ",") + "]"
}

// Close releases the session and removes its temp directory.
func (e *Engine) Close() error {
	var errs []error
	if e.conn != nil {
		errs = append(errs, e.conn.Close())
	}
	if e.db != nil {
		errs = append(errs, e.db.Close())
	}
	e.parserMu.Lock()
	if e.parser != nil {
		e.parser.close()
	}
	e.parserMu.Unlock()
	if err := os.RemoveAll(e.tmp); err != nil {
		errs = append(errs, fmt.Errorf("duckdb temp directory: %w", err))
	}
	return errors.Join(errs...)
}

// CheckReadOnly refuses stmt unless it is one read statement over the
// snapshot's tables. Nothing of stmt is bound or run before every check
// has passed.
func (e *Engine) CheckReadOnly(ctx context.Context, stmt string) error {
	_, err := e.vet(ctx, stmt)
	return err
}

// Rows runs a read-only query.
func (e *Engine) Rows(ctx context.Context, stmt string, args ...any) (*sql.Rows, error) {
	run, err := e.vet(ctx, stmt)
	if err != nil {
		return nil, err
	}
	rows, err := e.conn.QueryContext(ctx, run, args...)
	if err != nil {
		return nil, cleanError(err)
	}
	return rows, nil
}

// vet returns the text to run for stmt, or why it may not run. In order,
// each step on nothing but parsed text: DuckDB's statement extraction
// counts the statements (duckdb-go would run all but the last one of
// several); an EXPLAIN is split from the statement it explains (EXPLAIN
// ANALYZE runs it); json_serialize_sql, which only serializes SELECTs,
// gives the syntax tree, whose table functions and table names are
// checked; then preparing (binding, not running) confirms the type.
//
// The statement extraction needs a DuckDB database of its own (parser),
// whose start costs as much as the query's own database (a plain DuckDB
// process does neither twice). So a text json_serialize_sql serializes as
// exactly one SELECT, which the same DuckDB parser read, skips it: it is
// one statement. Every other text (refusals, errors) takes the full
// sequence, so its refusal is the one it always was.
func (e *Engine) vet(ctx context.Context, stmt string) (string, error) {
	if strings.IndexByte(stmt, 0) >= 0 {
		// C strings end at a NUL: DuckDB would see less than we check.
		return "", errors.New("the SQL text holds a NUL byte")
	}
	if body, run, explain, err := splitExplain(stmt); err == nil {
		if tree, err := e.serialize(ctx, body); err == nil && !tree.Error && len(tree.Statements) == 1 {
			if err := walkTree(tree.Statements[0]); err != nil {
				return "", err
			}
			return e.checkType(run, stmt, explain)
		}
	}
	p, err := e.openedParser()
	if err != nil {
		return "", err
	}
	n, err := p.count(stmt)
	if err != nil {
		return "", err
	}
	switch {
	case n == 0:
		return "", errors.New("empty SQL statement (only blanks or comments)")
	case n > 1:
		return "", fmt.Errorf("%w: the text holds %d statements (none was run)", ErrMultipleStatements, n)
	}
	body, run, explain, err := splitExplain(stmt)
	if err != nil {
		return "", err
	}
	if err := e.checkTree(ctx, body, explain); err != nil {
		return "", err
	}
	return e.checkType(run, stmt, explain)
}

// openedParser opens the statement parser on first use.
func (e *Engine) openedParser() (*parser, error) {
	e.parserMu.Lock()
	defer e.parserMu.Unlock()
	if e.parser == nil {
		p, err := openParser()
		if err != nil {
			return nil, err
		}
		e.parser = p
	}
	return e.parser, nil
}

// checkType prepares run (binding, not running it) and returns it if
// DuckDB's statement type is a SELECT (an EXPLAIN when explain).
func (e *Engine) checkType(run, stmt string, explain bool) (string, error) {
	typ, err := e.prepareType(run)
	if err != nil {
		return "", err
	}
	want := duckdb.STATEMENT_TYPE_SELECT
	if explain {
		want = duckdb.STATEMENT_TYPE_EXPLAIN
	}
	if typ != want {
		return "", fmt.Errorf("%w: DuckDB prepares %q as statement type %d", ErrNotReadOnly, leadingWord(stmt), typ)
	}
	return run, nil
}

// splitExplain returns the statement to check (stmt, or what an EXPLAIN
// explains) and the text to run. An EXPLAIN runs as "EXPLAIN " plus the
// checked statement, so no comment of the user's stands between them.
func splitExplain(stmt string) (body, run string, explain bool, err error) {
	w, i := wordAt(stmt, skipBlanks(stmt, 0))
	if !strings.EqualFold(w, "EXPLAIN") {
		return stmt, stmt, false, nil
	}
	j := skipBlanks(stmt, i)
	next, _ := wordAt(stmt, j)
	if j < len(stmt) && stmt[j] == '(' {
		next, _ = wordAt(stmt, skipBlanks(stmt, j+1))
	}
	if strings.EqualFold(next, "ANALYZE") || strings.EqualFold(next, "ANALYSE") {
		return "", "", false, fmt.Errorf("%w: EXPLAIN ANALYZE runs the statement it explains; use EXPLAIN", ErrNotReadOnly)
	}
	body = stmt[j:]
	return body, "EXPLAIN " + body, true, nil
}

// checkTree parses body with json_serialize_sql, which refuses anything
// but SELECTs, and walks the tree: table functions must be on the
// read-only list and table names must not be file paths (DuckDB would
// read the file by its name).
func (e *Engine) checkTree(ctx context.Context, body string, explain bool) error {
	tree, err := e.serialize(ctx, body)
	if err != nil {
		return err
	}
	what := leadingWord(body)
	if explain {
		what = "EXPLAIN " + what
	}
	switch {
	case tree.Error && tree.Type == "not implemented":
		// "Only SELECT statements can be serialized to json!"
		return fmt.Errorf("%w: %s", ErrNotReadOnly, what)
	case tree.Error && explain:
		return fmt.Errorf("%w: EXPLAIN takes a SELECT, without options: %s", ErrNotReadOnly, tree.Message)
	case tree.Error:
		return fmt.Errorf("parse: %s (%s)", tree.Message, tree.Type)
	case len(tree.Statements) != 1:
		return fmt.Errorf("%w: the text holds %d statements (none was run)", ErrMultipleStatements, len(tree.Statements))
	}
	return walkTree(tree.Statements[0])
}

// sqlTree is json_serialize_sql's answer: the syntax tree of a text of
// SELECTs, or why there is none.
type sqlTree struct {
	Error      bool   `json:"error"`
	Type       string `json:"error_type"`
	Message    string `json:"error_message"`
	Statements []any  `json:"statements"`
}

// serialize parses body with json_serialize_sql; body is a bound value,
// never run.
func (e *Engine) serialize(ctx context.Context, body string) (sqlTree, error) {
	var out string
	var tree sqlTree
	err := e.conn.QueryRowContext(ctx, "SELECT CAST(json_serialize_sql(CAST(? AS VARCHAR)) AS VARCHAR)", body).Scan(&out)
	if err != nil {
		return tree, fmt.Errorf("parse: %w", cleanError(err))
	}
	if err := json.Unmarshal([]byte(out), &tree); err != nil {
		return tree, fmt.Errorf("parse: json_serialize_sql: %w", err)
	}
	return tree, nil
}

// readOnlyTableFunctions are the table functions a query may call: none
// reads a file, and none changes the session (DuckDB does not stop
// enable_logging, checkpoint and the like under lock_configuration). The
// lake's tables are read through their views.
var readOnlyTableFunctions = map[string]bool{
	"range": true, "generate_series": true, "unnest": true, "repeat": true, "repeat_row": true,
	"json_each": true, "json_tree": true, "summary": true, "histogram": true, "histogram_values": true,
	"duckdb_columns": true, "duckdb_constraints": true, "duckdb_databases": true, "duckdb_dependencies": true,
	"duckdb_functions": true, "duckdb_indexes": true, "duckdb_keywords": true, "duckdb_schemas": true,
	"duckdb_sequences": true, "duckdb_settings": true, "duckdb_tables": true, "duckdb_types": true,
	"duckdb_views": true, "duckdb_variables": true, "duckdb_optimizers": true, "duckdb_memory": true,
	"pragma_table_info": true, "table_info": true, "pragma_show": true, "show": true, "show_tables": true,
	"show_tables_expanded": true, "show_databases": true, "pragma_version": true, "version": true,
	"pragma_platform": true, "platform": true, "pragma_collations": true, "collations": true,
	"icu_calendar_names": true, "pg_timezone_names": true, "test_all_types": true, "sql_auto_complete": true,
}

// walkTree checks every node of a serialized statement, in a fixed order
// so the same text always gives the same refusal.
func walkTree(v any) error {
	switch x := v.(type) {
	case map[string]any:
		switch x["type"] {
		case "TABLE_FUNCTION":
			fn, _ := x["function"].(map[string]any)
			name, _ := fn["function_name"].(string)
			if !readOnlyTableFunctions[strings.ToLower(name)] {
				return fmt.Errorf("%w: table function %s is not allowed (read the lake's tables by name, e.g. FROM tasks)", ErrOutsideLake, name)
			}
		case "BASE_TABLE", "SHOW_REF":
			if name, _ := x["table_name"].(string); strings.ContainsAny(name, `/\.:~`) {
				return fmt.Errorf("%w: %q names a file (read the lake's tables by name, e.g. FROM tasks)", ErrOutsideLake, name)
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := walkTree(x[k]); err != nil {
				return err
			}
		}
	case []any:
		for _, c := range x {
			if err := walkTree(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// prepareType prepares run without running it and returns its statement
// type. duckdb-go's Prepare (unlike PrepareContext) refuses a text of
// several statements before preparing any of them.
func (e *Engine) prepareType(run string) (duckdb.StmtType, error) {
	typ := duckdb.STATEMENT_TYPE_INVALID
	err := e.conn.Raw(func(dc any) error {
		c, ok := dc.(driver.Conn)
		if !ok {
			return errors.New("duckdb connection cannot prepare")
		}
		s, err := c.Prepare(run)
		if err != nil {
			return cleanError(err)
		}
		defer s.Close()
		ds, ok := s.(*duckdb.Stmt)
		if !ok {
			return errors.New("duckdb statement has an unexpected type")
		}
		typ, err = ds.StatementType()
		return err
	})
	return typ, err
}

// parser is a DuckDB database of its own, used only to split SQL text
// into statements: extraction parses and neither binds nor runs.
type parser struct {
	mu   sync.Mutex
	db   mapping.Database
	conn mapping.Connection
}

func openParser() (*parser, error) {
	var cfg mapping.Config
	if mapping.CreateConfig(&cfg) == mapping.StateError {
		return nil, errors.New("duckdb: cannot create the statement parser's configuration")
	}
	defer mapping.DestroyConfig(&cfg)
	if mapping.SetConfig(cfg, "enable_external_access", "false") == mapping.StateError {
		return nil, errors.New("duckdb: cannot configure the statement parser")
	}
	p := &parser{}
	var msg string
	if mapping.OpenExt("", &p.db, cfg, &msg) == mapping.StateError {
		return nil, fmt.Errorf("duckdb: open the statement parser: %s", msg)
	}
	if mapping.Connect(p.db, &p.conn) == mapping.StateError {
		mapping.Close(&p.db)
		return nil, errors.New("duckdb: connect the statement parser")
	}
	return p, nil
}

// count returns how many statements DuckDB's parser finds in text.
func (p *parser) count(text string) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var stmts mapping.ExtractedStatements
	n := mapping.ExtractStatements(p.conn, text, &stmts)
	defer mapping.DestroyExtracted(&stmts)
	if n == 0 {
		if msg := mapping.ExtractStatementsError(stmts); msg != "" {
			return 0, cleanError(errors.New(msg))
		}
	}
	return int(n), nil
}

func (p *parser) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	mapping.Disconnect(&p.conn)
	mapping.Close(&p.db)
}

// skipBlanks returns the offset of the first byte at or after i that is
// not whitespace or a comment, as DuckDB's scanner reads them: -- up to
// the end of the line, and /* */, which nest.
func skipBlanks(s string, i int) int {
	for i < len(s) {
		switch {
		case strings.IndexByte(" \t\n\r\f\v", s[i]) >= 0:
			i++
		case strings.HasPrefix(s[i:], "--"):
			j := strings.IndexAny(s[i:], "\n\r")
			if j < 0 {
				return len(s)
			}
			i += j
		case strings.HasPrefix(s[i:], "/*"):
			depth := 0
			for i < len(s) {
				if strings.HasPrefix(s[i:], "/*") {
					depth++
					i += 2
				} else if strings.HasPrefix(s[i:], "*/") {
					depth--
					i += 2
					if depth == 0 {
						break
					}
				} else {
					i++
				}
			}
		default:
			return i
		}
	}
	return i
}

// wordAt returns the keyword or identifier starting at i and the offset
// after it ("" when s[i] does not start one).
func wordAt(s string, i int) (string, int) {
	j := i
	for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || j > i && s[j] >= '0' && s[j] <= '9') {
		j++
	}
	return s[i:j], j
}

// leadingWord is the statement's first keyword, for messages.
func leadingWord(s string) string {
	i := skipBlanks(s, 0)
	if w, _ := wordAt(s, i); w != "" {
		return strings.ToUpper(w)
	}
	if i < len(s) {
		return s[i : i+1]
	}
	return "(empty statement)"
}

// cleanError keeps DuckDB's own message and drops driver noise.
func cleanError(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s", strings.TrimSpace(err.Error()))
}

func quoteIdent(s string) string  { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
