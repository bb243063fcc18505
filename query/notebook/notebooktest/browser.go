package notebooktest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Page is what headless Chromium made of a report.
type Page struct {
	DOM        string   // the DOM after scripts ran (--dump-dom)
	Rendered   string   // <body data-rendered="...">, set by the report's script
	Console    []string // console messages and uncaught errors
	Screenshot string   // path of the PNG screenshot
}

// Chromium returns the path of a Chromium binary, or "" when there is none.
func Chromium() string {
	if p := os.Getenv("CUALAKE_CHROMIUM"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// ArtifactDir is where tests keep screenshots: $CUALAKE_TEST_ARTIFACTS, or
// a fresh temp dir that outlives the test so the files can be inspected.
func ArtifactDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("CUALAKE_TEST_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	d, err := os.MkdirTemp("", "cualake-artifacts-")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var (
	reConsole  = regexp.MustCompile(`:CONSOLE[:(]\S*\]? (.*)$`)
	reRendered = regexp.MustCompile(`<body[^>]*\bdata-rendered="([^"]*)"`)
)

// Load opens the HTML file in headless Chromium once, dumping the DOM after
// scripts ran (--dump-dom), logging console messages on stderr, and saving
// a screenshot named shot (a .png under ArtifactDir). It skips the test
// when Chromium is not installed.
func Load(t testing.TB, htmlPath, shot string) *Page {
	t.Helper()
	bin := Chromium()
	if bin == "" {
		t.Skip("chromium is not installed (apt-get install chromium chromium-driver); skipping the browser check")
	}
	abs, err := filepath.Abs(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	page := &Page{Screenshot: filepath.Join(ArtifactDir(t), shot)}
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--disable-extensions", "--mute-audio", "--user-data-dir=" + t.TempDir(),
		"--enable-logging=stderr", "--v=0", "--window-size=1280,2400", "--screenshot=" + page.Screenshot,
		"--dump-dom", "file://" + abs}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, tail(errOut.String()))
	}
	page.DOM = out.String()
	for _, line := range strings.Split(errOut.String(), "\n") {
		if m := reConsole.FindStringSubmatch(line); m != nil {
			page.Console = append(page.Console, m[1])
		}
	}
	if m := reRendered.FindStringSubmatch(page.DOM); m != nil {
		page.Rendered = m[1]
	}
	st, err := os.Stat(page.Screenshot)
	if err != nil || st.Size() == 0 {
		t.Fatalf("chromium wrote no screenshot at %s: %v", page.Screenshot, err)
	}
	t.Logf("screenshot of %s: %s", filepath.Base(htmlPath), page.Screenshot)
	return page
}

// Counts parses "charts=N points=M bad=K" from Rendered.
func (p *Page) Counts() (charts, points, bad int, err error) {
	if _, err := fmt.Sscanf(p.Rendered, "charts=%d points=%d bad=%d", &charts, &points, &bad); err != nil {
		return 0, 0, 0, fmt.Errorf("data-rendered %q: the report's script did not run: %w", p.Rendered, err)
	}
	return charts, points, bad, nil
}

func tail(s string) string {
	if len(s) > 2000 {
		return "…" + s[len(s)-2000:]
	}
	return s
}
