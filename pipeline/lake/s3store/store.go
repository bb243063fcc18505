// Package s3store is the lake's S3 backend: a lake.Storage over
// s3://bucket/prefix on any S3-compatible object store (AWS S3, versitygw,
// MinIO), with a local content-addressed cache so that DuckDB and the
// stages can read data files as files.
//
// The commit protocol needs no rename: a manifest is created with a
// conditional PUT (If-None-Match: *), which fails with 412 if the object
// exists, and a ref is moved with a conditional PUT (If-Match: <etag of the
// value read>), which fails with 412 if another writer moved it first.
// Stores that ignore these headers would break exclusivity; Probe checks
// that a store honours them before a lake is trusted to it.
package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/cualake/cualake/pipeline/lake"
)

// Store is a lake.Storage in an S3 bucket under a prefix.
type Store struct {
	c      *client
	bucket string
	prefix string // "" or ending in "/"
	cache  *Cache
}

// New returns a Store for bucket/prefix with cache (required: the lake
// stages data files and DuckDB reads them through it).
func New(cfg Config, bucket, prefix string, cache *Cache) (*Store, error) {
	if !bucketName.MatchString(bucket) {
		return nil, fmt.Errorf("s3 bucket %q: not a valid bucket name", bucket)
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	if cache == nil {
		return nil, errors.New("s3 store: a cache folder is required")
	}
	if cfg.Endpoint != "" && !strings.Contains(cfg.Endpoint, "amazonaws.com") {
		cfg.PathStyle = true // custom endpoints rarely resolve bucket subdomains
	}
	if strings.Contains(bucket, ".") {
		cfg.PathStyle = true // dotted names break TLS on virtual hosts
	}
	c, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	return &Store{c: c, bucket: bucket, prefix: prefix, cache: cache}, nil
}

var bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

func (s *Store) String() string { return "s3://" + s.bucket + "/" + strings.TrimSuffix(s.prefix, "/") }

// Cache is the store's local cache.
func (s *Store) Cache() *Cache { return s.cache }

func (s *Store) objectKey(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") || strings.Contains("/"+key+"/", "/../") || strings.Contains("/"+key+"/", "/./") || strings.Contains(key, "//") {
		return "", fmt.Errorf("lake %s: key %q is not a clean relative path", s, key)
	}
	return s.prefix + key, nil
}

// mapErr turns S3 errors into the lake's sentinel errors.
func (s *Store) mapErr(key string, err error) error {
	var ae *apiError
	if errors.As(err, &ae) {
		switch {
		case ae.Code == "NoSuchBucket":
			return fmt.Errorf("%s: bucket %s does not exist (create it first): %w", s, s.bucket, err)
		case ae.Status == http.StatusNotFound:
			return fmt.Errorf("%s: %w", key, lake.ErrNotExist)
		case ae.Status == http.StatusForbidden:
			return fmt.Errorf("%s: access denied (check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY): %w", s, err)
		}
	}
	return err
}

func isPrecondition(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == http.StatusPreconditionFailed
}

// Get implements lake.Storage.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	b, _, err := s.getETag(ctx, key)
	return b, err
}

func (s *Store) getETag(ctx context.Context, key string) ([]byte, string, error) {
	ok, err := s.objectKey(key)
	if err != nil {
		return nil, "", err
	}
	backoff := firstBackoff
	for attempt := 1; ; attempt++ {
		resp, _, err := s.c.do(ctx, "GET", request{method: http.MethodGet, bucket: s.bucket, key: ok})
		if err != nil {
			return nil, "", s.mapErr(key, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			return b, resp.Header.Get("ETag"), nil
		}
		// The body broke off: read the object again.
		if attempt >= maxAttempts || ctx.Err() != nil {
			return nil, "", fmt.Errorf("GET %s: %w", s.where(key), err)
		}
		time.Sleep(backoff)
		backoff *= 2
	}
}

func (s *Store) where(key string) string { return "s3://" + s.bucket + "/" + s.prefix + key }

// Open implements lake.Storage.
func (s *Store) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	ok, err := s.objectKey(key)
	if err != nil {
		return nil, err
	}
	resp, _, err := s.c.do(ctx, "GET", request{method: http.MethodGet, bucket: s.bucket, key: ok})
	if err != nil {
		return nil, s.mapErr(key, err)
	}
	return resp.Body, nil
}

// stat returns an object's size and modification time.
func (s *Store) stat(ctx context.Context, key string) (int64, time.Time, error) {
	ok, err := s.objectKey(key)
	if err != nil {
		return 0, time.Time{}, err
	}
	resp, _, err := s.c.do(ctx, "HEAD", request{method: http.MethodHead, bucket: s.bucket, key: ok})
	if err != nil {
		return 0, time.Time{}, s.mapErr(key, err)
	}
	resp.Body.Close()
	mt, _ := http.ParseTime(resp.Header.Get("Last-Modified"))
	return resp.ContentLength, mt, nil
}

// Size implements lake.Storage.
func (s *Store) Size(ctx context.Context, key string) (int64, error) {
	n, _, err := s.stat(ctx, key)
	return n, err
}

// ModTime returns when an object was last written. gc can use it (through
// an interface check) to spare young unreferenced files without
// downloading them.
func (s *Store) ModTime(ctx context.Context, key string) (time.Time, error) {
	_, t, err := s.stat(ctx, key)
	return t, err
}

// PutIfAbsent implements lake.Storage with a conditional PUT
// (If-None-Match: *): the store creates the object only if the key is free,
// atomically, and answers 412 otherwise.
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	ok, err := s.objectKey(key)
	if err != nil {
		return err
	}
	body, n, sum := bytesBody(data)
	h := http.Header{"If-None-Match": {"*"}}
	resp, attempts, err := s.c.do(ctx, "PUT", request{method: http.MethodPut, bucket: s.bucket, key: ok, header: h, body: body, size: n, sha256: sum})
	if err == nil {
		resp.Body.Close()
		return nil
	}
	if isPrecondition(err) {
		if attempts > 1 {
			// An earlier attempt may have created it before its answer was
			// lost: then the object holds exactly our bytes.
			if cur, gerr := s.Get(ctx, key); gerr == nil && bytes.Equal(cur, data) {
				return nil
			}
		}
		return fmt.Errorf("%s: %w", key, lake.ErrExist)
	}
	return s.mapErr(key, err)
}

// contentAddressed matches keys whose name is the sha256 of their bytes.
var contentAddressed = regexp.MustCompile(`(^|/)data/([a-z0-9_]+)/([0-9a-f]{64})\.parquet$`)

// PutFile implements lake.Storage. A content-addressed data file that the
// store already holds is not uploaded again; the local file then moves into
// the cache, since the lake is about to read it back. Files above the
// multipart threshold (Config.MultipartThreshold) are uploaded in parts,
// streamed from the file (multipart.go); smaller ones with one PUT.
func (s *Store) PutFile(ctx context.Context, key, localPath string) error {
	ok, err := s.objectKey(key)
	if err != nil {
		return err
	}
	st, err := os.Stat(localPath)
	if err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	if contentAddressed.MatchString(key) {
		if n, err := s.Size(ctx, key); err == nil && n == st.Size() {
			return s.cache.adopt(key, localPath)
		}
	}
	if s.c.cfg.multipart(st.Size()) {
		if err := s.putMultipart(ctx, key, localPath, st.Size()); err != nil {
			return err
		}
	} else {
		body, n, sum, err := fileBody(localPath)
		if err != nil {
			return fmt.Errorf("write %s: %w", key, err)
		}
		resp, _, err := s.c.do(ctx, "PUT", request{method: http.MethodPut, bucket: s.bucket, key: ok, body: body, size: n, sha256: sum})
		if err != nil {
			return s.mapErr(key, err)
		}
		resp.Body.Close()
	}
	if contentAddressed.MatchString(key) {
		return s.cache.adopt(key, localPath)
	}
	return os.Remove(localPath)
}

// CompareAndSwap implements lake.Storage: read the object and its ETag,
// compare, then PUT with If-Match: <etag> (or If-None-Match: * when prev is
// nil). The store rejects the write with 412 if anyone wrote in between.
func (s *Store) CompareAndSwap(ctx context.Context, key string, prev, next []byte) error {
	ok, err := s.objectKey(key)
	if err != nil {
		return err
	}
	cur, etag, err := s.getETag(ctx, key)
	h := http.Header{}
	switch {
	case errors.Is(err, lake.ErrNotExist):
		if prev != nil {
			return fmt.Errorf("%s: %w: it does not exist", key, lake.ErrConflict)
		}
		h.Set("If-None-Match", "*")
	case err != nil:
		return err
	default:
		if prev == nil || !bytes.Equal(cur, prev) {
			return fmt.Errorf("%s: %w: it holds %q", key, lake.ErrConflict, strings.TrimSpace(string(cur)))
		}
		if etag == "" {
			return fmt.Errorf("%s: the store sent no ETag, so it cannot be updated safely", s.where(key))
		}
		h.Set("If-Match", etag)
	}
	body, n, sum := bytesBody(next)
	resp, attempts, err := s.c.do(ctx, "PUT", request{method: http.MethodPut, bucket: s.bucket, key: ok, header: h, body: body, size: n, sha256: sum})
	if err == nil {
		resp.Body.Close()
		return nil
	}
	if isPrecondition(err) {
		if attempts > 1 {
			if now, gerr := s.Get(ctx, key); gerr == nil && bytes.Equal(now, next) {
				return nil // our earlier attempt went through
			}
		}
		return fmt.Errorf("%s: %w: it changed while being updated", key, lake.ErrConflict)
	}
	return s.mapErr(key, err)
}

// Delete implements lake.Storage.
func (s *Store) Delete(ctx context.Context, key string) error {
	ok, err := s.objectKey(key)
	if err != nil {
		return err
	}
	resp, _, err := s.c.do(ctx, "DELETE", request{method: http.MethodDelete, bucket: s.bucket, key: ok})
	if err != nil {
		if errors.Is(s.mapErr(key, err), lake.ErrNotExist) {
			return nil
		}
		return s.mapErr(key, err)
	}
	resp.Body.Close()
	return nil
}

// listPageSize is the page size asked of ListObjectsV2 (tests shrink it).
var listPageSize = 1000

// List implements lake.Storage with ListObjectsV2.
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	token := ""
	for {
		q := url.Values{"list-type": {"2"}, "prefix": {s.prefix + prefix}, "max-keys": {fmt.Sprint(listPageSize)}}
		if token != "" {
			q.Set("continuation-token", token)
		}
		resp, _, err := s.c.do(ctx, "LIST", request{method: http.MethodGet, bucket: s.bucket, query: q})
		if err != nil {
			return nil, s.mapErr(prefix, err)
		}
		var res listResult
		err = decodeXML(resp.Body, &res)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", s.where(prefix), err)
		}
		for _, c := range res.Contents {
			k := strings.TrimPrefix(c.Key, s.prefix)
			if strings.HasSuffix(k, "/") {
				continue // folder markers some tools create
			}
			out = append(out, k)
		}
		if !res.IsTruncated || res.NextContinuationToken == "" {
			break
		}
		token = res.NextContinuationToken
	}
	sort.Strings(out)
	return out, nil
}

// LocalPath implements lake.Storage: the object is downloaded into the
// cache (once, for immutable objects; data files are checked against the
// sha256 in their name).
func (s *Store) LocalPath(ctx context.Context, key string) (string, error) {
	if _, err := s.objectKey(key); err != nil {
		return "", err
	}
	return s.cache.fetch(ctx, s, key)
}

// TempDir implements lake.Storage: staging inside the cache folder, so
// that uploaded data files move into the cache by rename.
func (s *Store) TempDir() string { return filepath.Join(s.cache.dir, "tmp") }

// CreateBucket creates the store's bucket (for tests and first-time setup
// against a private server); an existing bucket of ours is fine.
func (s *Store) CreateBucket(ctx context.Context) error {
	var body func() (io.ReadCloser, error)
	var n int64
	sum := ""
	if s.c.cfg.Region != "us-east-1" {
		b := []byte(`<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><LocationConstraint>` +
			s.c.cfg.Region + `</LocationConstraint></CreateBucketConfiguration>`)
		body, n, sum = bytesBody(b)
	}
	resp, _, err := s.c.do(ctx, "CREATE BUCKET", request{method: http.MethodPut, bucket: s.bucket, body: body, size: n, sha256: sum})
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) && (ae.Code == "BucketAlreadyOwnedByYou" || ae.Code == "BucketAlreadyExists") {
			return nil
		}
		return err
	}
	resp.Body.Close()
	return nil
}

// Probe checks that the store honours conditional writes, without which
// two writers could both "create" a manifest or both move a ref: it
// creates a probe object twice with If-None-Match: * and updates it with a
// stale If-Match, and expects both second writes to be refused.
func (s *Store) Probe(ctx context.Context) error {
	key := fmt.Sprintf("tmp/probe-%d", time.Now().UnixNano())
	defer s.Delete(ctx, key) //nolint:errcheck // best effort
	if err := s.PutIfAbsent(ctx, key, []byte("1")); err != nil {
		return fmt.Errorf("probe %s: %w", s, err)
	}
	if err := s.PutIfAbsent(ctx, key, []byte("2")); !errors.Is(err, lake.ErrExist) {
		return fmt.Errorf("probe %s: the store ignores If-None-Match (a second exclusive create returned %v); the lake cannot commit safely there", s, err)
	}
	_, etag, err := s.getETag(ctx, key)
	if err != nil {
		return fmt.Errorf("probe %s: %w", s, err)
	}
	if err := s.CompareAndSwap(ctx, key, []byte("1"), []byte("3")); err != nil {
		return fmt.Errorf("probe %s: compare-and-swap: %w", s, err)
	}
	ok, _ := s.objectKey(key)
	body, n, sum := bytesBody([]byte("4"))
	_, _, err = s.c.do(ctx, "PUT", request{method: http.MethodPut, bucket: s.bucket, key: ok, header: http.Header{"If-Match": {etag}},
		body: body, size: n, sha256: sum, noRetry: true})
	if !isPrecondition(err) {
		return fmt.Errorf("probe %s: the store ignores If-Match (a write with a stale ETag returned %v); the lake cannot commit safely there", s, err)
	}
	return nil
}
