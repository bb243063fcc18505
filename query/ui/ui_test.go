package ui

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cualake/cualake/internal/treehash"
	"github.com/cualake/cualake/notebooks"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/query/view"
	"github.com/cualake/cualake/query/view/viewtest"
)

// uiLake is the viewer fixture with a tag and a second branch head (a
// ref under refs/heads/ written as a future `lake branch` would).
func uiLake(t *testing.T) (string, *viewtest.Fixture) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "lake")
	f := viewtest.New(t, dir)
	ctx := context.Background()
	if _, err := f.Lake.Tag(ctx, "release-1", f.Snap.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.Lake.Storage().PutIfAbsent(ctx, "refs/heads/experiment", []byte(f.Snap.ID+"\n")); err != nil {
		t.Fatal(err)
	}
	return dir, f
}

func newServer(t *testing.T, f *viewtest.Fixture, o Options) *httptest.Server {
	t.Helper()
	o.Tokenizers = func(*lake.Manifest) view.Tokenizers {
		return func(string) (view.Decoder, error) { return viewtest.Words{}, nil }
	}
	o.Notebooks, o.NotebookSource = notebooks.Names, notebooks.Source
	s := New(f.Lake, o)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return ts
}

// hashTree maps every file under dir to its sha256.
func hashTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	h, err := treehash.Of(dir)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func sameTree(t *testing.T, before, after map[string]string) {
	t.Helper()
	for p, h := range before {
		if after[p] != h {
			t.Errorf("%s changed or vanished", p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s appeared in the lake", p)
		}
	}
}

func get(t *testing.T, c *http.Client, u string, hdr ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func TestPagesAndReadOnly(t *testing.T) {
	dir, f := uiLake(t)
	before := hashTree(t, dir)
	ts := newServer(t, f, Options{})
	c := ts.Client()
	at := "?at=" + f.Snap.ID
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/", []string{`data-ref="main"`, `data-ref="experiment"`, `data-ref="release-1"`, short(f.Snap.ID), "fixture"}},
		{"/log", []string{`<table class="log">`, "fixture", "release-1"}},
		{"/snapshot/" + f.Snap.ID[:10], []string{f.Snap.ID, `href="/table/steps?at=` + f.Snap.ID, "Lineage"}},
		{"/tables" + at, []string{`href="/table/trajectories?at=` + f.Snap.ID, "one row per episode"}},
		{"/table/trajectories" + at, []string{"<code>judge_detail</code>", `href="/view/trajectory/files-001@it001%2300?at=` + f.Snap.ID + `"`, "3 row(s)"}},
		{"/table/blobs" + at, []string{"<code>bytes</code>", f.Shot1.Hash}},
		{"/table/lake_snapshots" + at, []string{"fixture"}},
		{"/sql" + at + "&q=" + url.QueryEscape("SELECT outcome, count(*) AS n FROM trajectories GROUP BY 1 ORDER BY 1") + "&chart=bar&x=outcome&y=n",
			[]string{`<table class="result">`, "<td>failure</td><td class=\"num\">2</td>", `class="chart-svg"`, `data-points="2"`}},
		{"/sql" + at + "&q=" + url.QueryEscape("DELETE FROM tasks"), []string{`class="error"`, "only read statements"}},
		{"/sql" + at + "&q=" + url.QueryEscape("SELECT * FROM read_csv('/etc/passwd')"), []string{`class="error"`}},
		{"/view/trajectory/" + url.PathEscape(viewtest.Success) + at, []string{`class="ui-nav"`, `<img src="/blob/` + f.Shot1.Hash + `?at=`, `class="mark mark-click"`, `<span class="tok t" title="id 101">w101</span>`}},
		{"/view/group/" + url.PathEscape(viewtest.Group) + at, []string{"2 rollout(s), 1 successful", `href="/view/trajectory/files-001@it001%2301?at=`}},
		{"/view/task/" + viewtest.Task + at, []string{"Pass-rate history", `href="/view/group/eval:files-001@it001?at=`}},
		{"/notebooks", []string{`href="/notebook/learning?at=`}},
		{"/notebook/rollout-health" + at, []string{`class="ui-nav"`, "cualake report"}},
	} {
		code, body, _ := get(t, c, ts.URL+tc.path)
		if code != 200 {
			t.Errorf("GET %s: %d\n%.400s", tc.path, code, body)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s lacks %q", tc.path, w)
			}
		}
	}
	code, body, hdr := get(t, c, ts.URL+"/blob/"+f.Shot1.Hash+at)
	if code != 200 || hdr.Get("Content-Type") != "image/png" || body != string(f.Shot1.Bytes) {
		t.Errorf("blob: %d %s", code, hdr.Get("Content-Type"))
	}
	if code, _, hdr := get(t, c, ts.URL+"/blob/"+f.Tree.Hash+at); code != 200 || hdr.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("a tree blob is served as text, never as a page: %d %s", code, hdr.Get("Content-Type"))
	}
	for path, want := range map[string]int{
		"/view/trajectory/nope" + at: 404, "/table/nope" + at: 404, "/blob/xyz" + at: 400, "/tables?at=nosuchtag": 404,
		"/notebook/nope": 404, "/sql" + at + "&q=select+1&chart=line&x=a%27b": 400,
	} {
		if code, body, _ := get(t, c, ts.URL+path); code != want {
			t.Errorf("GET %s: %d, want %d\n%.300s", path, code, want, body)
		}
	}
	for _, m := range []string{"POST", "PUT", "DELETE"} {
		req, _ := http.NewRequest(m, ts.URL+"/sql", strings.NewReader("q=x"))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d, want 405", m, resp.StatusCode)
		}
	}
	sameTree(t, before, hashTree(t, dir))
}

func TestTokenAndHost(t *testing.T) {
	_, f := uiLake(t)
	ts := newServer(t, f, Options{Token: "s3cret-token"})
	c := ts.Client()
	for _, tc := range []struct {
		name string
		path string
		hdr  []string
		want int
	}{
		{"none", "/", nil, 401},
		{"wrong", "/?token=guess", nil, 401},
		{"prefix", "/", []string{"Authorization", "Bearer s3cret"}, 401},
		{"bearer", "/", []string{"Authorization", "Bearer s3cret-token"}, 200},
		{"header", "/tables", []string{"X-Cualake-Token", "s3cret-token"}, 200},
		{"query", "/log?token=s3cret-token", nil, 200},
		{"cookie", "/", []string{"Cookie", cookieName + "=s3cret-token"}, 200},
		{"blob without token", "/blob/" + f.Shot1.Hash, nil, 401},
	} {
		if code, _, _ := get(t, c, ts.URL+tc.path, tc.hdr...); code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, code, tc.want)
		}
	}
	if _, _, hdr := get(t, c, ts.URL+"/?token=s3cret-token"); !strings.Contains(hdr.Get("Set-Cookie"), cookieName+"=s3cret-token") ||
		!strings.Contains(hdr.Get("Set-Cookie"), "HttpOnly") || hdr.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("a token in the URL sets an HttpOnly cookie and no referrer: %v", hdr)
	}

	// Without a token only loopback host names are served.
	open := newServer(t, f, Options{})
	for host, want := range map[string]int{"": 200, "localhost:8765": 200, "[::1]:8765": 200, "evil.example:8765": 403, "10.0.0.2:8765": 403} {
		req, _ := http.NewRequest("GET", open.URL+"/", nil)
		if host != "" {
			req.Host = host
		}
		resp, err := open.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %q: %d, want %d", host, resp.StatusCode, want)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:8765": true, "localhost:0": true, "[::1]:80": true, "127.1.2.3:9": true,
		":8765": false, "0.0.0.0:8765": false, "192.168.1.5:8765": false, "[::]:8765": false, "example.com:80": false, "nonsense": false} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}
