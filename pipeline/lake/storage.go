// Package lake stores versioned, content-addressed snapshots of cualake's
// tables: immutable Parquet files named by their sha256, JSON manifests that
// list them, and refs that point at manifests. The manifest is the commit:
// data files are written first, the manifest is created exclusively, and
// only then does the ref move, so a crash at any point leaves the lake at its
// last committed snapshot.
package lake

import (
	"context"
	"errors"
	"io"
)

// Sentinel errors; callers test them with errors.Is.
var (
	// ErrNotExist: the object, snapshot, ref or table does not exist.
	ErrNotExist = errors.New("does not exist")
	// ErrExist: an exclusive create found the object already there.
	ErrExist = errors.New("already exists")
	// ErrConflict: a ref moved between read and update.
	ErrConflict = errors.New("conflict")
	// ErrCorrupt: an object's bytes do not match what the manifest says.
	ErrCorrupt = errors.New("corrupt")
	// ErrNotALake: the folder holds no lake.
	ErrNotALake = errors.New("not a cualake lake")
	// ErrNestedLake: the folder lies inside another lake's folder.
	ErrNestedLake = errors.New("inside another lake")
)

// Storage is the small interface the lake needs from a backend (a local
// folder, an object store). Keys are slash-separated relative paths. Every
// backend passes the conformance suite in storagetest.
type Storage interface {
	// Get reads a whole object; ErrNotExist if missing.
	Get(ctx context.Context, key string) ([]byte, error)
	// Open streams an object; ErrNotExist if missing.
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	// Size returns an object's size; ErrNotExist if missing.
	Size(ctx context.Context, key string) (int64, error)
	// PutIfAbsent creates an object atomically and exclusively: readers see
	// all of it or none of it; ErrExist if the key is taken.
	PutIfAbsent(ctx context.Context, key string, data []byte) error
	// PutFile moves a finished local file into place under key, atomically.
	// Used for content-addressed data files, so replacing an existing key
	// with the same bytes is harmless.
	PutFile(ctx context.Context, key, localPath string) error
	// CompareAndSwap replaces the object at key with next if it currently
	// holds prev (prev nil: the key must not exist); ErrConflict otherwise.
	CompareAndSwap(ctx context.Context, key string, prev, next []byte) error
	// Delete removes an object; deleting a missing object is not an error.
	Delete(ctx context.Context, key string) error
	// List returns the keys under a prefix, sorted.
	List(ctx context.Context, prefix string) ([]string, error)
	// LocalPath returns a filesystem path for key when the backend has one
	// (the local folder, or a cache for remote backends), so that DuckDB can
	// read the file directly.
	LocalPath(ctx context.Context, key string) (string, error)
	// TempDir is where the lake stages files before PutFile.
	TempDir() string
	// String names the backend and location for messages.
	String() string
}
