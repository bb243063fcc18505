package lake

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
)

// OpenOptions configure a remote backend opened by OpenURL. Zero values
// mean the backend's defaults (environment variables, then built-ins).
type OpenOptions struct {
	// CacheDir holds local copies of immutable objects (data files,
	// manifests) so that DuckDB and the stages can read them as files.
	CacheDir string
	// CacheMaxBytes bounds the cache; least recently used files are
	// evicted beyond it (0: the backend's default, <0: unbounded).
	CacheMaxBytes int64
	// Endpoint and Region override the object store's (e.g. a loopback
	// S3 server); empty means the backend's environment defaults.
	Endpoint, Region string
}

// Opener makes the Storage for a URL of one scheme.
type Opener func(ctx context.Context, u *url.URL, opt OpenOptions) (Storage, error)

var (
	schemesMu sync.Mutex
	schemes   = map[string]Opener{}
)

// RegisterScheme makes OpenURL handle scheme:// URLs with o. Backends
// register themselves in init (the s3store package registers "s3"), which
// keeps this package free of their client libraries.
func RegisterScheme(scheme string, o Opener) {
	schemesMu.Lock()
	defer schemesMu.Unlock()
	schemes[scheme] = o
}

// IsURL reports whether location names a remote lake (scheme://...) rather
// than a folder.
func IsURL(location string) bool {
	i := strings.Index(location, "://")
	return i > 0 && !strings.ContainsAny(location[:i], "/\\")
}

// OpenURL opens (or with create, initialises) the lake at location: a
// folder, file:///path, or a URL of a registered scheme such as
// s3://bucket/prefix.
func OpenURL(ctx context.Context, location string, create bool, opt OpenOptions) (*Lake, error) {
	if !IsURL(location) {
		return OpenDir(ctx, location, create)
	}
	u, err := url.Parse(location)
	if err != nil {
		return nil, fmt.Errorf("lake %s: %w", location, err)
	}
	if u.Scheme == "file" {
		return OpenDir(ctx, u.Path, create)
	}
	schemesMu.Lock()
	o, ok := schemes[u.Scheme]
	var known []string
	for s := range schemes {
		known = append(known, s+"://")
	}
	schemesMu.Unlock()
	if !ok {
		sort.Strings(known)
		return nil, fmt.Errorf("lake %s: no backend for %s:// (known: %s)", location, u.Scheme, strings.Join(append([]string{"a folder", "file://"}, known...), ", "))
	}
	st, err := o(ctx, u, opt)
	if err != nil {
		return nil, err
	}
	if create {
		// A new lake on a remote store: first make sure the store honours
		// the conditional writes the commit protocol relies on.
		if _, err := st.Get(ctx, markerKey); errors.Is(err, ErrNotExist) {
			if p, ok := st.(interface{ Probe(context.Context) error }); ok {
				if err := p.Probe(ctx); err != nil {
					return nil, err
				}
			}
		}
		return Init(ctx, st)
	}
	return Open(ctx, st)
}

// BeginFrom starts a transaction on top of snapshot id exactly, where ""
// means no parent at all, even when main already has snapshots. Merging
// shard fragments uses it to commit on the very input the shards read, so
// the merged snapshot is the one an unsharded run would have committed;
// Commit moves the handle's branch (main unless OnBranch) and rebases as
// usual if it moved meanwhile.
func (l *Lake) BeginFrom(ctx context.Context, id string) (*Txn, error) {
	if id == "" {
		t := l.newTxn()
		t.base = &Manifest{Tables: map[string]TableFiles{}}
		return t, nil
	}
	m, err := l.Snapshot(ctx, id)
	if err != nil {
		return nil, err
	}
	t := l.newTxn()
	t.parent, t.base = id, m
	return t, nil
}
