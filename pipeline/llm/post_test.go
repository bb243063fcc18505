package llm

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestPostRetriesThenSucceeds(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k" || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("headers: %v", r.Header)
		}
		switch n.Add(1) {
		case 1:
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case 2:
			http.Error(w, "slow down", http.StatusTooManyRequests)
		default:
			w.Write([]byte(`{"ok":true}`))
		}
	}))
	defer srv.Close()
	data, attempts, err := Post(context.Background(), Transport{URL: srv.URL, APIKey: "k", Retries: 3, Backoff: time.Millisecond}, []byte(`{}`))
	if err != nil || attempts != 3 || string(data) != `{"ok":true}` {
		t.Fatalf("got %q after %d attempts, %v", data, attempts, err)
	}
}

func TestPostFailures(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such model", http.StatusNotFound)
	}))
	defer srv.Close()
	_, attempts, err := Post(context.Background(), Transport{URL: srv.URL, Retries: 3, Backoff: time.Millisecond}, nil)
	if !errors.Is(err, ErrHTTP) || attempts != 1 || !strings.Contains(err.Error(), "no such model") {
		t.Fatalf("4xx must fail at once naming the reply: %v (%d attempts)", err, attempts)
	}
	_, attempts, err = Post(context.Background(), Transport{URL: "http://127.0.0.1:1", Retries: 2, Backoff: time.Millisecond}, nil)
	if err == nil || attempts != 3 || !strings.Contains(err.Error(), "failed after 3 attempts") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("dead endpoint: %v (%d attempts)", err, attempts)
	}
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { time.Sleep(200 * time.Millisecond) }))
	defer slow.Close()
	if _, _, err := Post(context.Background(), Transport{URL: slow.URL, Timeout: 10 * time.Millisecond, Retries: 1, Backoff: time.Millisecond}, nil); err == nil {
		t.Fatal("a timeout was not an error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Post(ctx, Transport{URL: slow.URL, Retries: 3}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
}
