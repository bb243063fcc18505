package lake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/cualake/cualake/schemas"
)

// Writing is deterministic: a fixed created_by, codec, row-group size and
// no timestamps, with rows sorted by the table's key, so identical rows give
// identical bytes and hence identical file names.
const (
	defaultRowGroupRows = 64 * 1024
	// blobRowGroupRows keeps row groups of large binary rows small in memory.
	blobRowGroupRows = 64
	// MaxFileRows bounds one data file; larger tables are split.
	MaxFileRows = 1 << 20
)

func writerOptions(table string) []parquet.WriterOption {
	rg := int64(defaultRowGroupRows)
	if table == schemas.Blobs.Name {
		rg = blobRowGroupRows
	}
	return []parquet.WriterOption{
		parquet.CreatedBy("cualake", CodeVersion, ""),
		parquet.Compression(&zstd.Codec{Level: zstd.SpeedDefault, Concurrency: 1}),
		parquet.MaxRowsPerRowGroup(rg),
		parquet.KeyValueMetadata("cualake.table", table),
	}
}

// hashWriter hashes what passes through it.
type hashWriter struct {
	w io.Writer
	h hashState
	n int64
}

type hashState interface {
	io.Writer
	Sum([]byte) []byte
}

func (h *hashWriter) Write(p []byte) (int, error) {
	h.h.Write(p)
	h.n += int64(len(p))
	return h.w.Write(p)
}

// writeFile writes rows (already sorted) as one Parquet file and moves it
// into the lake under its content hash.
func writeFile[T any](ctx context.Context, l *Lake, def *schemas.Table[T], rows []T) (File, error) {
	dir := l.store.TempDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return File{}, fmt.Errorf("write %s: %w", def.Name, err)
	}
	f, err := os.CreateTemp(dir, def.Name+tmpMarker+"*")
	if err != nil {
		return File{}, fmt.Errorf("write %s: %w", def.Name, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	hw := &hashWriter{w: f, h: sha256.New()}
	w := parquet.NewGenericWriter[T](hw, writerOptions(def.Name)...)
	if _, err := w.Write(rows); err != nil {
		f.Close()
		return File{}, fmt.Errorf("write %s: %w", def.Name, err)
	}
	if err := w.Close(); err != nil {
		f.Close()
		return File{}, fmt.Errorf("write %s: %w", def.Name, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return File{}, fmt.Errorf("write %s: %w", def.Name, err)
	}
	if err := f.Close(); err != nil {
		return File{}, fmt.Errorf("write %s: %w", def.Name, err)
	}
	sum := hex.EncodeToString(hw.h.Sum(nil))
	file := File{Path: dataKey(def.Name, sum), SHA256: sum, Rows: int64(len(rows)), Bytes: hw.n}
	if err := l.store.PutFile(ctx, file.Path, tmp); err != nil {
		return File{}, err
	}
	return file, nil
}

// WriteRows validates, sorts and writes rows as the table's data files
// (at least one file, even for zero rows, so every table has a schema on
// disk). The rows slice is sorted in place.
func WriteRows[T any](ctx context.Context, l *Lake, def *schemas.Table[T], rows []T) ([]File, error) {
	if err := def.ValidateAll(rows); err != nil {
		return nil, err
	}
	def.Sort(rows)
	for i := 1; i < len(rows); i++ {
		if def.KeyOf(&rows[i-1]) == def.KeyOf(&rows[i]) {
			return nil, fmt.Errorf("%s: duplicate key %q", def.Name, def.KeyOf(&rows[i]))
		}
	}
	var files []File
	for start := 0; start == 0 || start < len(rows); start += MaxFileRows {
		end := min(start+MaxFileRows, len(rows))
		f, err := writeFile(ctx, l, def, rows[start:end])
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// ReplaceTable writes rows and makes them the table's whole content in the
// transaction.
func ReplaceTable[T any](ctx context.Context, tx *Txn, def *schemas.Table[T], rows []T) error {
	files, err := WriteRows(ctx, tx.lake, def, rows)
	if err != nil {
		return err
	}
	return tx.Replace(def.Name, files)
}

// AppendTable writes rows as new files of the table in the transaction; the
// parent's files stay shared. Appending no rows changes nothing.
func AppendTable[T any](ctx context.Context, tx *Txn, def *schemas.Table[T], rows []T) error {
	if len(rows) == 0 {
		return nil
	}
	files, err := WriteRows(ctx, tx.lake, def, rows)
	if err != nil {
		return err
	}
	return tx.Append(def.Name, files)
}

// ScanTable streams a table of a snapshot in chunks of at most chunk rows,
// file by file in manifest order. A table the snapshot lacks has no rows.
func ScanTable[T any](ctx context.Context, l *Lake, m *Manifest, def *schemas.Table[T], chunk int, fn func([]T) error) error {
	tf, ok := m.Tables[def.Name]
	if !ok {
		return nil
	}
	if chunk <= 0 {
		chunk = 4096
	}
	buf := make([]T, chunk)
	for _, f := range tf.Files {
		if err := scanFile(ctx, l, m, def.Name, f, buf, fn); err != nil {
			return err
		}
	}
	return nil
}

// openDataFile opens one data file of a manifest as Parquet, checking its
// size against the manifest; where names it in errors. The caller closes
// the returned file.
func openDataFile(ctx context.Context, l *Lake, where string, f File) (*os.File, *parquet.File, error) {
	path, err := l.store.LocalPath(ctx, f.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", where, err)
	}
	fh, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("%s: %w: data file is missing", where, ErrNotExist)
		}
		return nil, nil, fmt.Errorf("%s: %w", where, err)
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, nil, fmt.Errorf("%s: %w", where, err)
	}
	if st.Size() != f.Bytes {
		fh.Close()
		return nil, nil, fmt.Errorf("%s: %w: %d bytes on disk, manifest says %d", where, ErrCorrupt, st.Size(), f.Bytes)
	}
	pf, err := parquet.OpenFile(fh, st.Size())
	if err != nil {
		fh.Close()
		return nil, nil, fmt.Errorf("%s: %w: %v", where, ErrCorrupt, err)
	}
	return fh, pf, nil
}

func scanFile[T any](ctx context.Context, l *Lake, m *Manifest, table string, f File, buf []T, fn func([]T) error) error {
	where := fmt.Sprintf("snapshot %s table %s file %s", short(m.ID), table, f.Path)
	fh, pf, err := openDataFile(ctx, l, where, f)
	if err != nil {
		return err
	}
	defer fh.Close()
	r := parquet.NewGenericReader[T](pf)
	defer r.Close()
	var total int64
	for {
		n, err := r.Read(buf)
		if n > 0 {
			total += int64(n)
			if ferr := fn(buf[:n]); ferr != nil {
				return ferr
			}
			clear(buf[:n]) // the callback may not keep references; drop them for the GC
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w: %v", where, ErrCorrupt, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if total != f.Rows {
		return fmt.Errorf("%s: %w: %d rows read, manifest says %d", where, ErrCorrupt, total, f.Rows)
	}
	return nil
}

// ReadTable reads a whole table of a snapshot into memory.
func ReadTable[T any](ctx context.Context, l *Lake, m *Manifest, def *schemas.Table[T]) ([]T, error) {
	var out []T
	err := ScanTable(ctx, l, m, def, 4096, func(rows []T) error {
		out = append(out, rows...)
		return nil
	})
	return out, err
}

// blobKey projects the blobs table on its key column, so that finding which
// blobs exist never reads their bytes.
type blobKey struct {
	Hash string `parquet:"hash"`
}

// BlobHashes returns the set of blob hashes in a snapshot, reading only the
// hash column. Stages use it to store each blob once.
func BlobHashes(ctx context.Context, l *Lake, m *Manifest) (map[string]bool, error) {
	out := map[string]bool{}
	tf, ok := m.Tables[schemas.Blobs.Name]
	if !ok {
		return out, nil
	}
	buf := make([]blobKey, 4096)
	for _, f := range tf.Files {
		err := scanFile(ctx, l, m, schemas.Blobs.Name, f, buf, func(rows []blobKey) error {
			for _, r := range rows {
				out[r.Hash] = true
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Blob returns one blob's bytes and mime type by hash.
func Blob(ctx context.Context, l *Lake, m *Manifest, hash string) (*schemas.Blob, error) {
	var found *schemas.Blob
	errFound := errors.New("found")
	err := ScanTable(ctx, l, m, schemas.Blobs, 64, func(rows []schemas.Blob) error {
		for i := range rows {
			if rows[i].Hash == hash {
				b := rows[i]
				b.Bytes = append([]byte(nil), b.Bytes...)
				found = &b
				return errFound
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFound) {
		return nil, err
	}
	if found == nil {
		return nil, fmt.Errorf("blob %s in snapshot %s: %w", hash, short(m.ID), ErrNotExist)
	}
	return found, nil
}

// BlobsByHash returns the bytes of the wanted blobs of a snapshot in one scan
// of the blobs table; hashes it cannot find are an error naming one of them.
func BlobsByHash(ctx context.Context, l *Lake, m *Manifest, want map[string]bool) (map[string][]byte, error) {
	out := make(map[string][]byte, len(want))
	err := ScanTable(ctx, l, m, schemas.Blobs, 64, func(rows []schemas.Blob) error {
		for i := range rows {
			if want[rows[i].Hash] {
				out[rows[i].Hash] = append([]byte(nil), rows[i].Bytes...)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for h := range want {
		if _, ok := out[h]; !ok {
			return nil, fmt.Errorf("blob %s in snapshot %s: %w", h, short(m.ID), ErrNotExist)
		}
	}
	return out, nil
}
