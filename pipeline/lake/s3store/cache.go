package s3store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"time"

	"github.com/cualake/cualake/pipeline/lake"
)

// Cache is a local folder of immutable lake objects, shared by every lake
// and process that uses it:
//
//	<dir>/objects/data/<table>/<sha256>.parquet   data files (and fragment files), by content
//	<dir>/objects/snapshots/<id>.json             manifests (their name is their content hash)
//	<dir>/mutable/<lake>/<key>                     other objects, fetched afresh on every read
//	<dir>/tmp/                                     downloads and uploads in progress
//
// Content-addressed files never go stale, so a cached copy is always valid;
// a download is checked against the sha256 in its name before it is used.
// The folder is bounded by MaxBytes: beyond it the least recently used
// files are evicted (recency is the file's mtime, refreshed on each use).
type Cache struct {
	dir string
	// MaxBytes bounds objects/ (<= 0: unbounded). The bound is soft: files
	// this process handed out, and files used in the last minute by any
	// process, are never evicted, so that a query never loses a file it is
	// about to open.
	MaxBytes int64

	mu     sync.Mutex
	pinned map[string]bool
	total  int64 // bytes in objects/; -1 until scanned
}

// DefaultCacheBytes bounds a cache when nothing else does.
const DefaultCacheBytes = 20 << 30

// recentlyUsed protects files another process may be reading.
const recentlyUsed = time.Minute

// OpenCache returns the cache in dir (created if needed).
func OpenCache(dir string, maxBytes int64) (*Cache, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("cache %s: %w", dir, err)
	}
	for _, sub := range []string{"objects", "mutable", "tmp"} {
		if err := os.MkdirAll(filepath.Join(abs, sub), 0o755); err != nil {
			return nil, fmt.Errorf("cache %s: %w", dir, err)
		}
	}
	return &Cache{dir: abs, MaxBytes: maxBytes, pinned: map[string]bool{}, total: -1}, nil
}

// Dir is the cache folder.
func (c *Cache) Dir() string { return c.dir }

var manifestKey = regexp.MustCompile(`^snapshots/[0-9a-f]{64}\.json$`)

// place says where key lives in the cache, whether it is immutable, and the
// sha256 its bytes must have ("" if unknown).
func (c *Cache) place(s *Store, key string) (path string, immutable bool, sum string) {
	if m := contentAddressed.FindStringSubmatch(key); m != nil {
		return filepath.Join(c.dir, "objects", "data", m[2], m[3]+".parquet"), true, m[3]
	}
	if manifestKey.MatchString(key) {
		return filepath.Join(c.dir, "objects", filepath.FromSlash(key)), true, ""
	}
	h := sha256.Sum256([]byte(s.String()))
	return filepath.Join(c.dir, "mutable", hex.EncodeToString(h[:8]), filepath.FromSlash(key)), false, ""
}

// fetch returns a local path holding key's bytes.
func (c *Cache) fetch(ctx context.Context, s *Store, key string) (string, error) {
	path, immutable, sum := c.place(s, key)
	if immutable {
		if _, err := os.Stat(path); err == nil {
			c.touch(path)
			return path, nil
		}
	}
	r, err := s.Open(ctx, key)
	if err != nil {
		return "", err
	}
	defer r.Close()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("cache %s: %w", key, err)
	}
	tmp, err := os.CreateTemp(filepath.Join(c.dir, "tmp"), "get-*")
	if err != nil {
		return "", fmt.Errorf("cache %s: %w", key, err)
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), r)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("download %s: %w", s.where(key), err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); sum != "" && got != sum {
		return "", fmt.Errorf("%s: %w: its bytes hash to %s", s.where(key), lake.ErrCorrupt, got)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("cache %s: %w", key, err)
	}
	if immutable {
		c.added(path, n)
	}
	return path, nil
}

// adopt moves a file the lake just uploaded into the cache.
func (c *Cache) adopt(key, localPath string) error {
	m := contentAddressed.FindStringSubmatch(key)
	if m == nil {
		return os.Remove(localPath)
	}
	path := filepath.Join(c.dir, "objects", "data", m[2], m[3]+".parquet")
	st, err := os.Stat(localPath)
	if err != nil {
		return fmt.Errorf("cache %s: %w", key, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("cache %s: %w", key, err)
	}
	if _, err := os.Stat(path); err == nil {
		c.touch(path)
		return os.Remove(localPath)
	}
	if err := os.Rename(localPath, path); err != nil {
		// Another filesystem: the cache is only an optimisation.
		return os.Remove(localPath)
	}
	c.added(path, st.Size())
	return nil
}

func (c *Cache) touch(path string) {
	now := time.Now()
	os.Chtimes(path, now, now) //nolint:errcheck // recency is a hint
	c.mu.Lock()
	c.pinned[path] = true
	c.mu.Unlock()
}

// added accounts a new file and evicts if the cache grew past its bound.
func (c *Cache) added(path string, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pinned[path] = true
	if c.MaxBytes <= 0 {
		return
	}
	if c.total < 0 {
		c.total = c.scanLocked(nil)
	} else {
		c.total += n
	}
	if c.total > c.MaxBytes {
		c.evictLocked()
	}
}

type cachedFile struct {
	path string
	size int64
	used time.Time
}

// scanLocked sums objects/ and collects its files when files is non-nil.
func (c *Cache) scanLocked(files *[]cachedFile) int64 {
	var total int64
	filepath.WalkDir(filepath.Join(c.dir, "objects"), func(p string, d fs.DirEntry, err error) error { //nolint:errcheck // a partial scan only makes the bound softer
		if err != nil || d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		total += info.Size()
		if files != nil {
			*files = append(*files, cachedFile{p, info.Size(), info.ModTime()})
		}
		return nil
	})
	return total
}

// evictLocked removes least recently used files until the cache is below
// 90% of its bound (the slack keeps eviction from running on every add).
func (c *Cache) evictLocked() {
	var files []cachedFile
	c.total = c.scanLocked(&files)
	sort.Slice(files, func(a, b int) bool { return files[a].used.Before(files[b].used) })
	target := c.MaxBytes / 10 * 9
	cutoff := time.Now().Add(-recentlyUsed)
	for _, f := range files {
		if c.total <= target {
			break
		}
		if c.pinned[f.path] || f.used.After(cutoff) {
			continue
		}
		if err := os.Remove(f.path); err == nil || errors.Is(err, fs.ErrNotExist) {
			c.total -= f.size
		}
	}
}

// Size returns the bytes the cache holds in objects/.
func (c *Cache) Size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.scanLocked(nil)
}

// Unpin forgets which files this process handed out, making them evictable
// again (long-running processes call it between jobs).
func (c *Cache) Unpin() {
	c.mu.Lock()
	c.pinned = map[string]bool{}
	c.mu.Unlock()
}

func decodeXML(r io.Reader, v any) error {
	b, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return err
	}
	if err := xml.Unmarshal(b, v); err != nil {
		return fmt.Errorf("malformed response: %w", err)
	}
	return nil
}

// cachePath is used by tests to corrupt or drop cached copies.
func (c *Cache) cachePath(s *Store, key string) string {
	p, _, _ := c.place(s, key)
	return p
}
