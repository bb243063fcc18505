package s3store

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"
)

// A small S3 client: the handful of calls the lake needs (GET, HEAD, PUT
// with conditional headers, DELETE, ListObjectsV2, CreateBucket, and the
// multipart upload calls in multipart.go), signed
// with AWS Signature Version 4. Written here rather than pulled in from an
// SDK so that the lake's module graph stays small and the conditional
// headers the commit protocol relies on are explicit.

const (
	emptySHA256    = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	amzDateFormat  = "20060102T150405Z"
	maxAttempts    = 5
	firstBackoff   = 100 * time.Millisecond
	requestTimeout = 10 * time.Minute
)

// Config says where and as whom to reach the object store.
type Config struct {
	// Endpoint is scheme://host[:port] (e.g. http://127.0.0.1:7070); empty
	// means AWS's regional endpoint.
	Endpoint string
	Region   string
	// AccessKey, SecretKey and SessionToken are the credentials (from
	// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN).
	AccessKey, SecretKey, SessionToken string
	// PathStyle addresses buckets as endpoint/bucket/key instead of
	// bucket.endpoint/key; the default for custom endpoints.
	PathStyle bool
	// HTTPClient is the transport (nil: a default with timeouts).
	HTTPClient *http.Client

	// MultipartThreshold: files larger than this are uploaded in parts
	// (0: DefaultMultipartThreshold, 64 MiB; negative: only files over
	// 5 GiB, which a single PUT cannot carry).
	MultipartThreshold int64
	// PartSize is the size of every part but the last (0: DefaultPartSize,
	// 16 MiB; at least 5 MiB, S3's minimum). It grows for files that would
	// otherwise need more than S3's 10,000 parts.
	PartSize int64
	// UploadConcurrency bounds the parts of one file in flight
	// (0: DefaultUploadConcurrency, 4).
	UploadConcurrency int
}

type client struct {
	cfg  Config
	base *url.URL
	http *http.Client
	now  func() time.Time
}

func newClient(cfg Config) (*client, error) {
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = "https://s3." + cfg.Region + ".amazonaws.com"
	}
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("s3 endpoint %q: want http(s)://host[:port]", cfg.Endpoint)
	}
	if cfg.AccessKey == "" || cfg.SecretKey == "" {
		return nil, errors.New("s3: no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	if err := cfg.uploadSettings(); err != nil {
		return nil, err
	}
	// Signatures cover the Host header exactly as sent; drop default ports.
	if (u.Scheme == "http" && u.Port() == "80") || (u.Scheme == "https" && u.Port() == "443") {
		u.Host = u.Hostname()
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	hc := cfg.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 32
		tr.ResponseHeaderTimeout = 2 * time.Minute
		hc = &http.Client{Transport: tr}
	}
	return &client{cfg: cfg, base: u, http: hc, now: time.Now}, nil
}

// apiError is an S3 error response.
type apiError struct {
	Status  int
	Code    string
	Message string
	Op      string
	Where   string
}

func (e *apiError) Error() string {
	msg := e.Code
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return fmt.Sprintf("%s %s: %d %s", e.Op, e.Where, e.Status, msg)
}

// request describes one call.
type request struct {
	method  string
	bucket  string
	key     string // object key ("" for bucket calls)
	query   url.Values
	header  http.Header
	body    func() (io.ReadCloser, error) // nil: no body; called again on retry
	size    int64
	sha256  string // hex payload hash ("" for no body)
	noRetry bool
}

// objectURL builds the request URL and its canonical (escaped) path.
func (c *client) objectURL(bucket, key string) (*url.URL, string) {
	u := *c.base
	var segs []string
	if c.cfg.PathStyle {
		segs = append(segs, bucket)
	} else {
		u.Host = bucket + "." + u.Host
	}
	if key != "" {
		segs = append(segs, strings.Split(key, "/")...)
	}
	raw := u.Path
	plain := u.Path
	for _, s := range segs {
		raw += "/" + uriEncode(s, false)
		plain += "/" + s
	}
	if raw == "" {
		raw, plain = "/", "/"
	}
	u.Path, u.RawPath = plain, raw
	return &u, raw
}

// do sends r, retrying transient failures (network errors, 5xx, throttling)
// with exponential backoff. It returns the response of the last attempt and
// how many attempts were made; a non-2xx response is returned as an
// *apiError after its body is read.
func (c *client) do(ctx context.Context, op string, r request) (*http.Response, int, error) {
	backoff := firstBackoff
	var lastErr error
	for attempt := 1; ; attempt++ {
		resp, err := c.once(ctx, op, r)
		if err == nil {
			return resp, attempt, nil
		}
		lastErr = err
		if r.noRetry || attempt >= maxAttempts || !transient(err) || ctx.Err() != nil {
			return nil, attempt, lastErr
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return nil, attempt, ctx.Err()
		}
		backoff *= 2
	}
}

func transient(err error) bool {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Status >= 500 || ae.Status == http.StatusTooManyRequests || ae.Code == "SlowDown" ||
			ae.Code == "ConditionalRequestConflict" || ae.Code == "RequestTimeout"
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "connection refused")
}

func (c *client) once(ctx context.Context, op string, r request) (*http.Response, error) {
	u, canonPath := c.objectURL(r.bucket, r.key)
	where := "s3://" + r.bucket + "/" + r.key
	if len(r.query) > 0 {
		u.RawQuery = canonicalQuery(r.query)
	}
	var body io.ReadCloser
	if r.body != nil {
		b, err := r.body()
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", op, where, err)
		}
		body = b
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), body)
	if err != nil {
		if body != nil {
			body.Close()
		}
		return nil, fmt.Errorf("%s %s: %w", op, where, err)
	}
	req.URL = u
	if body != nil {
		req.ContentLength = r.size
		if r.size == 0 {
			req.Body = http.NoBody
		}
	}
	for k, vs := range r.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	payload := r.sha256
	if payload == "" {
		payload = emptySHA256
	}
	c.sign(req, canonPath, payload)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, where, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	ae := &apiError{Status: resp.StatusCode, Op: op, Where: where}
	var x struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	if xml.Unmarshal(b, &x) == nil {
		ae.Code, ae.Message = x.Code, x.Message
	}
	if ae.Code == "" && resp.StatusCode == http.StatusNotFound {
		ae.Code = "NoSuchKey"
	}
	if ae.Code == "" && resp.StatusCode == http.StatusPreconditionFailed {
		ae.Code = "PreconditionFailed"
	}
	return nil, ae
}

// sign adds AWS Signature Version 4 headers to req.
func (c *client) sign(req *http.Request, canonPath, payload string) {
	now := c.now().UTC()
	amzDate := now.Format(amzDateFormat)
	day := amzDate[:8]
	req.Header.Set("X-Amz-Date", amzDate)
	req.Header.Set("X-Amz-Content-Sha256", payload)
	if c.cfg.SessionToken != "" {
		req.Header.Set("X-Amz-Security-Token", c.cfg.SessionToken)
	}
	// Signed: host and every x-amz-* header, plus the conditional headers,
	// so that nobody on the way can drop a precondition.
	signed := map[string]string{"host": req.URL.Host}
	for k, vs := range req.Header {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "x-amz-") || lk == "if-match" || lk == "if-none-match" || lk == "content-type" {
			signed[lk] = strings.TrimSpace(strings.Join(vs, ","))
		}
	}
	names := make([]string, 0, len(signed))
	for k := range signed {
		names = append(names, k)
	}
	sort.Strings(names)
	var ch strings.Builder
	for _, k := range names {
		ch.WriteString(k + ":" + signed[k] + "\n")
	}
	signedHeaders := strings.Join(names, ";")
	canon := strings.Join([]string{req.Method, canonPath, req.URL.RawQuery, ch.String(), signedHeaders, payload}, "\n")
	scope := day + "/" + c.cfg.Region + "/s3/aws4_request"
	h := sha256.Sum256([]byte(canon))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(h[:])
	key := hmacSHA256([]byte("AWS4"+c.cfg.SecretKey), day)
	key = hmacSHA256(key, c.cfg.Region)
	key = hmacSHA256(key, "s3")
	key = hmacSHA256(key, "aws4_request")
	sig := hex.EncodeToString(hmacSHA256(key, toSign))
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+c.cfg.AccessKey+"/"+scope+
		", SignedHeaders="+signedHeaders+", Signature="+sig)
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// uriEncode is SigV4's URI encoding: every byte except A-Z a-z 0-9 - _ . ~
// is percent-encoded (and '/' too when encodeSlash).
func uriEncode(s string, encodeSlash bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case 'A' <= ch && ch <= 'Z', 'a' <= ch && ch <= 'z', '0' <= ch && ch <= '9', ch == '-', ch == '_', ch == '.', ch == '~':
			b.WriteByte(ch)
		case ch == '/' && !encodeSlash:
			b.WriteByte(ch)
		default:
			fmt.Fprintf(&b, "%%%02X", ch)
		}
	}
	return b.String()
}

func canonicalQuery(q url.Values) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		vs := append([]string{}, q[k]...)
		sort.Strings(vs)
		for _, v := range vs {
			parts = append(parts, uriEncode(k, true)+"="+uriEncode(v, true))
		}
	}
	return strings.Join(parts, "&")
}

func bytesBody(data []byte) (func() (io.ReadCloser, error), int64, string) {
	s := sha256.Sum256(data)
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }, int64(len(data)), hex.EncodeToString(s[:])
}

// fileBody hashes a local file for the signature and reopens it per attempt.
func fileBody(path string) (func() (io.ReadCloser, error), int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, 0, "", err
	}
	return func() (io.ReadCloser, error) { return os.Open(path) }, n, hex.EncodeToString(h.Sum(nil)), nil
}

type listResult struct {
	IsTruncated           bool   `xml:"IsTruncated"`
	NextContinuationToken string `xml:"NextContinuationToken"`
	Contents              []struct {
		Key  string `xml:"Key"`
		Size int64  `xml:"Size"`
	} `xml:"Contents"`
}
