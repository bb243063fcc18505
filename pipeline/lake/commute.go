package lake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/cualake/cualake/schemas"
)

// Appends to a content-addressed table commute: a row's key is a hash of
// the row, so no appender's rows depend on what another adds, and two
// commits that each only appended disjoint keys give the same table in
// either order (as Delta Lake's blind appends). The rollout and train
// stages of the asynchronous loop both append to blobs (screenshots and
// checkpoints) while the other runs; every other shared table still
// conflicts.

// stillClashing removes from clash the tables where this transaction's
// change commutes with what the head added since base.
func (t *Txn) stillClashing(ctx context.Context, base, head *Manifest, clash []string) ([]string, error) {
	var out []string
	for _, n := range clash {
		ok, err := t.appendsCommute(ctx, base, head, n)
		if err != nil {
			return nil, err
		}
		if !ok {
			out = append(out, n)
		}
	}
	return out, nil
}

// appendsCommute reports whether table name is content-addressed, this
// transaction only appended to it, the head only appended to it since base
// (base's files are a prefix of the head's), and no key was added by both.
func (t *Txn) appendsCommute(ctx context.Context, base, head *Manifest, name string) (bool, error) {
	info, ok := schemas.Lookup(name)
	c := t.changes[name]
	if !ok || !info.ContentAddressed || c.replace || len(info.Key) == 0 {
		return false, nil
	}
	was, now := base.Tables[name], head.Tables[name]
	if len(now.Files) < len(was.Files) || (len(was.Files) > 0 && now.SchemaVersion != was.SchemaVersion) || now.SchemaVersion != info.Version {
		return false, nil
	}
	for i, f := range was.Files {
		if now.Files[i].Path != f.Path || now.Files[i].SHA256 != f.SHA256 {
			return false, nil // rewritten or replaced meanwhile
		}
	}
	ours := map[string]bool{}
	for _, f := range c.files {
		keys, err := fileKeys(ctx, t.lake, info, f)
		if err != nil {
			return false, err
		}
		for _, k := range keys {
			ours[k] = true
		}
	}
	for _, f := range now.Files[len(was.Files):] {
		keys, err := fileKeys(ctx, t.lake, info, f)
		if err != nil {
			return false, err
		}
		for _, k := range keys {
			if ours[k] {
				return false, nil // both added it: a duplicate row if rebased
			}
		}
	}
	return true, nil
}

// fileKeys reads the key columns of one data file (only those columns),
// each row's key as its columns' values joined by U+001F.
func fileKeys(ctx context.Context, l *Lake, info schemas.Info, f File) ([]string, error) {
	where := fmt.Sprintf("table %s file %s", info.Name, f.Path)
	var fields []reflect.StructField
	for _, k := range info.Key {
		sf, ok := fieldOf(info.RowType, k)
		if !ok {
			return nil, fmt.Errorf("%s: key column %q is not in the row type", where, k)
		}
		fields = append(fields, sf)
	}
	keyType := reflect.StructOf(fields)
	fh, pf, err := openDataFile(ctx, l, where, f)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	row := reflect.New(keyType)
	r := parquet.NewReader(pf, parquet.SchemaOf(row.Interface()))
	defer r.Close()
	var out []string
	parts := make([]string, len(fields))
	for {
		row.Elem().SetZero()
		if err := r.Read(row.Interface()); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("%s: %w: %v", where, ErrCorrupt, err)
		}
		for i := range fields {
			parts[i] = fmt.Sprint(row.Elem().Field(i).Interface())
		}
		out = append(out, strings.Join(parts, "\x1f"))
	}
	if int64(len(out)) != f.Rows {
		return nil, fmt.Errorf("%s: %w: %d rows read, manifest says %d", where, ErrCorrupt, len(out), f.Rows)
	}
	return out, nil
}

// fieldOf finds the struct field of the parquet column named col.
func fieldOf(rt reflect.Type, col string) (reflect.StructField, bool) {
	for i := 0; i < rt.NumField(); i++ {
		sf := rt.Field(i)
		if name, _, _ := strings.Cut(sf.Tag.Get("parquet"), ","); name == col {
			return sf, true
		}
	}
	return reflect.StructField{}, false
}
