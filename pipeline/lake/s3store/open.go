package s3store

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cualake/cualake/pipeline/lake"
)

func init() { lake.RegisterScheme("s3", open) }

// FromURL builds a Store for s3://bucket/prefix. Settings come from, in
// order: opt (the --s3-endpoint, --s3-region and --cache flags), the URL's
// query (?endpoint=...&region=...&path_style=true), then the usual AWS
// environment variables (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS_REGION,
// AWS_DEFAULT_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN) and CUALAKE_CACHE / CUALAKE_CACHE_MAX for the cache.
// Multipart uploads are tuned by the query (multipart_threshold, part_size,
// upload_concurrency) or CUALAKE_S3_MULTIPART_THRESHOLD,
// CUALAKE_S3_PART_SIZE and CUALAKE_S3_UPLOAD_CONCURRENCY (sizes such as
// 64MiB; a threshold of "none" leaves only files over 5 GiB to multipart).
// Credentials are only ever read from the environment, never from flags or
// URLs, so they stay out of process listings and job scripts.
func FromURL(u *url.URL, opt lake.OpenOptions) (*Store, error) {
	if u.Scheme != "s3" || u.Host == "" {
		return nil, fmt.Errorf("%s: want s3://bucket/prefix", u.Redacted())
	}
	q := u.Query()
	cfg := Config{
		Endpoint:     first(opt.Endpoint, q.Get("endpoint"), os.Getenv("AWS_ENDPOINT_URL_S3"), os.Getenv("AWS_ENDPOINT_URL")),
		Region:       first(opt.Region, q.Get("region"), os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION"), "us-east-1"),
		AccessKey:    os.Getenv("AWS_ACCESS_KEY_ID"),
		SecretKey:    os.Getenv("AWS_SECRET_ACCESS_KEY"),
		SessionToken: os.Getenv("AWS_SESSION_TOKEN"),
	}
	if v := q.Get("path_style"); v != "" {
		cfg.PathStyle, _ = strconv.ParseBool(v)
	}
	if err := uploadOptions(&cfg, q); err != nil {
		return nil, err
	}
	dir := first(opt.CacheDir, os.Getenv("CUALAKE_CACHE"))
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		dir = filepath.Join(base, "cualake")
	}
	max := opt.CacheMaxBytes
	if max == 0 {
		if v := os.Getenv("CUALAKE_CACHE_MAX"); v != "" {
			n, err := ParseBytes(v)
			if err != nil {
				return nil, fmt.Errorf("CUALAKE_CACHE_MAX: %w", err)
			}
			max = n
		} else {
			max = DefaultCacheBytes
		}
	}
	cache, err := OpenCache(dir, max)
	if err != nil {
		return nil, err
	}
	return New(cfg, u.Host, u.Path, cache)
}

func open(_ context.Context, u *url.URL, opt lake.OpenOptions) (lake.Storage, error) {
	return FromURL(u, opt)
}

func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// ParseBytes reads a size such as 512MiB, 20GB, 1.5G or 1048576; 0 or
// "unbounded" means no bound (returned as -1).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	if t == "unbounded" || t == "0" || t == "none" {
		return -1, nil
	}
	units := []struct {
		suffix string
		mult   float64
	}{{"tib", 1 << 40}, {"gib", 1 << 30}, {"mib", 1 << 20}, {"kib", 1 << 10},
		{"tb", 1e12}, {"gb", 1e9}, {"mb", 1e6}, {"kb", 1e3},
		{"t", 1 << 40}, {"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}, {"b", 1}}
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("size %q: want a number of bytes such as 512MiB or 20GB", s)
	}
	return int64(f * mult), nil
}

// uploadOptions reads the multipart settings from the URL's query, then
// the environment; what neither sets keeps Config's defaults.
func uploadOptions(cfg *Config, q url.Values) error {
	if v := first(q.Get("multipart_threshold"), os.Getenv("CUALAKE_S3_MULTIPART_THRESHOLD")); v != "" {
		n, err := ParseBytes(v)
		if err != nil {
			return fmt.Errorf("multipart threshold: %w", err)
		}
		cfg.MultipartThreshold = n // -1 ("none"): only what a single PUT cannot carry
	}
	if v := first(q.Get("part_size"), os.Getenv("CUALAKE_S3_PART_SIZE")); v != "" {
		n, err := ParseBytes(v)
		if err != nil || n <= 0 {
			return fmt.Errorf("part size %q: want a size such as 16MiB (at least 5MiB)", v)
		}
		cfg.PartSize = n
	}
	if v := first(q.Get("upload_concurrency"), os.Getenv("CUALAKE_S3_UPLOAD_CONCURRENCY")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("upload concurrency %q: want a whole number of at least 1", v)
		}
		cfg.UploadConcurrency = n
	}
	return nil
}
