package notebooktest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Chromedriver returns the path of chromedriver ($CUALAKE_CHROMEDRIVER, the
// Debian chromium-driver package's /usr/bin/chromedriver, or one in PATH),
// or "" when there is none.
func Chromedriver() string {
	if p := os.Getenv("CUALAKE_CHROMEDRIVER"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromedriver"); err == nil {
		return "/usr/bin/chromedriver"
	}
	if p, err := exec.LookPath("chromedriver"); err == nil {
		return p
	}
	return ""
}

// Browser is a headless Chromium driven over the WebDriver protocol by
// chromedriver: pages are loaded, forms filled and links clicked as a user
// would. Every call fails the test on error.
type Browser struct {
	t       testing.TB
	base    string // chromedriver's URL
	session string
}

// Element is a WebDriver element reference.
type Element string

const elementKey = "element-6066-11e4-a52e-4f735466cecf" // the W3C web element identifier

// StartBrowser starts chromedriver on a free loopback port and opens a
// headless Chromium session; both end with the test. It fails the test
// when chromium or chromedriver is missing (scripts/setup.sh installs
// them).
func StartBrowser(t testing.TB) *Browser {
	t.Helper()
	driver, chromium := Chromedriver(), Chromium()
	if driver == "" || chromium == "" {
		t.Fatalf("chromium (%q) and chromedriver (%q) are needed: run make setup (apt-get install chromium chromium-driver)", chromium, driver)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	logf, err := os.Create(filepath.Join(t.TempDir(), "chromedriver.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(driver, "--port="+strconv.Itoa(port), "--allowed-ips=127.0.0.1")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromedriver: %v", err)
	}
	b := &Browser{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	t.Cleanup(func() {
		if b.session != "" {
			b.call("DELETE", "/session/"+b.session, nil, nil)
		}
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
	})
	// chromedriver listens within a second or two; poll its status.
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(b.base + "/status")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("chromedriver did not start on port %d: %v\n%s", port, err, tail(string(log)))
		}
		time.Sleep(100 * time.Millisecond)
	}
	caps := map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"browserName": "chrome",
		"goog:chromeOptions": map[string]any{"binary": chromium, "args": []string{"--headless", "--no-sandbox", "--disable-gpu",
			"--disable-dev-shm-usage", "--window-size=1280,1800", "--user-data-dir=" + t.TempDir(), "--no-first-run",
			"--disable-background-networking", "--disable-extensions"}},
		"timeouts": map[string]any{"implicit": 15000, "pageLoad": 60000, "script": 30000},
	}}}
	var res struct {
		SessionID string `json:"sessionId"`
	}
	b.call("POST", "/session", caps, &res)
	if res.SessionID == "" {
		t.Fatal("chromedriver opened no session")
	}
	b.session = res.SessionID
	return b
}

// call does one WebDriver request and decodes its "value" into out.
func (b *Browser) call(method, path string, body, out any) {
	b.t.Helper()
	var rd io.Reader
	if body != nil {
		js, err := json.Marshal(body)
		if err != nil {
			b.t.Fatal(err)
		}
		rd = bytes.NewReader(js)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatalf("webdriver %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	var env struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		b.t.Fatalf("webdriver %s %s: %v: %s", method, path, err, tail(string(raw)))
	}
	if resp.StatusCode != 200 {
		b.t.Fatalf("webdriver %s %s: %s: %s", method, path, resp.Status, tail(string(env.Value)))
	}
	if out != nil {
		if err := json.Unmarshal(env.Value, out); err != nil {
			b.t.Fatalf("webdriver %s %s: %v: %s", method, path, err, tail(string(env.Value)))
		}
	}
}

func (b *Browser) s(path string) string { return "/session/" + b.session + path }

// Open loads url and waits for the page to load.
func (b *Browser) Open(url string) {
	b.t.Helper()
	b.call("POST", b.s("/url"), map[string]string{"url": url}, nil)
}

// URL is the current page's address.
func (b *Browser) URL() string {
	b.t.Helper()
	var u string
	b.call("GET", b.s("/url"), nil, &u)
	return u
}

// Find returns the first element matching a CSS selector, waiting up to
// the session's implicit wait for it to appear.
func (b *Browser) Find(css string) Element {
	b.t.Helper()
	var ref map[string]string
	b.call("POST", b.s("/element"), map[string]string{"using": "css selector", "value": css}, &ref)
	if ref[elementKey] == "" {
		b.t.Fatalf("webdriver: no element reference for %s: %v", css, ref)
	}
	return Element(ref[elementKey])
}

// FindAll returns every element matching a CSS selector (none is not an
// error).
func (b *Browser) FindAll(css string) []Element {
	b.t.Helper()
	var refs []map[string]string
	b.call("POST", b.s("/elements"), map[string]string{"using": "css selector", "value": css}, &refs)
	out := make([]Element, len(refs))
	for i, r := range refs {
		out[i] = Element(r[elementKey])
	}
	return out
}

// Type clears a form field and types text into it.
func (b *Browser) Type(e Element, text string) {
	b.t.Helper()
	b.call("POST", b.s("/element/"+string(e)+"/clear"), map[string]any{}, nil)
	b.call("POST", b.s("/element/"+string(e)+"/value"), map[string]any{"text": text}, nil)
}

// Click clicks an element (a link or a button: the browser follows it).
func (b *Browser) Click(e Element) {
	b.t.Helper()
	b.call("POST", b.s("/element/"+string(e)+"/click"), map[string]any{}, nil)
}

// Text is an element's rendered text.
func (b *Browser) Text(e Element) string {
	b.t.Helper()
	var s string
	b.call("GET", b.s("/element/"+string(e)+"/text"), nil, &s)
	return s
}

// Attr is an element's attribute ("" when absent).
func (b *Browser) Attr(e Element, name string) string {
	b.t.Helper()
	var s *string
	b.call("GET", b.s("/element/"+string(e)+"/attribute/"+name), nil, &s)
	if s == nil {
		return ""
	}
	return *s
}

// Eval runs a script in the page (its body, with arguments) and decodes
// what it returns into out.
func (b *Browser) Eval(script string, out any, args ...any) {
	b.t.Helper()
	if args == nil {
		args = []any{}
	}
	b.call("POST", b.s("/execute/sync"), map[string]any{"script": script, "args": args}, out)
}

// Screenshot saves the viewport as a PNG under ArtifactDir and returns
// its path.
func (b *Browser) Screenshot(name string) string {
	b.t.Helper()
	var data string
	b.call("GET", b.s("/screenshot"), nil, &data)
	png, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		b.t.Fatal(err)
	}
	p := filepath.Join(ArtifactDir(b.t), name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", p)
	return p
}

// Title is the page title.
func (b *Browser) Title() string {
	b.t.Helper()
	var s string
	b.call("GET", b.s("/title"), nil, &s)
	return strings.TrimSpace(s)
}
