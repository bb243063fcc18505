// Package query runs SQL over a lake snapshot with DuckDB: every table of
// the snapshot is a view named after it, and the session is confined to
// read-only statements over the lake's own files.
package query

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

// ErrNotReadOnly: the statement would do more than read.
var ErrNotReadOnly = errors.New("only read statements (SELECT, WITH, EXPLAIN, DESCRIBE) are allowed")

// Engine is a DuckDB session over one snapshot.
type Engine struct {
	db       *sql.DB
	conn     *sql.Conn
	Snapshot *lake.Manifest
}

// Open creates views for every table of snapshot m (tables the snapshot
// lacks are empty views with the right columns), a `lake_snapshots` table of
// the lineage, and then locks the session down: no file access outside the
// lake, no extensions, no configuration changes.
func Open(ctx context.Context, l *lake.Lake, m *lake.Manifest) (*Engine, error) {
	connector, err := duckdb.NewConnector("", nil)
	if err != nil {
		return nil, fmt.Errorf("duckdb: %w", err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("duckdb: %w", err)
	}
	e := &Engine{db: db, conn: conn, Snapshot: m}
	if err := e.setup(ctx, l); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

func (e *Engine) setup(ctx context.Context, l *lake.Lake) error {
	var roots []string
	for _, info := range schemas.All() {
		stmt, root, err := viewSQL(ctx, l, e.Snapshot, info)
		if err != nil {
			return err
		}
		if root != "" {
			roots = append(roots, root)
		}
		if _, err := e.conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("create view %s: %w", info.Name, err)
		}
	}
	if err := e.lineage(ctx, l); err != nil {
		return err
	}
	dirs := map[string]bool{}
	var allowed []string
	for _, r := range roots {
		if !dirs[r] {
			dirs[r] = true
			allowed = append(allowed, quoteString(r+"/"))
		}
	}
	lock := []string{
		"SET allowed_directories=[" + strings.Join(allowed, ",") + "]",
		"SET enable_external_access=false",
		"SET autoinstall_known_extensions=false",
		"SET autoload_known_extensions=false",
		"SET lock_configuration=true",
	}
	for _, s := range lock {
		if _, err := e.conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("confine duckdb (%s): %w", s, err)
		}
	}
	return nil
}

// viewSQL returns the CREATE VIEW statement for a table and the folder its
// files live in.
func viewSQL(ctx context.Context, l *lake.Lake, m *lake.Manifest, info schemas.Info) (string, string, error) {
	tf, ok := m.Tables[info.Name]
	if !ok || len(tf.Files) == 0 {
		return "CREATE VIEW " + quoteIdent(info.Name) + " AS " + emptySelect(info.Arrow()), "", nil
	}
	var paths []string
	root := ""
	for _, f := range tf.Files {
		p, err := l.Storage().LocalPath(ctx, f.Path)
		if err != nil {
			return "", "", fmt.Errorf("table %s file %s: %w", info.Name, f.Path, err)
		}
		paths = append(paths, quoteString(p))
		root = filepath.Dir(filepath.Dir(filepath.Dir(p))) // <lake>/data/<table>/<file>
	}
	return fmt.Sprintf("CREATE VIEW %s AS SELECT * FROM read_parquet([%s])", quoteIdent(info.Name), strings.Join(paths, ",")), root, nil
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
// lineage is queryable like any other table.
func (e *Engine) lineage(ctx context.Context, l *lake.Lake) error {
	if _, err := e.conn.ExecContext(ctx, `CREATE TABLE lake_snapshots (id VARCHAR, parent VARCHAR, depth INTEGER,
		stage VARCHAR, params VARCHAR, seed BIGINT, inputs VARCHAR[], changed VARCHAR[], code_version VARCHAR, committed_at VARCHAR)`); err != nil {
		return fmt.Errorf("lineage: %w", err)
	}
	if e.Snapshot.ID == "" {
		return nil
	}
	log, err := l.Log(ctx, e.Snapshot.ID, 0)
	if err != nil {
		return err
	}
	for i, m := range log {
		_, err := e.conn.ExecContext(ctx, `INSERT INTO lake_snapshots VALUES (?, ?, ?, ?, ?, ?, ?::VARCHAR[], ?::VARCHAR[], ?, ?)`,
			m.ID, m.Parent, i, m.Stage, string(m.Params), m.Seed, listLiteral(m.Inputs), listLiteral(m.Changed), m.CodeVersion, m.CommittedAt)
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

// Close releases the session.
func (e *Engine) Close() error {
	if e.conn != nil {
		e.conn.Close()
	}
	return e.db.Close()
}

// CheckReadOnly prepares stmt and refuses anything but a read.
func (e *Engine) CheckReadOnly(ctx context.Context, stmt string) error {
	return e.conn.Raw(func(dc any) error {
		c, ok := dc.(driver.ConnPrepareContext)
		if !ok {
			return errors.New("duckdb connection cannot prepare")
		}
		s, err := c.PrepareContext(ctx, stmt)
		if err != nil {
			return cleanError(err)
		}
		defer s.Close()
		ds, ok := s.(*duckdb.Stmt)
		if !ok {
			return errors.New("duckdb statement has an unexpected type")
		}
		typ, err := ds.StatementType()
		if err != nil {
			return err
		}
		switch typ {
		case duckdb.STATEMENT_TYPE_SELECT, duckdb.STATEMENT_TYPE_EXPLAIN:
			return nil
		}
		return fmt.Errorf("%w: %s", ErrNotReadOnly, firstWord(stmt))
	})
}

// Rows runs a read-only query.
func (e *Engine) Rows(ctx context.Context, stmt string, args ...any) (*sql.Rows, error) {
	if err := e.CheckReadOnly(ctx, stmt); err != nil {
		return nil, err
	}
	rows, err := e.conn.QueryContext(ctx, stmt, args...)
	if err != nil {
		return nil, cleanError(err)
	}
	return rows, nil
}

// cleanError keeps DuckDB's own message and drops driver noise.
func cleanError(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s", strings.TrimSpace(err.Error()))
}

func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return "(empty statement)"
	}
	return strings.ToUpper(f[0])
}

func quoteIdent(s string) string  { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
