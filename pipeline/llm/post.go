// Package llm is the one HTTP client for OpenAI-compatible chat endpoints
// (vLLM, SGLang, hosted APIs) that the rollout policy, the synthesis roles
// and the verifier share: timeouts, retries with exponential backoff on
// network errors, 429 and 5xx, and errors that name the endpoint.
package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Transport says where and how to send requests.
type Transport struct {
	URL     string        // the full endpoint, e.g. http://host:8000/v1/chat/completions
	APIKey  string        // sent as a bearer token when set
	Timeout time.Duration // per attempt
	Retries int           // extra attempts after a retryable failure
	Backoff time.Duration // first retry delay, doubled each time
	Client  *http.Client
}

// ErrHTTP marks a non-retryable HTTP status (4xx other than 429).
var ErrHTTP = errors.New("HTTP error")

// maxReply bounds a reply body.
const maxReply = 16 << 20

// Post sends body and returns the 200 reply's bytes and how many attempts
// it took. Network errors, timeouts, 429 and 5xx are retried; any other
// status fails at once with ErrHTTP. The context's cancellation is returned
// as is.
func Post(ctx context.Context, t Transport, body []byte) ([]byte, int, error) {
	client := t.Client
	if client == nil {
		client = http.DefaultClient
	}
	delay := t.Backoff
	var last error
	attempts := 0
	for attempt := 0; attempt <= t.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return nil, attempts, ctx.Err()
			}
			delay *= 2
		}
		attempts++
		data, retry, err := once(ctx, client, t, body)
		if err == nil {
			return data, attempts, nil
		}
		if ctx.Err() != nil {
			return nil, attempts, ctx.Err()
		}
		if !retry {
			return nil, attempts, err
		}
		last = err
	}
	return nil, attempts, fmt.Errorf("POST %s failed after %d attempts: %w", t.URL, attempts, last)
}

func once(ctx context.Context, client *http.Client, t Transport, body []byte) ([]byte, bool, error) {
	rctx := ctx
	if t.Timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, t.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	if t.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.APIKey)
	}
	res, err := client.Do(req)
	if err != nil {
		return nil, true, err
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, maxReply))
	res.Body.Close()
	if err != nil {
		return nil, true, err
	}
	if res.StatusCode == http.StatusTooManyRequests || res.StatusCode >= 500 {
		return nil, true, fmt.Errorf("HTTP %d: %s", res.StatusCode, Snippet(data))
	}
	if res.StatusCode != http.StatusOK {
		return nil, false, fmt.Errorf("POST %s: %w %d: %s", t.URL, ErrHTTP, res.StatusCode, Snippet(data))
	}
	return data, false, nil
}

// Snippet shortens a reply for an error message.
func Snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}
