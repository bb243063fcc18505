package server

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/simdesk"
)

// TestSlowBodyDoesNotStallOthers holds one request with half its body sent
// and checks that a second client is still served: the body is read before
// the state lock is taken.
func TestSlowBodyDoesNotStallOthers(t *testing.T) {
	d, err := simdesk.New(1280, 800, 1)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = NewHTTPServer(d) // the settings of cualake simdesk serve
	if c := ts.Config; c.ReadHeaderTimeout == 0 || c.ReadTimeout == 0 || c.WriteTimeout == 0 || c.IdleTimeout == 0 {
		t.Fatalf("a timeout is unset: %+v", c)
	}
	entered := make(chan struct{})
	inner := ts.Config.Handler
	ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			close(entered)
		}
		inner.ServeHTTP(w, r)
	})
	ts.Start()
	defer ts.Close()

	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"command": ["echo", "hello"]}`
	fmt.Fprintf(conn, "POST /execute HTTP/1.1\r\nHost: simdesk\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		2*len(body), body[:len(body)/2])
	<-entered // the stalled request is being served

	// The deadline only guards against a hang; the request should take
	// milliseconds.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/screenshot", nil)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatalf("GET /screenshot while another client stalls mid-body: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	if img, err := png.Decode(bytes.NewReader(b)); err != nil || img.Bounds().Dx() != 1280 {
		t.Fatalf("screenshot: %v", err)
	}
}

// TestOversizeBody is refused with 413 before any handler runs.
func TestOversizeBody(t *testing.T) {
	ts, _ := newServer(t)
	code, b := call(t, ts, "POST", "/execute", "application/json", `{"command": "`+strings.Repeat("x", maxBody)+`"}`)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "larger than") {
		t.Fatalf("%d %s", code, b)
	}
	// The server still works.
	if code, _ := call(t, ts, "GET", "/platform", "", ""); code != 200 {
		t.Fatal(code)
	}
}
