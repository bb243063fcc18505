package exporter

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/outfile"
	"github.com/cualake/cualake/query"
	"github.com/cualake/cualake/schemas"
)

// DefaultShardRows is the number of rows per Parquet shard of an hf export.
const DefaultShardRows = 10000

// DefaultImageColumns are the columns of lake tables that hold screenshot
// blob hashes, exported as Image features unless told otherwise.
var DefaultImageColumns = map[string][]string{
	schemas.Steps.Name:         {"observation"},
	schemas.Verifications.Name: {"evidence"},
}

// HFOptions chooses what HF writes.
type HFOptions struct {
	// Table exports a table of the snapshot (in key order); SQL instead
	// runs one read-only statement through the confined query engine.
	Table string
	SQL   string
	// Images names columns holding screenshot blob hashes (a VARCHAR, or a
	// VARCHAR[] list of them) to write as Image features; nil takes
	// DefaultImageColumns for a table, none for SQL.
	Images []string
	// ShardRows is the number of rows per shard (default DefaultShardRows).
	ShardRows int
	// Split names the split of the shards (default "train").
	Split string
}

// HFReport says what HF wrote.
type HFReport struct {
	Snapshot string   `json:"snapshot"`
	Dir      string   `json:"dir"`
	Rows     int      `json:"rows"`
	Shards   []string `json:"shards"`
	Columns  []string `json:"columns"`
	Images   []string `json:"image_columns"`
	// ImageBlobs counts the distinct screenshots the rows hold.
	ImageBlobs int `json:"image_blobs"`
}

// HF writes a table or query of snapshot m as a Hugging Face datasets
// Parquet dataset in the folder dir: data/<split>-NNNNN-of-NNNNN.parquet
// shards carrying the features metadata datasets reads (image columns as
// the Image feature, struct<bytes, path>) and a README.md dataset card
// whose configs point load_dataset at the shards. dir must be absent or
// empty and outside any lake; it is staged beside and renamed into place.
func HF(ctx context.Context, l *lake.Lake, m *lake.Manifest, dir string, opts HFOptions) (*HFReport, error) {
	rep, err := hf(ctx, l, m, dir, opts)
	if err != nil {
		return nil, fmt.Errorf("export hf: %w", err)
	}
	return rep, nil
}

func hf(ctx context.Context, l *lake.Lake, m *lake.Manifest, dir string, opts HFOptions) (*HFReport, error) {
	if (opts.Table == "") == (opts.SQL == "") {
		return nil, fmt.Errorf("name a --table or give --sql, not both")
	}
	if opts.ShardRows == 0 {
		opts.ShardRows = DefaultShardRows
	}
	if opts.ShardRows < 1 {
		return nil, fmt.Errorf("--shard-rows %d: want at least 1", opts.ShardRows)
	}
	if opts.Split == "" {
		opts.Split = "train"
	}
	if !safeComponent(opts.Split) || strings.ContainsAny(opts.Split, "-* \t") {
		return nil, fmt.Errorf("--split %q: want a plain name without '-' (datasets splits shards by name)", opts.Split)
	}
	if err := outfile.CheckOutsideLakes(dir, lakeRoots(l)...); err != nil {
		return nil, err
	}
	stmt := opts.SQL
	if opts.Table != "" {
		info, ok := schemas.Lookup(opts.Table)
		if !ok {
			return nil, fmt.Errorf("no table %q (see cualake query --schema)", opts.Table)
		}
		if _, ok := m.Tables[info.Name]; !ok {
			return nil, fmt.Errorf("snapshot %s has no %s table", m.ID[:12], info.Name)
		}
		keys := make([]string, len(info.Key))
		for i, k := range info.Key {
			keys[i] = quoteIdent(k)
		}
		stmt = "SELECT * FROM " + quoteIdent(info.Name) + " ORDER BY " + strings.Join(keys, ", ")
		if opts.Images == nil {
			opts.Images = DefaultImageColumns[info.Name]
		}
	}
	e, err := query.Open(ctx, l, m)
	if err != nil {
		return nil, err
	}
	defer e.Close()

	// Pass 1: the columns, their types, and every screenshot the rows name,
	// all checked before anything is written.
	cols, types, err := hfColumns(ctx, e, stmt)
	if err != nil {
		return nil, err
	}
	imageCol := map[int]bool{}
	for _, name := range opts.Images {
		i := indexOf(cols, name)
		if i < 0 {
			return nil, fmt.Errorf("--image %s: the result has no such column (it has %s)", name, strings.Join(cols, ", "))
		}
		switch types[i] {
		case "VARCHAR":
			types[i] = "IMAGE"
		case "VARCHAR[]":
			types[i] = "IMAGE[]"
		default:
			return nil, fmt.Errorf("--image %s: column is %s; an image column holds blob hashes (VARCHAR or VARCHAR[])", name, types[i])
		}
		imageCol[i] = true
	}
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		var dt arrow.DataType
		switch types[i] {
		case "IMAGE":
			dt = ImageType
		case "IMAGE[]":
			dt = arrow.ListOf(ImageType)
		default:
			if dt, err = duckArrow(types[i]); err != nil {
				return nil, fmt.Errorf("column %s: %w", c, err)
			}
		}
		fields[i] = arrow.Field{Name: c, Type: dt, Nullable: true}
	}
	schema, err := withHFMetadata(arrow.NewSchema(fields, nil))
	if err != nil {
		return nil, err
	}
	var images *blobImages
	var pixels map[string][]byte
	perRG := rowsPerGroup
	if len(imageCol) > 0 {
		want := map[string]bool{}
		err := eachRow(ctx, e, stmt, len(cols), func(n int, vals []any) error {
			for i := range imageCol {
				hs, err := imageHashes(vals[i])
				if err != nil {
					return fmt.Errorf("row %d column %s: %w", n, cols[i], err)
				}
				for _, h := range hs {
					want[h] = true
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if images, err = resolveImages(ctx, l, m, want, nil); err != nil {
			return nil, err
		}
		if pixels, err = images.Bytes(ctx); err != nil {
			return nil, err
		}
		perRG = imageRowsPerGroup
	}
	rep := &HFReport{Snapshot: m.ID, Dir: dir, Columns: cols, Images: opts.Images, ImageBlobs: len(pixels)}
	if rep.Images == nil {
		rep.Images = []string{}
	}
	err = outfile.WriteDir(dir, func(tmp string) error {
		data := filepath.Join(tmp, "data")
		if err := os.Mkdir(data, 0o777); err != nil {
			return err
		}
		var shard *os.File
		var tw *tableWriter
		var parts []string
		closeShard := func() error {
			if tw == nil {
				return nil
			}
			err := tw.Close()
			if cerr := shard.Close(); err == nil {
				err = cerr
			}
			tw = nil
			return err
		}
		err := eachRow(ctx, e, stmt, len(cols), func(n int, vals []any) error {
			if tw == nil {
				p := filepath.Join(data, fmt.Sprintf(".part-%05d", len(parts)))
				f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
				if err != nil {
					return err
				}
				shard, parts = f, append(parts, p)
				if tw, err = newTableWriter(struct{ io.Writer }{f}, schema, perRG); err != nil {
					return err
				}
			}
			for i, v := range vals {
				var err error
				if imageCol[i] {
					err = appendImageValue(tw.Field(i), v, images, pixels)
				} else {
					err = appendValue(tw.Field(i), v)
				}
				if err != nil {
					return fmt.Errorf("row %d column %s: %w", n, cols[i], err)
				}
			}
			rep.Rows++
			if err := tw.Row(); err != nil {
				return err
			}
			if tw.rows == opts.ShardRows {
				return closeShard()
			}
			return nil
		})
		if cerr := closeShard(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if len(parts) == 0 {
			// No rows: one empty shard keeps the features readable.
			p := filepath.Join(data, ".part-00000")
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
			if err != nil {
				return err
			}
			shard, parts = f, []string{p}
			if tw, err = newTableWriter(struct{ io.Writer }{f}, schema, perRG); err != nil {
				return err
			}
			if err := closeShard(); err != nil {
				return err
			}
		}
		for i, p := range parts {
			name := fmt.Sprintf("%s-%05d-of-%05d.parquet", opts.Split, i, len(parts))
			if err := os.Rename(p, filepath.Join(data, name)); err != nil {
				return err
			}
			rep.Shards = append(rep.Shards, "data/"+name)
		}
		return os.WriteFile(filepath.Join(tmp, "README.md"), []byte(hfCard(m, stmt, opts, schema, rep)), 0o666)
	}, lakeRoots(l)...)
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// hfColumns returns the result's column names and DuckDB types without
// reading its rows.
func hfColumns(ctx context.Context, e *query.Engine, stmt string) ([]string, []string, error) {
	rows, err := e.Rows(ctx, stmt)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	if err != nil {
		return nil, nil, err
	}
	cols := make([]string, len(cts))
	types := make([]string, len(cts))
	seen := map[string]bool{}
	for i, ct := range cts {
		cols[i], types[i] = ct.Name(), ct.DatabaseTypeName()
		if seen[cols[i]] {
			return nil, nil, fmt.Errorf("the result has two columns named %s; alias one", cols[i])
		}
		seen[cols[i]] = true
	}
	return cols, types, nil
}

// eachRow runs stmt and calls fn with each row's values (numbered from 1).
func eachRow(ctx context.Context, e *query.Engine, stmt string, n int, fn func(row int, vals []any) error) error {
	rows, err := e.Rows(ctx, stmt)
	if err != nil {
		return err
	}
	defer rows.Close()
	return scanRows(rows, n, fn)
}

func scanRows(rows *sql.Rows, n int, fn func(row int, vals []any) error) error {
	vals := make([]any, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	row := 0
	for rows.Next() {
		row++
		for i := range vals {
			vals[i] = nil
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if err := fn(row, vals); err != nil {
			return err
		}
	}
	return rows.Err()
}

// imageHashes returns the blob hashes an image column's value names: a
// hash, a list of them, or none for NULL and "" (a step without a
// screenshot). An empty hash inside a list is an error.
func imageHashes(v any) ([]string, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		if x == "" {
			return nil, nil
		}
		return []string{x}, nil
	case []any:
		out := make([]string, 0, len(x))
		for k, e := range x {
			h, ok := e.(string)
			if !ok || h == "" {
				return nil, fmt.Errorf("element %d is %v, not a blob hash", k, e)
			}
			out = append(out, h)
		}
		return out, nil
	}
	return nil, fmt.Errorf("value %v (%T) is not a blob hash", v, v)
}

// appendImageValue writes an image column's value as Image {bytes, path}
// (or a list of them); NULL and "" are a null image.
func appendImageValue(b array.Builder, v any, images *blobImages, pixels map[string][]byte) error {
	hs, err := imageHashes(v)
	if err != nil {
		return err
	}
	switch bb := b.(type) {
	case *array.StructBuilder:
		if len(hs) == 0 {
			bb.AppendNull()
			return nil
		}
		appendImage(bb, pixels[hs[0]], images.Name(hs[0]))
	case *array.ListBuilder:
		if v == nil {
			bb.AppendNull()
			return nil
		}
		bb.Append(true)
		for _, h := range hs {
			appendImage(bb.ValueBuilder().(*array.StructBuilder), pixels[h], images.Name(h))
		}
	}
	return nil
}

// hfCard is the dataset card: YAML configs pointing datasets at the
// shards, then where the data came from and its features.
func hfCard(m *lake.Manifest, stmt string, opts HFOptions, schema *arrow.Schema, rep *HFReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: %s\n    path: data/%s-*\n---\n\n", opts.Split, opts.Split)
	what := "query"
	if opts.Table != "" {
		what = "table `" + opts.Table + "`"
	}
	fmt.Fprintf(&b, "# cualake export: %s\n\nExported by %s from snapshot `%s` (stage `%s`): %d rows in %d shard(s).\n\n",
		what, lake.CodeVersion, m.ID, m.Stage, rep.Rows, len(rep.Shards))
	fmt.Fprintf(&b, "```sql\n%s\n```\n\n", strings.TrimSpace(stmt))
	b.WriteString("Load it with Hugging Face datasets:\n\n```python\nfrom datasets import load_dataset\n")
	fmt.Fprintf(&b, "ds = load_dataset(\"parquet\", data_files={\"%s\": \"data/%s-*.parquet\"})[\"%s\"]\n", opts.Split, opts.Split, opts.Split)
	b.WriteString("# or, from the folder: load_dataset(\"path/to/this/folder\")\n```\n\n")
	b.WriteString("Image columns hold the Image feature (struct<bytes: binary, path: string>): PNG bytes, and the blob's file name `<sha256>.png`.\n\n")
	b.WriteString("## Features\n\n| column | Arrow type | feature |\n| --- | --- | --- |\n")
	for _, f := range schema.Fields() {
		var fb strings.Builder
		feat := "?"
		if sch, err := HFFeatures(arrow.NewSchema([]arrow.Field{f}, nil)); err == nil {
			fb.WriteString(sch)
			feat = strings.TrimSuffix(strings.TrimPrefix(fb.String(), `{"info":{"features":{`), `}}}`)
		}
		fmt.Fprintf(&b, "| %s | %s | `%s` |\n", f.Name, strings.ReplaceAll(f.Type.String(), "|", "\\|"), strings.ReplaceAll(feat, "|", "\\|"))
	}
	return b.String()
}

func indexOf(xs []string, x string) int {
	for i, s := range xs {
		if s == x {
			return i
		}
	}
	return -1
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
