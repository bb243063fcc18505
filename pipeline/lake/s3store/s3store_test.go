package s3store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/lake/storagetest"
	"github.com/cualake/cualake/schemas"
)

// server starts one versitygw per test and returns a maker of stores, each
// under a fresh prefix of one bucket.
func server(t *testing.T) (*storagetest.S3Server, func(t *testing.T, bucket, prefix, cacheDir string) *Store) {
	srv := storagetest.StartVersityGW(t)
	cfg := Config{Endpoint: srv.Endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey}
	mk := func(t *testing.T, bucket, prefix, cacheDir string) *Store {
		t.Helper()
		cache, err := OpenCache(cacheDir, 0)
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(cfg, bucket, prefix, cache)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	return srv, mk
}

func TestS3Conforms(t *testing.T) {
	_, mk := server(t)
	bucket := storagetest.NewBucketName("conform")
	if err := mk(t, bucket, "", t.TempDir()).CreateBucket(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := 0
	storagetest.Run(t, storagetest.Backend{
		New: func(t *testing.T) lake.Storage {
			n++
			return mk(t, bucket, fmt.Sprintf("lakes/%03d", n), t.TempDir())
		},
		Reopen: func(t *testing.T, s lake.Storage) lake.Storage {
			return mk(t, bucket, strings.TrimSuffix(s.(*Store).prefix, "/"), t.TempDir())
		},
	})
}

func TestProbeAndPaging(t *testing.T) {
	ctx := context.Background()
	_, mk := server(t)
	s := mk(t, "probe", "a/b", t.TempDir())
	if err := s.CreateBucket(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateBucket(ctx); err != nil {
		t.Fatalf("CreateBucket twice: %v", err)
	}
	if err := s.Probe(ctx); err != nil {
		t.Fatalf("versitygw should honour conditional writes: %v", err)
	}
	defer func(n int) { listPageSize = n }(listPageSize)
	listPageSize = 3
	for i := 0; i < 10; i++ {
		if err := s.PutIfAbsent(ctx, fmt.Sprintf("k/%02d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := s.List(ctx, "k/")
	if err != nil || len(keys) != 10 || keys[9] != "k/09" {
		t.Fatalf("paged list: %v %v", keys, err)
	}
	// Another prefix of the same bucket sees nothing of it.
	if keys, _ := mk(t, "probe", "a/bc", t.TempDir()).List(ctx, ""); len(keys) != 0 {
		t.Fatalf("prefix a/bc sees %v", keys)
	}
	missing := mk(t, "no-such-bucket", "", t.TempDir())
	if _, err := missing.Get(ctx, "lake.json"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing bucket: %v", err)
	}
	bad := mk(t, "probe", "a/b", t.TempDir())
	bad.c.cfg.SecretKey = "wrong"
	if _, err := bad.Get(ctx, "k/01"); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("wrong secret: %v", err)
	}
}

func TestCacheVerifiesAndEvicts(t *testing.T) {
	ctx := context.Background()
	_, mk := server(t)
	cacheDir := t.TempDir()
	s := mk(t, "cache", "", cacheDir)
	if err := s.CreateBucket(ctx); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := 0; i < 6; i++ {
		data := []byte(strings.Repeat(fmt.Sprint(i), 1000))
		key := "data/blobs/" + schemas.HashBytes(data) + ".parquet"
		if err := s.PutIfAbsent(ctx, key, data); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	// A corrupted object is never cached.
	bad := "data/blobs/" + strings.Repeat("0", 64) + ".parquet"
	if err := s.PutIfAbsent(ctx, bad, []byte("not those bytes")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LocalPath(ctx, bad); !errors.Is(err, lake.ErrCorrupt) {
		t.Fatalf("corrupted download: %v, want ErrCorrupt", err)
	}
	if _, err := os.Stat(s.cache.cachePath(s, bad)); err == nil {
		t.Fatal("a corrupted download was cached")
	}
	// Cached files are served without the store.
	p, err := s.LocalPath(ctx, keys[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, keys[0]); err != nil {
		t.Fatal(err)
	}
	if p2, err := s.LocalPath(ctx, keys[0]); err != nil || p2 != p {
		t.Fatalf("cached copy: %s %v", p2, err)
	}
	// Eviction: a bound of 2.5 files in a fresh process keeps the newest.
	c2, _ := OpenCache(cacheDir, 2500)
	s2, _ := New(s.c.cfg, "cache", "", c2)
	for _, k := range keys[1:] {
		if _, err := s2.LocalPath(ctx, k); err != nil {
			t.Fatal(err)
		}
		c2.Unpin() // as if each read came from a new process...
	}
	// ...but files used within the last minute are kept: age them.
	old := filepath.Join(cacheDir, "objects")
	filepath.Walk(old, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			os.Chtimes(p, info.ModTime().Add(-2*time.Hour), info.ModTime().Add(-2*time.Hour))
		}
		return nil
	})
	extra := []byte("fresh")
	key := "data/blobs/" + schemas.HashBytes(extra) + ".parquet"
	if err := s2.PutIfAbsent(ctx, key, extra); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.LocalPath(ctx, key); err != nil {
		t.Fatal(err)
	}
	if got := c2.Size(); got > 2500 {
		t.Fatalf("cache holds %d bytes, bound 2500", got)
	}
	if _, err := os.Stat(c2.cachePath(s2, key)); err != nil {
		t.Fatalf("the newest file was evicted: %v", err)
	}
}

func TestOpenURL(t *testing.T) {
	ctx := context.Background()
	srv, mk := server(t)
	if err := mk(t, "urls", "", t.TempDir()).CreateBucket(ctx); err != nil {
		t.Fatal(err)
	}
	srv.SetEnv(t)
	t.Setenv("CUALAKE_CACHE", t.TempDir())
	if _, err := lake.OpenURL(ctx, "s3://urls/lake", false, lake.OpenOptions{}); !errors.Is(err, lake.ErrNotALake) {
		t.Fatalf("open before init: %v", err)
	}
	l, err := lake.OpenURL(ctx, "s3://urls/lake", true, lake.OpenOptions{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if l.String() != "s3://urls/lake" {
		t.Fatalf("String: %s", l)
	}
	// gc asks the store for modification times instead of downloading.
	orphan := []byte("unreferenced")
	key := "data/blobs/" + schemas.HashBytes(orphan) + ".parquet"
	if err := l.Storage().PutIfAbsent(ctx, key, orphan); err != nil {
		t.Fatal(err)
	}
	if rep, err := l.GC(ctx, false, time.Hour); err != nil || len(rep.Removed) != 0 {
		t.Fatalf("gc with grace removed a young file: %+v %v", rep, err)
	}
	if rep, err := l.GC(ctx, false, 0); err != nil || len(rep.Removed) != 1 {
		t.Fatalf("gc without grace: %+v %v", rep, err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	if _, err := lake.OpenURL(ctx, "s3://urls/lake", false, lake.OpenOptions{}); err == nil || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
		t.Fatalf("no credentials: %v", err)
	}
	u, _ := url.Parse("s3://urls/lake?endpoint=http://127.0.0.1:1&region=eu-west-1")
	s, err := FromURL(u, lake.OpenOptions{CacheDir: t.TempDir()})
	if err == nil {
		t.Fatalf("no credentials accepted: %v", s)
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"512MiB": 512 << 20, "20GB": 20e9, "1.5g": 3 << 29, "1048576": 1 << 20, "0": -1, "unbounded": -1} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if _, err := ParseBytes("lots"); err == nil {
		t.Error("ParseBytes(lots): no error")
	}
}
