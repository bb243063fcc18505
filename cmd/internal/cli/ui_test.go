package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the server goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestUIRefusesOpenAddressWithoutToken(t *testing.T) {
	t.Setenv("CUALAKE_LAKE", t.TempDir())
	for _, addr := range []string{"0.0.0.0:0", ":8765", "192.168.1.7:80"} {
		_, err := run(t, "ui", "--addr", addr)
		if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "--token") {
			t.Errorf("ui --addr %s without a token: %v (code %d)", addr, err, ExitCode(err))
		}
	}
}

// TestUIServesTheLake starts `cualake ui` on a free loopback port, reads
// pages and a trajectory through it with the token, and stops it.
func TestUIServesTheLake(t *testing.T) {
	viewLake(t)
	out, err := run(t, "query", "--format", "csv", "select trajectory_id from trajectories order by 1 limit 1")
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(strings.Split(out, "\n")[1])
	app := App()
	var stdout syncBuffer
	app.Writer, app.ErrWriter = &stdout, &stdout
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- app.RunContext(ctx, []string{"cualake", "ui", "--addr", "127.0.0.1:0", "--token", "t0k"})
	}()
	re := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+/)\?token=t0k `)
	var base string
	for base == "" {
		select {
		case err := <-done:
			t.Fatalf("ui stopped: %v\n%s", err, stdout.String())
		default:
		}
		if m := re.FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
		} else {
			time.Sleep(10 * time.Millisecond) // the server prints its address once it listens
		}
	}
	fetch := func(path string, hdr bool) (int, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		if hdr {
			req.Header.Set("Authorization", "Bearer t0k")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := fetch("", false); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d", code)
	}
	if code, body := fetch("", true); code != 200 || !strings.Contains(body, `data-ref="main"`) {
		t.Errorf("home: %d", code)
	}
	code, body := fetch("view/trajectory/"+url.PathEscape(id), true)
	if code != 200 || !strings.Contains(body, `<img src="/blob/`) || !strings.Contains(body, `class="mark mark-`) {
		t.Errorf("trajectory %s: %d\n%.500s", id, code, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("ui after cancel: %v", err)
	}
}
