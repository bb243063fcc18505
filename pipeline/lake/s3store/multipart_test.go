package s3store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/lake/storagetest"
)

// recorder is a transport that logs the multipart calls, measures how many
// parts are in flight at once, and lets a test fail or cancel a part.
type recorder struct {
	base http.RoundTripper
	// partDelay stretches each part so that parallel parts overlap.
	partDelay time.Duration
	// inject, if set, may answer a call ("create", "part N", "complete
	// if-none-match=...", "abort", "put") instead of the server.
	inject func(r *http.Request, op string) *http.Response

	mu          sync.Mutex
	ops         []string
	inflight    int
	maxInflight int
}

func (rec *recorder) log(op string) {
	rec.mu.Lock()
	rec.ops = append(rec.ops, op)
	rec.mu.Unlock()
}

func (rec *recorder) count(prefix string) int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	n := 0
	for _, op := range rec.ops {
		if strings.HasPrefix(op, prefix) {
			n++
		}
	}
	return n
}

func (rec *recorder) reset() {
	rec.mu.Lock()
	rec.ops, rec.maxInflight = nil, 0
	rec.mu.Unlock()
}

func (rec *recorder) RoundTrip(r *http.Request) (*http.Response, error) {
	q := r.URL.Query()
	op := ""
	switch {
	case r.Method == http.MethodPost && q.Has("uploads"):
		op = "create"
	case r.Method == http.MethodPost && q.Has("uploadId"):
		op = "complete if-none-match=" + r.Header.Get("If-None-Match")
	case r.Method == http.MethodDelete && q.Has("uploadId"):
		op = "abort"
	case r.Method == http.MethodPut && q.Has("partNumber"):
		op = "part " + q.Get("partNumber")
	case r.Method == http.MethodPut:
		op = "put"
	}
	if op == "" {
		return rec.base.RoundTrip(r)
	}
	rec.log(op)
	if rec.inject != nil {
		if resp := rec.inject(r, op); resp != nil {
			if r.Body != nil {
				r.Body.Close()
			}
			return resp, nil
		}
	}
	if strings.HasPrefix(op, "part ") {
		rec.mu.Lock()
		rec.inflight++
		rec.maxInflight = max(rec.maxInflight, rec.inflight)
		rec.mu.Unlock()
		defer func() {
			rec.mu.Lock()
			rec.inflight--
			rec.mu.Unlock()
		}()
		time.Sleep(rec.partDelay)
	}
	return rec.base.RoundTrip(r)
}

// mpServer starts versitygw and returns a maker of stores that upload
// through rec with 5 MiB parts above a 5 MiB threshold.
func mpServer(t *testing.T) (*recorder, func(t *testing.T, bucket, prefix string, tweak func(*Config)) *Store) {
	srv := storagetest.StartVersityGW(t)
	rec := &recorder{base: http.DefaultTransport.(*http.Transport).Clone()}
	mk := func(t *testing.T, bucket, prefix string, tweak func(*Config)) *Store {
		t.Helper()
		cfg := Config{Endpoint: srv.Endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey,
			HTTPClient: &http.Client{Transport: rec}, MultipartThreshold: MinPartSize, PartSize: MinPartSize, UploadConcurrency: 2}
		if tweak != nil {
			tweak(&cfg)
		}
		cache, err := OpenCache(t.TempDir(), 0)
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(cfg, bucket, prefix, cache)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	return rec, mk
}

// randomFile writes n pseudo-random bytes (seeded) in the store's staging
// folder, a MiB at a time, and returns its path and sha256.
func randomFile(t *testing.T, s *Store, n int64, seed uint64) (string, string) {
	t.Helper()
	if err := os.MkdirAll(s.TempDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(s.TempDir(), "mp-*")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rng := rand.New(rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)}))
	buf := make([]byte, 1<<20)
	h := sha256.New()
	for left := n; left > 0; left -= int64(len(buf)) {
		b := buf[:min(int64(len(buf)), left)]
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		h.Write(b)
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return f.Name(), hex.EncodeToString(h.Sum(nil))
}

func copyOf(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "copy")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMultipartRoundTrip(t *testing.T) {
	ctx := context.Background()
	rec, mk := mpServer(t)
	rec.partDelay = 50 * time.Millisecond
	s := mk(t, "multipart", "lake", nil)
	if err := s.CreateBucket(ctx); err != nil {
		t.Fatal(err)
	}
	// 13 MiB and a bit: parts of 5, 5 and 3 MiB (+123 bytes).
	path, sum := randomFile(t, s, 13<<20+123, 1)
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	key := "data/blobs/" + sum + ".parquet"
	rec.reset()
	if err := s.PutFile(ctx, key, path); err != nil {
		t.Fatal(err)
	}
	if n := rec.count("part "); n != 3 {
		t.Fatalf("%d parts uploaded, want 3: %v", n, rec.ops)
	}
	if rec.count("put") != 0 || rec.count("create") != 1 || rec.count("complete if-none-match=*") != 1 || rec.count("abort") != 0 {
		t.Fatalf("calls: %v", rec.ops)
	}
	if rec.maxInflight > 2 {
		t.Fatalf("%d parts in flight, bound 2", rec.maxInflight)
	}
	if rec.maxInflight < 2 {
		t.Fatalf("parts never overlapped (max in flight %d)", rec.maxInflight)
	}
	// Byte-identical through a fresh handle (empty cache).
	other := mk(t, "multipart", "lake", nil)
	got, err := other.Get(ctx, key)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes (%v), want %d identical bytes", len(got), err, len(want))
	}
	if p, err := other.LocalPath(ctx, key); err != nil {
		t.Fatalf("cached download (checked against the sha256 in its name): %v", err)
	} else if b, _ := os.ReadFile(p); !bytes.Equal(b, want) {
		t.Fatal("cached copy differs")
	}
	if n, err := other.Size(ctx, key); err != nil || n != int64(len(want)) {
		t.Fatalf("size %d %v", n, err)
	}
	if ups, err := s.Uploads(ctx); err != nil || len(ups) != 0 {
		t.Fatalf("uploads left: %v %v", ups, err)
	}

	// A second writer of the same data file: its completion is refused
	// (If-None-Match: *), the object stays, and its upload is aborted.
	rec.reset()
	if err := other.putMultipart(ctx, key, copyOf(t, want), int64(len(want))); err != nil {
		t.Fatalf("racing writer of the same content: %v", err)
	}
	if rec.count("complete if-none-match=*") != 1 || rec.count("abort") != 1 {
		t.Fatalf("calls: %v", rec.ops)
	}
	if ups, err := s.Uploads(ctx); err != nil || len(ups) != 0 {
		t.Fatalf("uploads left after a refused completion: %v %v", ups, err)
	}

	// A broken object under a data file's name (another size) is replaced.
	small, smallSum := randomFile(t, s, 6<<20, 2)
	smallKey := "data/blobs/" + smallSum + ".parquet"
	if err := s.PutIfAbsent(ctx, smallKey, []byte("truncated")); err != nil {
		t.Fatal(err)
	}
	smallWant, _ := os.ReadFile(small)
	if err := s.PutFile(ctx, smallKey, small); err != nil {
		t.Fatal(err)
	}
	if got, err := other.Get(ctx, smallKey); err != nil || !bytes.Equal(got, smallWant) {
		t.Fatalf("broken object not replaced: %d bytes, %v", len(got), err)
	}

	// Other keys above the threshold: multipart, no precondition, replaced.
	rec.reset()
	for i := 0; i < 2; i++ {
		p, _ := randomFile(t, s, 7<<20, uint64(10+i))
		b, _ := os.ReadFile(p)
		if err := s.PutFile(ctx, "fragments/big.bin", p); err != nil {
			t.Fatal(err)
		}
		if got, err := other.Get(ctx, "fragments/big.bin"); err != nil || !bytes.Equal(got, b) {
			t.Fatalf("fragment %d: %d bytes, %v", i, len(got), err)
		}
	}
	if rec.count("complete if-none-match=") != 2 || rec.count("complete if-none-match=*") != 0 {
		t.Fatalf("calls: %v", rec.ops)
	}
	// Below the threshold: one PUT.
	rec.reset()
	p, _ := randomFile(t, s, 1<<20, 3)
	if err := s.PutFile(ctx, "fragments/small.bin", p); err != nil {
		t.Fatal(err)
	}
	if rec.count("put") != 1 || rec.count("create") != 0 {
		t.Fatalf("calls: %v", rec.ops)
	}
}

// TestMultipartStreams checks that a large upload does not hold the file in
// memory: a 48 MiB file costs this process a few MiB of allocations.
func TestMultipartStreams(t *testing.T) {
	ctx := context.Background()
	_, mk := mpServer(t)
	s := mk(t, "stream", "", func(c *Config) { c.UploadConcurrency = 3 })
	if err := s.CreateBucket(ctx); err != nil {
		t.Fatal(err)
	}
	const size = 48 << 20
	path, sum := randomFile(t, s, size, 4)
	key := "data/blobs/" + sum + ".parquet"
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := s.PutFile(ctx, key, path); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Fatalf("uploading %d MiB allocated %d MiB: the file is not streamed", size>>20, alloc>>20)
	} else {
		t.Logf("uploading %d MiB allocated %.1f MiB", size>>20, float64(alloc)/(1<<20))
	}
	if _, err := mk(t, "stream", "", nil).LocalPath(ctx, key); err != nil {
		t.Fatalf("download checked against its sha256: %v", err)
	}
}

// injected is an S3 error answer (with status 200: an error that S3 reports
// after starting its answer to CompleteMultipartUpload).
func injected(r *http.Request, status int) *http.Response {
	code := "InvalidRequest"
	if status == http.StatusOK {
		code = "InternalError"
	}
	body := `<?xml version="1.0" encoding="UTF-8"?>` + "\n  " + `<Error><Code>` + code + `</Code><Message>injected failure</Message></Error>`
	return &http.Response{StatusCode: status, Status: fmt.Sprint(status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/xml"}}, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: r}
}

func TestMultipartAbortsOnFailure(t *testing.T) {
	ctx := context.Background()
	rec, mk := mpServer(t)
	s := mk(t, "aborts", "lake", nil)
	if err := s.CreateBucket(ctx); err != nil {
		t.Fatal(err)
	}
	// The listing sees uploads in progress (so that "none left" below
	// means something), and AbortStaleUploads clears those of dead writers.
	id, err := s.c.createMultipart(ctx, s.bucket, s.prefix+"data/x")
	if err != nil {
		t.Fatal(err)
	}
	ups, err := s.Uploads(ctx)
	if err != nil || len(ups) != 1 || ups[0].Key != "data/x" || ups[0].UploadID != id {
		t.Fatalf("uploads in progress: %+v %v", ups, err)
	}
	if n, err := s.AbortStaleUploads(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("a young upload was aborted: %d %v", n, err)
	}
	if n, err := s.AbortStaleUploads(ctx, 0); err != nil || n != 1 {
		t.Fatalf("AbortStaleUploads: %d %v", n, err)
	}
	if ups, err := s.Uploads(ctx); err != nil || len(ups) != 0 {
		t.Fatalf("uploads left: %+v %v", ups, err)
	}

	noneLeft := func(t *testing.T, key string) {
		t.Helper()
		if ups, err := s.Uploads(ctx); err != nil || len(ups) != 0 {
			t.Fatalf("orphan uploads: %+v %v", ups, err)
		}
		if _, err := s.Size(ctx, key); !errors.Is(err, lake.ErrNotExist) {
			t.Fatalf("the object exists after a failed upload: %v", err)
		}
		if rec.count("abort") == 0 {
			t.Fatalf("never aborted: %v", rec.ops)
		}
	}

	t.Run("FailingPart", func(t *testing.T) {
		rec.reset()
		rec.inject = func(r *http.Request, op string) *http.Response {
			if op == "part 2" {
				return injected(r, http.StatusBadRequest)
			}
			return nil
		}
		defer func() { rec.inject = nil }()
		path, sum := randomFile(t, s, 16<<20, 5)
		key := "data/blobs/" + sum + ".parquet"
		err := s.PutFile(ctx, key, path)
		if err == nil || !strings.Contains(err.Error(), "injected failure") {
			t.Fatalf("PutFile with a failing part: %v", err)
		}
		if rec.count("complete") != 0 {
			t.Fatalf("completed despite a failed part: %v", rec.ops)
		}
		noneLeft(t, key)
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("the local file is gone after a failed upload: %v", err)
		}
	})

	t.Run("CancelledMidway", func(t *testing.T) {
		rec.reset()
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		rec.inject = func(r *http.Request, op string) *http.Response {
			if op == "part 3" {
				cancel() // the caller gives up while parts are in flight
			}
			return nil
		}
		defer func() { rec.inject = nil }()
		path, sum := randomFile(t, s, 21<<20, 6)
		key := "data/blobs/" + sum + ".parquet"
		err := s.PutFile(cctx, key, path)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("PutFile cancelled midway: %v", err)
		}
		if rec.count("part ") < 3 || rec.count("complete") != 0 {
			t.Fatalf("calls: %v", rec.ops)
		}
		noneLeft(t, key)
	})

	t.Run("FailingCompletion", func(t *testing.T) {
		rec.reset()
		rec.inject = func(r *http.Request, op string) *http.Response {
			if strings.HasPrefix(op, "complete") {
				return injected(r, http.StatusBadRequest)
			}
			return nil
		}
		defer func() { rec.inject = nil }()
		path, sum := randomFile(t, s, 11<<20, 7)
		key := "data/blobs/" + sum + ".parquet"
		if err := s.PutFile(ctx, key, path); err == nil || !strings.Contains(err.Error(), "injected failure") {
			t.Fatalf("PutFile with a failing completion: %v", err)
		}
		noneLeft(t, key)
	})

	t.Run("ErrorInside200", func(t *testing.T) {
		// S3 may answer CompleteMultipartUpload 200 and then put an error
		// in the body: that is a failure, retried.
		rec.reset()
		first := true
		rec.inject = func(r *http.Request, op string) *http.Response {
			if strings.HasPrefix(op, "complete") && first {
				first = false
				return injected(r, http.StatusOK)
			}
			return nil
		}
		defer func() { rec.inject = nil }()
		path, sum := randomFile(t, s, 6<<20, 8)
		want, _ := os.ReadFile(path)
		key := "data/blobs/" + sum + ".parquet"
		if err := s.PutFile(ctx, key, path); err != nil {
			t.Fatal(err)
		}
		if rec.count("complete") != 2 || rec.count("abort") != 0 {
			t.Fatalf("calls: %v", rec.ops)
		}
		if got, err := s.Get(ctx, key); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("read back: %d bytes, %v", len(got), err)
		}
		if ups, err := s.Uploads(ctx); err != nil || len(ups) != 0 {
			t.Fatalf("uploads left: %+v %v", ups, err)
		}
	})
}

// TestS3ConformsMultipart runs the conformance suite with every non-empty
// file uploaded in parts.
func TestS3ConformsMultipart(t *testing.T) {
	rec, mk := mpServer(t)
	bucket := storagetest.NewBucketName("conform-mp")
	tiny := func(c *Config) { c.MultipartThreshold = 1 }
	if err := mk(t, bucket, "", tiny).CreateBucket(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := 0
	storagetest.Run(t, storagetest.Backend{
		New: func(t *testing.T) lake.Storage {
			n++
			return mk(t, bucket, fmt.Sprintf("lakes/%03d", n), tiny)
		},
		Reopen: func(t *testing.T, s lake.Storage) lake.Storage {
			return mk(t, bucket, strings.TrimSuffix(s.(*Store).prefix, "/"), tiny)
		},
	})
	if rec.count("complete") == 0 {
		t.Fatal("the suite never uploaded in parts")
	}
	if rec.count("abort") != 0 {
		t.Fatalf("%d uploads aborted during the suite", rec.count("abort"))
	}
}

func TestUploadSettings(t *testing.T) {
	cfg := Config{Endpoint: "http://127.0.0.1:1", AccessKey: "a", SecretKey: "b"}
	c, err := newClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c.cfg.MultipartThreshold != DefaultMultipartThreshold || c.cfg.PartSize != DefaultPartSize || c.cfg.UploadConcurrency != DefaultUploadConcurrency {
		t.Fatalf("defaults: %+v", c.cfg)
	}
	if c.cfg.multipart(64<<20) || !c.cfg.multipart(64<<20+1) {
		t.Fatal("threshold: files above 64 MiB go in parts")
	}
	if got := c.cfg.partSizeFor(1 << 40); got*maxParts < 1<<40 || got%(1<<20) != 0 {
		t.Fatalf("part size for 1 TiB: %d", got)
	}
	if got := c.cfg.partSizeFor(100 << 20); got != DefaultPartSize {
		t.Fatalf("part size for 100 MiB: %d", got)
	}
	never := cfg
	never.MultipartThreshold = -1
	if c, _ := newClient(never); c.cfg.multipart(4<<30) || !c.cfg.multipart(6<<30) {
		t.Fatal("a negative threshold leaves only files over 5 GiB to multipart")
	}
	for _, bad := range []Config{{PartSize: 1 << 20}, {PartSize: 6 << 30}, {UploadConcurrency: -1}} {
		bad.Endpoint, bad.AccessKey, bad.SecretKey = cfg.Endpoint, "a", "b"
		if _, err := newClient(bad); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}

	t.Setenv("AWS_ACCESS_KEY_ID", "a")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "b")
	t.Setenv("CUALAKE_S3_MULTIPART_THRESHOLD", "128MiB")
	t.Setenv("CUALAKE_S3_PART_SIZE", "8MiB")
	t.Setenv("CUALAKE_S3_UPLOAD_CONCURRENCY", "8")
	u, _ := url.Parse("s3://bkt/lake?endpoint=http://127.0.0.1:1&part_size=32MiB")
	s, err := FromURL(u, lake.OpenOptions{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if s.c.cfg.MultipartThreshold != 128<<20 || s.c.cfg.PartSize != 32<<20 || s.c.cfg.UploadConcurrency != 8 {
		t.Fatalf("settings from the URL and the environment: %+v", s.c.cfg)
	}
	t.Setenv("CUALAKE_S3_PART_SIZE", "1MiB")
	if _, err := FromURL(&url.URL{Scheme: "s3", Host: "bkt"}, lake.OpenOptions{CacheDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "5MiB") {
		t.Fatalf("a 1 MiB part size: %v", err)
	}
}
