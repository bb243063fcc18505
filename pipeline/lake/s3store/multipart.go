package s3store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Multipart upload of large files (CreateMultipartUpload, UploadPart,
// CompleteMultipartUpload, AbortMultipartUpload). A file above the
// threshold is read part by part straight from disk: each part is hashed
// for the signature (x-amz-content-sha256, which the store checks against
// the bytes it receives) and then sent from the same byte range of the
// file, so no part, let alone the file, is ever held in memory. At most
// UploadConcurrency parts are in flight per file. On any failure the
// upload is aborted after the parts in flight have stopped, so that no
// orphan parts are left behind (a process killed outright cannot abort:
// Store.AbortStaleUploads clears what such a process left).
//
// Manifests never go this way: they are small and are created by
// PutIfAbsent, one conditional PUT with If-None-Match: *.

const (
	// DefaultMultipartThreshold: files larger than this are uploaded in parts.
	DefaultMultipartThreshold = 64 << 20
	// DefaultPartSize is the size of every part but the last.
	DefaultPartSize = 16 << 20
	// DefaultUploadConcurrency bounds the parts of one file in flight.
	DefaultUploadConcurrency = 4
	// MinPartSize is S3's smallest part (every part but the last).
	MinPartSize = 5 << 20
	// maxPartSize and maxParts are S3's limits; maxSinglePut is the largest
	// object a single PUT may create.
	maxPartSize  = 5 << 30
	maxParts     = 10000
	maxSinglePut = 5 << 30
	// abortTimeout bounds the abort of a failed upload, which runs even
	// when the caller's context is cancelled.
	abortTimeout = 2 * time.Minute
)

// uploadSettings fills in the defaults of cfg's upload fields and checks
// them.
func (cfg *Config) uploadSettings() error {
	if cfg.MultipartThreshold == 0 {
		cfg.MultipartThreshold = DefaultMultipartThreshold
	}
	switch {
	case cfg.PartSize == 0:
		cfg.PartSize = DefaultPartSize
	case cfg.PartSize < MinPartSize || cfg.PartSize > maxPartSize:
		return fmt.Errorf("s3 part size %d: want between 5MiB and 5GiB (S3's limits)", cfg.PartSize)
	}
	switch {
	case cfg.UploadConcurrency == 0:
		cfg.UploadConcurrency = DefaultUploadConcurrency
	case cfg.UploadConcurrency < 0:
		return fmt.Errorf("s3 upload concurrency %d: want at least 1", cfg.UploadConcurrency)
	}
	return nil
}

// multipart says whether a file of size bytes is uploaded in parts: above
// the threshold (a negative threshold: never), and always above 5 GiB, which
// a single PUT cannot carry.
func (cfg *Config) multipart(size int64) bool {
	return size > maxSinglePut || (cfg.MultipartThreshold > 0 && size > cfg.MultipartThreshold)
}

// partSizeFor is the part size for a file of size bytes: the configured
// one, grown (to whole MiB) when the file would otherwise need more than
// 10,000 parts.
func (cfg *Config) partSizeFor(size int64) int64 {
	p := cfg.PartSize
	if (size+p-1)/p > maxParts {
		p = (size + maxParts - 1) / maxParts
		p = (p + 1<<20 - 1) &^ (1<<20 - 1)
	}
	return p
}

// completedPart is one <Part> of a CompleteMultipartUpload request.
type completedPart struct {
	PartNumber int    `xml:"PartNumber"`
	ETag       string `xml:"ETag"`
}

type completeMultipartUpload struct {
	XMLName xml.Name        `xml:"CompleteMultipartUpload"`
	Xmlns   string          `xml:"xmlns,attr"`
	Parts   []completedPart `xml:"Part"`
}

type initiateMultipartUploadResult struct {
	Bucket   string `xml:"Bucket"`
	Key      string `xml:"Key"`
	UploadID string `xml:"UploadId"`
}

type listMultipartUploadsResult struct {
	IsTruncated        bool   `xml:"IsTruncated"`
	NextKeyMarker      string `xml:"NextKeyMarker"`
	NextUploadIDMarker string `xml:"NextUploadIdMarker"`
	Uploads            []struct {
		Key       string `xml:"Key"`
		UploadID  string `xml:"UploadId"`
		Initiated string `xml:"Initiated"`
	} `xml:"Upload"`
}

// createMultipart starts an upload of bucket/key and returns its id.
func (c *client) createMultipart(ctx context.Context, bucket, key string) (string, error) {
	resp, _, err := c.do(ctx, "CREATE MULTIPART UPLOAD", request{method: http.MethodPost, bucket: bucket, key: key,
		query: url.Values{"uploads": {""}}})
	if err != nil {
		return "", err
	}
	var res initiateMultipartUploadResult
	err = decodeXML(resp.Body, &res)
	resp.Body.Close()
	if err != nil {
		return "", fmt.Errorf("create multipart upload s3://%s/%s: %w", bucket, key, err)
	}
	if res.UploadID == "" {
		return "", fmt.Errorf("create multipart upload s3://%s/%s: the store sent no UploadId", bucket, key)
	}
	return res.UploadID, nil
}

// uploadParts sends the file at path (size bytes) as parts of partSize
// bytes, at most workers at a time, and returns them in part order. The
// first failure stops the rest; uploadParts returns only once no part is in
// flight, so that an abort that follows leaves nothing behind.
func (c *client) uploadParts(ctx context.Context, bucket, key, uploadID, path string, size, partSize int64, workers int) ([]completedPart, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n := int((size + partSize - 1) / partSize)
	if n == 0 {
		n = 1 // an empty file is one empty part
	}
	parts := make([]completedPart, n)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	next := make(chan int)
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if ctx.Err() != nil {
					continue
				}
				off := int64(i) * partSize
				etag, err := c.uploadPart(ctx, bucket, key, uploadID, f, i+1, off, min(partSize, size-off))
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					cancel()
					continue
				}
				parts[i] = completedPart{PartNumber: i + 1, ETag: etag}
			}
		}()
	}
feed:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return parts, nil
}

// uploadPart sends bytes [off, off+length) of f as part number part and
// returns the part's ETag. The range is read twice (once to hash it for the
// signature, once to send it; again on each retry), never held in memory.
func (c *client) uploadPart(ctx context.Context, bucket, key, uploadID string, f *os.File, part int, off, length int64) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, off, length)); err != nil {
		return "", fmt.Errorf("upload part %d of s3://%s/%s: %w", part, bucket, key, err)
	}
	body := func() (io.ReadCloser, error) { return io.NopCloser(io.NewSectionReader(f, off, length)), nil }
	resp, _, err := c.do(ctx, "UPLOAD PART "+strconv.Itoa(part), request{method: http.MethodPut, bucket: bucket, key: key,
		query: url.Values{"partNumber": {strconv.Itoa(part)}, "uploadId": {uploadID}},
		body:  body, size: length, sha256: hex.EncodeToString(h.Sum(nil))})
	if err != nil {
		return "", err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) //nolint:errcheck // drain for reuse
	resp.Body.Close()
	etag := resp.Header.Get("ETag")
	if etag == "" {
		return "", fmt.Errorf("upload part %d of s3://%s/%s: the store sent no ETag", part, bucket, key)
	}
	return etag, nil
}

// completeMultipart assembles the parts. header carries the preconditions
// (If-None-Match: * for content-addressed data). S3 may answer 200 and
// then report an error in the body (it starts the answer early and keeps
// the connection alive while it assembles); that is retried like a 5xx. It
// returns how many requests were sent, so that the caller can tell "the
// upload is gone" after a retry (an earlier attempt finished it) from a
// real failure.
func (c *client) completeMultipart(ctx context.Context, bucket, key, uploadID string, parts []completedPart, header http.Header) (int, error) {
	doc, err := xml.Marshal(completeMultipartUpload{Xmlns: "http://s3.amazonaws.com/doc/2006-03-01/", Parts: parts})
	if err != nil {
		return 0, err
	}
	body, n, sum := bytesBody(doc)
	h := http.Header{"Content-Type": {"application/xml"}}
	for k, vs := range header {
		h[k] = vs
	}
	total := 0
	backoff := firstBackoff
	for attempt := 1; ; attempt++ {
		resp, sent, err := c.do(ctx, "COMPLETE MULTIPART UPLOAD", request{method: http.MethodPost, bucket: bucket, key: key,
			query: url.Values{"uploadId": {uploadID}}, header: h, body: body, size: n, sha256: sum})
		total += sent
		if err != nil {
			return total, err
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err == nil {
			var x struct {
				XMLName xml.Name
				Code    string `xml:"Code"`
				Message string `xml:"Message"`
			}
			if xml.Unmarshal(bytes.TrimSpace(b), &x) != nil || x.XMLName.Local != "Error" {
				return total, nil
			}
			err = &apiError{Status: resp.StatusCode, Code: x.Code, Message: x.Message, Op: "COMPLETE MULTIPART UPLOAD",
				Where: "s3://" + bucket + "/" + key}
		}
		if attempt >= maxAttempts || ctx.Err() != nil {
			return total, err
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return total, ctx.Err()
		}
		backoff *= 2
	}
}

// abortMultipart discards an upload and its parts; an upload that is
// already gone is fine. It runs under its own deadline, detached from a
// cancelled caller, since that is exactly when it is needed. A part the
// client gave up on may still be arriving at the server, which can then
// refuse the abort (versitygw answers 500) or, on S3, keep that part; so
// the abort is checked with ListParts and repeated until the upload is
// gone, as S3's documentation advises.
func (c *client) abortMultipart(ctx context.Context, bucket, key, uploadID string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	backoff := firstBackoff
	for attempt := 1; ; attempt++ {
		resp, _, err := c.do(ctx, "ABORT MULTIPART UPLOAD", request{method: http.MethodDelete, bucket: bucket, key: key,
			query: url.Values{"uploadId": {uploadID}}})
		if err != nil && !isNotFound(err) {
			return err
		}
		if resp != nil {
			resp.Body.Close()
		}
		resp, _, err = c.do(ctx, "LIST PARTS", request{method: http.MethodGet, bucket: bucket, key: key,
			query: url.Values{"uploadId": {uploadID}, "max-parts": {"1"}}})
		if isNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		resp.Body.Close()
		if attempt >= maxAttempts {
			return fmt.Errorf("abort multipart upload s3://%s/%s: the upload is still there after %d aborts", bucket, key, attempt)
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return ctx.Err()
		}
		backoff *= 2
	}
}

func isNotFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// Upload is a multipart upload in progress.
type Upload struct {
	Key       string // the lake key (without the store's prefix)
	UploadID  string
	Initiated time.Time
}

// Uploads lists the multipart uploads in progress under the store's prefix
// (ListMultipartUploads): normally none once every PutFile has returned.
func (s *Store) Uploads(ctx context.Context) ([]Upload, error) {
	var out []Upload
	keyMarker, idMarker := "", ""
	for {
		q := url.Values{"uploads": {""}, "prefix": {s.prefix}}
		if keyMarker != "" {
			q.Set("key-marker", keyMarker)
			q.Set("upload-id-marker", idMarker)
		}
		resp, _, err := s.c.do(ctx, "LIST MULTIPART UPLOADS", request{method: http.MethodGet, bucket: s.bucket, query: q})
		if err != nil {
			return nil, s.mapErr("", err)
		}
		var res listMultipartUploadsResult
		err = decodeXML(resp.Body, &res)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("list multipart uploads in %s: %w", s, err)
		}
		for _, u := range res.Uploads {
			t, _ := time.Parse(time.RFC3339, u.Initiated)
			out = append(out, Upload{Key: strings.TrimPrefix(u.Key, s.prefix), UploadID: u.UploadID, Initiated: t})
		}
		if !res.IsTruncated || res.NextKeyMarker == "" {
			break
		}
		keyMarker, idMarker = res.NextKeyMarker, res.NextUploadIDMarker
	}
	return out, nil
}

// AbortStaleUploads aborts the multipart uploads under the store's prefix
// that began more than olderThan ago: the leftovers of processes killed
// mid-upload (a living upload of a 10 GiB file takes minutes, not hours).
// It returns how many it aborted.
func (s *Store) AbortStaleUploads(ctx context.Context, olderThan time.Duration) (int, error) {
	ups, err := s.Uploads(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, u := range ups {
		if !u.Initiated.IsZero() && time.Since(u.Initiated) < olderThan {
			continue
		}
		if err := s.c.abortMultipart(ctx, s.bucket, s.prefix+u.Key, u.UploadID); err != nil {
			return n, s.mapErr(u.Key, err)
		}
		n++
	}
	return n, nil
}

// putMultipart uploads the local file at localPath (size bytes) to key in
// parts. For a content-addressed key the completion carries If-None-Match:
// *, so that of two writers racing on the same data file the second does
// not replace the first's object: its 412 means the object is there, and
// (content addressing: same name, same bytes) it is the same file, which
// the size confirms. An object of another size under that name is a broken
// one, which the upload then replaces, as a single PUT would. Any failure
// aborts the upload.
func (s *Store) putMultipart(ctx context.Context, key, localPath string, size int64) error {
	ok, err := s.objectKey(key)
	if err != nil {
		return err
	}
	id, err := s.c.createMultipart(ctx, s.bucket, ok)
	if err != nil {
		return s.mapErr(key, err)
	}
	completed, err := s.sendAndComplete(ctx, key, ok, id, localPath, size)
	if completed {
		return nil
	}
	if aerr := s.c.abortMultipart(ctx, s.bucket, ok, id); aerr != nil && err != nil {
		return fmt.Errorf("%w (and aborting the upload failed, leaving its parts: %v)", err, aerr)
	}
	// An abort that fails after the object turned out to be there already
	// leaves parts, not a broken lake: AbortStaleUploads clears them.
	return err
}

// sendAndComplete uploads the parts and completes the upload. completed
// says the upload no longer exists (it became the object); otherwise the
// caller aborts it, also when err is nil (the object was already there).
func (s *Store) sendAndComplete(ctx context.Context, key, ok, id, localPath string, size int64) (completed bool, err error) {
	parts, err := s.c.uploadParts(ctx, s.bucket, ok, id, localPath, size, s.c.cfg.partSizeFor(size), s.c.cfg.UploadConcurrency)
	if err != nil {
		return false, fmt.Errorf("write %s: %w", s.where(key), s.mapErr(key, err))
	}
	var h http.Header
	exclusive := contentAddressed.MatchString(key)
	if exclusive {
		h = http.Header{"If-None-Match": {"*"}}
	}
	attempts, err := s.c.completeMultipart(ctx, s.bucket, ok, id, parts, h)
	if err == nil {
		return true, nil
	}
	var ae *apiError
	if errors.As(err, &ae) && ae.Code == "NoSuchUpload" && attempts > 1 {
		// An earlier attempt completed it and its answer was lost.
		if n, serr := s.Size(ctx, key); serr == nil && n == size {
			return true, nil
		}
	}
	if exclusive && isPrecondition(err) {
		// The object exists: another writer's of the same content (or ours,
		// from an attempt whose answer was lost).
		if n, serr := s.Size(ctx, key); serr == nil && n == size {
			return false, nil
		}
		// Not those bytes: replace the broken object, as a single PUT would.
		if _, err = s.c.completeMultipart(ctx, s.bucket, ok, id, parts, nil); err == nil {
			return true, nil
		}
	}
	return false, fmt.Errorf("write %s: %w", s.where(key), s.mapErr(key, err))
}
