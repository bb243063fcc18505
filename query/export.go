package query

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/outfile"
	"github.com/cualake/cualake/schemas"
)

// internal opens an unconfined single-threaded DuckDB for cualake's own
// statements (never user SQL); one thread keeps output files deterministic.
func internal(ctx context.Context) (*sql.DB, *sql.Conn, error) {
	connector, err := duckdb.NewConnector("", nil)
	if err != nil {
		return nil, nil, err
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	for _, s := range []string{"SET threads=1", "SET preserve_insertion_order=true", "SET autoinstall_known_extensions=false"} {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			conn.Close()
			db.Close()
			return nil, nil, err
		}
	}
	return db, conn, nil
}

func createViews(ctx context.Context, conn *sql.Conn, l *lake.Lake, m *lake.Manifest, prefix string) error {
	for _, info := range schemas.All() {
		stmt, _, err := viewSQL(ctx, l, m, info)
		if err != nil {
			return err
		}
		stmt = strings.Replace(stmt, "CREATE VIEW "+quoteIdent(info.Name), "CREATE VIEW "+quoteIdent(prefix+info.Name), 1)
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("view %s: %w", info.Name, err)
		}
	}
	return nil
}

// TableDiff is how one table differs between two snapshots.
type TableDiff struct {
	Table   string `json:"table"`
	RowsA   int64  `json:"rows_a"`
	RowsB   int64  `json:"rows_b"`
	Added   int64  `json:"added"`   // rows in B and not in A
	Removed int64  `json:"removed"` // rows in A and not in B
	Same    bool   `json:"same_files"`
}

// Diff compares every table of snapshots a and b row by row (whole rows,
// as multisets). Tables whose file lists are identical are not read.
func Diff(ctx context.Context, l *lake.Lake, a, b *lake.Manifest) ([]TableDiff, error) {
	db, conn, err := internal(ctx)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	defer conn.Close()
	if err := createViews(ctx, conn, l, a, "a_"); err != nil {
		return nil, err
	}
	if err := createViews(ctx, conn, l, b, "b_"); err != nil {
		return nil, err
	}
	var out []TableDiff
	for _, info := range schemas.All() {
		ta, okA := a.Tables[info.Name]
		tb, okB := b.Tables[info.Name]
		if !okA && !okB {
			continue
		}
		d := TableDiff{Table: info.Name, RowsA: ta.Rows, RowsB: tb.Rows, Same: sameFiles(ta, tb)}
		if !d.Same {
			q := fmt.Sprintf(`SELECT (SELECT count(*) FROM (SELECT * FROM "b_%[1]s" EXCEPT ALL SELECT * FROM "a_%[1]s")),
				(SELECT count(*) FROM (SELECT * FROM "a_%[1]s" EXCEPT ALL SELECT * FROM "b_%[1]s"))`, info.Name)
			if err := conn.QueryRowContext(ctx, q).Scan(&d.Added, &d.Removed); err != nil {
				return nil, fmt.Errorf("diff %s: %w", info.Name, err)
			}
		}
		out = append(out, d)
	}
	return out, nil
}

func sameFiles(a, b lake.TableFiles) bool {
	if len(a.Files) != len(b.Files) {
		return false
	}
	for i := range a.Files {
		if a.Files[i] != b.Files[i] {
			return false
		}
	}
	return true
}

// Export writes a self-contained release bundle of snapshot m into dir:
// Hive-partitioned Parquet per table (<table>/<column>=<value>/data_0.parquet
// for tables with a partition column), the manifest, SHA256SUMS and a
// dataset card README.md. dir must be absent or an empty directory, outside
// any lake; the bundle is staged in a private folder beside it (see
// outfile.WriteDir), so a failed export leaves nothing and destroys nothing.
func Export(ctx context.Context, l *lake.Lake, m *lake.Manifest, dir string) error {
	var lakes []string
	if local, ok := l.Storage().(interface{ Root() string }); ok {
		lakes = append(lakes, local.Root())
	}
	if err := outfile.WriteDir(dir, func(tmp string) error { return exportInto(ctx, l, m, tmp) }, lakes...); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// exportInto writes the bundle into the fresh folder tmp.
func exportInto(ctx context.Context, l *lake.Lake, m *lake.Manifest, tmp string) error {
	db, conn, err := internal(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	defer conn.Close()
	if err := createViews(ctx, conn, l, m, ""); err != nil {
		return err
	}
	for _, name := range m.TableNames() {
		info, _ := schemas.Lookup(name)
		order := strings.Join(quoteAll(info.Key), ", ")
		target := filepath.Join(tmp, name)
		var stmt string
		if info.Partition != "" {
			stmt = fmt.Sprintf(`COPY (SELECT * FROM %s ORDER BY %s) TO %s (FORMAT parquet, PARTITION_BY (%s), COMPRESSION zstd, FILENAME_PATTERN 'data_{i}')`,
				quoteIdent(name), order, quoteString(target), quoteIdent(info.Partition))
			if m.Tables[name].Rows == 0 {
				stmt = ""
			}
		} else {
			if err := os.MkdirAll(target, 0o777); err != nil {
				return err
			}
			stmt = fmt.Sprintf(`COPY (SELECT * FROM %s ORDER BY %s) TO %s (FORMAT parquet, COMPRESSION zstd)`,
				quoteIdent(name), order, quoteString(filepath.Join(target, "data_0.parquet")))
		}
		if stmt != "" {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("export %s: %w", name, err)
			}
		}
	}
	body, err := m.Encode()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "manifest.json"), body, 0o666); err != nil {
		return err
	}
	card, err := datasetCard(ctx, l, m)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "README.md"), []byte(card), 0o666); err != nil {
		return err
	}
	return writeSums(tmp)
}

func quoteAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = quoteIdent(x)
	}
	return out
}

func writeSums(dir string) error {
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		lines = append(lines, hex.EncodeToString(h.Sum(nil))+"  "+filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return err
	}
	sort.Slice(lines, func(a, b int) bool { return lines[a][66:] < lines[b][66:] })
	return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(strings.Join(lines, "\n")+"\n"), 0o666)
}

func datasetCard(ctx context.Context, l *lake.Lake, m *lake.Manifest) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# cualake dataset release\n\nSnapshot `%s`, produced by stage `%s` (seed %d, %s).\n\n", m.ID, m.Stage, m.Seed, m.CodeVersion)
	b.WriteString("Read it with any Parquet engine, e.g. DuckDB: `SELECT * FROM read_parquet('tasks/**/*.parquet', hive_partitioning=true)`.\n")
	b.WriteString("Check it with `sha256sum -c SHA256SUMS`.\n\n## Tables\n\n| table | rows | partitioned by | description |\n| --- | --- | --- | --- |\n")
	for _, name := range m.TableNames() {
		info, _ := schemas.Lookup(name)
		part := info.Partition
		if part == "" {
			part = "-"
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s |\n", name, m.Tables[name].Rows, part, info.Doc)
	}
	b.WriteString("\n## Schemas\n")
	for _, name := range m.TableNames() {
		info, _ := schemas.Lookup(name)
		fmt.Fprintf(&b, "\n### %s (schema version %d, key %s)\n\n| column | type | nullable |\n| --- | --- | --- |\n", name, info.Version, strings.Join(info.Key, ", "))
		for _, f := range info.Arrow().Fields() {
			fmt.Fprintf(&b, "| %s | %s | %v |\n", f.Name, f.Type, f.Nullable)
		}
	}
	b.WriteString("\n## Lineage\n\n| snapshot | stage | seed | parameters |\n| --- | --- | --- | --- |\n")
	log, err := l.Log(ctx, m.ID, 0)
	if err != nil {
		return "", err
	}
	for _, s := range log {
		fmt.Fprintf(&b, "| `%s` | %s | %d | `%s` |\n", s.ID[:12], s.Stage, s.Seed, strings.ReplaceAll(string(s.Params), "|", "\\|"))
	}
	return b.String(), nil
}
