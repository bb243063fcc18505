package view

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/outfile"
	"github.com/cualake/cualake/query/notebook/notebooktest"
	"github.com/cualake/cualake/query/view/viewtest"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustContain(t *testing.T, page string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(page, w) {
			t.Errorf("page lacks %q", w)
		}
	}
}

func TestTrajectoryPage(t *testing.T) {
	f := viewtest.New(t, filepath.Join(t.TempDir(), "lake"))
	e := engineOf(t, f)
	out := filepath.Join(t.TempDir(), "pages", "t.html")
	w, err := Write(context.Background(), e, KindTrajectory, "files-001@it001#00", out, WriteOptions{Tokenizers: words})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Pages) != 1 || w.Pages[0] != out || w.Blobs != 3 || w.BlobsKept != 0 {
		t.Fatalf("written %+v, want the page and 3 screenshots (2 steps' + 1 evidence)", w)
	}
	page := read(t, out)
	dir := filepath.Dir(out)
	for _, h := range []string{f.Shot1.Hash, f.Shot2.Hash, f.Evid.Hash} {
		b, err := os.ReadFile(filepath.Join(dir, BlobDir, h+".png"))
		if err != nil || string(b) != string(map[string][]byte{f.Shot1.Hash: f.Shot1.Bytes, f.Shot2.Hash: f.Shot2.Bytes, f.Evid.Hash: f.Evid.Bytes}[h]) {
			t.Errorf("screenshot %s not written by hash beside the page: %v", h, err)
		}
	}
	if n := strings.Count(page, `<img src="blobs/`+f.Shot1.Hash+`.png"`); n != 2 {
		t.Errorf("steps 0 and 2 show screenshot 1 %d times, want 2", n)
	}
	mustContain(t, page,
		// outcome, reward and judge detail at the top, links to task and group
		`<span class="badge success">success</span> reward <strong>1</strong>`, `&#34;message&#34;: &#34;saved&#34;`,
		`href="`+PageName(KindTask, "files-001")+`"`, `href="`+PageName(KindGroup, "files-001@it001")+`"`,
		"Save the &lt;report&gt; &amp; close",
		// the click at grid (200, 280) on a 200x100 screen is at pixel (40, 28)
		`class="mark mark-click" data-kind="click" data-n="1" data-x="200" data-y="280"`, `<circle cx="40.0" cy="28.0"`,
		// the drag from (100, 100) to (900, 800) ends at pixel (180, 80)
		`class="mark mark-drag" data-kind="drag" data-n="1" data-x="100" data-y="100" data-x2="900" data-y2="800"`, `x2="180.0" y2="80.0"`,
		`class="mark mark-scroll" data-kind="scroll" data-n="1" data-x="500" data-y="500" data-direction="down"`,
		// the typed text is a caption of step 2's second action
		`class="mark mark-type" data-kind="type" data-n="2"`, `type &#34;hello &lt;world&gt;&#34;`, "scroll down 3 at (500, 500)",
		`<div class="screen-caption"><span class="typed">⌨ type &#34;hello &lt;world&gt;&#34;</span></div>`,
		// response, collapsed tree, raw action
		"I click Save.\nAction: click", `<details class="a11y"><summary>Accessibility tree</summary><pre>desktop`, `button &#34;Save&#34; [b1]`,
		"<code>click(200, 280)</code>",
		// verifier criteria and probe evidence
		`data-strategy="builtin"`, "report saved", "title bar shows r.txt", "probe: 2 step(s), 321 tokens", `<img src="blobs/`+f.Evid.Hash+`.png"`,
	)
	// tokens: each turn's trained run, decoded, after its context
	for _, want := range []string{
		`<span class="tok t" title="id 101">w101</span><span class="tok t" title="id 102">w102</span>`,
		`<span class="tok" title="id 4">w4</span><span class="tok" title="id 5">w5</span><span class="tok t" title="id 201">w201</span>`,
		`<span class="tok t" title="id 301">w301</span>`,
		`<span class="tok" title="id 9 ×5">w9×5</span>`, // the image pad run folded
		"tokens 8–10 of 17, 2 trained here", "tokens 12–15 of 17, 3 trained here",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("tokens: page lacks %q", want)
		}
	}
	if strings.Contains(page, `<details class="a11y" open`) {
		t.Error("the accessibility tree must start collapsed")
	}
}

func TestScreenshotsWrittenOnce(t *testing.T) {
	f := viewtest.New(t, filepath.Join(t.TempDir(), "lake"))
	e := engineOf(t, f)
	out := filepath.Join(t.TempDir(), "t.html")
	ctx := context.Background()
	if _, err := Write(ctx, e, KindTrajectory, "files-001@it001#00", out, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := Write(ctx, e, KindTrajectory, "files-001@it001#00", out, WriteOptions{})
	if err != nil || w.Blobs != 0 || w.BlobsKept != 3 {
		t.Fatalf("second write: %+v %v; want every screenshot kept", w, err)
	}
	// A file whose bytes no longer match its name is written again.
	bad := filepath.Join(filepath.Dir(out), BlobDir, f.Shot2.Hash+".png")
	if err := os.WriteFile(bad, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err = Write(ctx, e, KindTrajectory, "files-001@it001#00", out, WriteOptions{})
	if err != nil || w.Blobs != 1 || w.BlobsKept != 2 || read(t, bad) != string(f.Shot2.Bytes) {
		t.Fatalf("after corrupting one: %+v %v", w, err)
	}
}

func TestWriteRefusesTheLake(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	f := viewtest.New(t, dir)
	e := engineOf(t, f)
	_, err := Write(context.Background(), e, KindTrajectory, "files-001@it001#00", filepath.Join(dir, "view", "t.html"), WriteOptions{})
	if !errors.Is(err, outfile.ErrInsideLake) {
		t.Fatalf("writing into the lake: %v, want ErrInsideLake", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "view")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("something was written into the lake: %v", err)
	}
}

func TestUnknownIDs(t *testing.T) {
	f := viewtest.New(t, filepath.Join(t.TempDir(), "lake"))
	e := engineOf(t, f)
	for _, kind := range []string{KindTrajectory, KindGroup, KindTask} {
		_, err := Write(context.Background(), e, kind, "nope", filepath.Join(t.TempDir(), "x.html"), WriteOptions{})
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("%s nope: %v, want ErrNotFound naming the id", kind, err)
		}
	}
}

func TestTreeOnlyStepDrawsTheTree(t *testing.T) {
	f := viewtest.New(t, filepath.Join(t.TempDir(), "lake"))
	e := engineOf(t, f)
	out := filepath.Join(t.TempDir(), "t.html")
	if _, err := Write(context.Background(), e, KindTrajectory, "eval:files-001@it001#00", out, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	page := read(t, out)
	mustContain(t, page, `<svg class="wireframe" viewBox="0 0 200.0 100.0"`, ">Save</text>", "no screenshot recorded (a tree-only rollout)",
		`class="mark mark-click" data-kind="click" data-n="1" data-x="200" data-y="280"`,
		"no segment of this snapshot holds this trajectory")
	if strings.Contains(page, "<img") {
		t.Error("a tree-only step has no screenshot to show")
	}
}

func TestGroupPage(t *testing.T) {
	f := viewtest.New(t, filepath.Join(t.TempDir(), "lake"))
	e := engineOf(t, f)
	out := filepath.Join(t.TempDir(), PageName(KindGroup, "files-001@it001"))
	w, err := Write(context.Background(), e, KindGroup, "files-001@it001", out, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Pages) != 3 || w.Blobs != 3 || w.BlobsKept != 3 { // the rollouts' pages find the group's 2 screenshots already there, the evidence is new
		t.Fatalf("written %+v, want the group page and its 2 rollouts' pages", w)
	}
	for _, p := range w.Pages[1:] {
		if _, err := os.Stat(p); err != nil {
			t.Fatal(err)
		}
	}
	page := read(t, out)
	mustContain(t, page, "2 rollout(s), 1 successful",
		`href="`+PageName(KindTrajectory, "files-001@it001#00")+`"`, `href="`+PageName(KindTrajectory, "files-001@it001#01")+`"`,
		`<td class="outcome"><span class="badge success">success</span></td><td class="outcome"><span class="badge failure">failure</span></td>`,
		`<td class="num advantage">0.707</td><td class="num advantage">-0.707</td>`,
		"hotkey ctrl+s", "no-op: no window has focus", `class="mark mark-drag"`)
	// Steps line up by turn: row "step 1" has the drag of rollout 0 and
	// nothing for rollout 1, which took one step.
	row := regexp.MustCompile(`(?s)<tr><th>step 1</th>(.*?)</tr>`).FindStringSubmatch(page)
	if row == nil || !strings.Contains(row[1], "drag (100, 100) to (900, 800)") || !strings.HasSuffix(row[1], "<td></td>") {
		t.Errorf("step 1 row: %q", row)
	}
}

func TestTaskPage(t *testing.T) {
	f := viewtest.New(t, filepath.Join(t.TempDir(), "lake"))
	e := engineOf(t, f)
	out := filepath.Join(t.TempDir(), "task.html")
	if _, err := Write(context.Background(), e, KindTask, "files-001", out, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	page := read(t, out)
	mustContain(t, page, "Save the &lt;report&gt; &amp; close", "&#34;type&#34;: &#34;open&#34;", "&#34;func&#34;: &#34;check_file&#34;",
		`<td class="num">0</td><td class="num">4</td><td class="num">1</td><td class="num">0.25</td><td class="num">0.25</td><td class="num">0.75</td>`,
		`<td class="num">1</td><td class="num">2</td><td class="num">1</td><td class="num">0.5</td><td class="num">1</td><td class="num">—</td>`,
		`class="chart-svg"`, "Trajectories (3)",
		`href="`+PageName(KindTrajectory, "eval:files-001@it001#00")+`"`, `href="`+PageName(KindGroup, "eval:files-001@it001")+`"`)
}

func TestPageName(t *testing.T) {
	for id, want := range map[string]string{
		"files-001":          "trajectory-files-001.html",
		"files-001@it001#02": "trajectory-files-001_it001_02-",
		"../../etc/passwd":   "trajectory-.._.._etc_passwd-",
	} {
		if got := PageName(KindTrajectory, id); !strings.HasPrefix(got, want) || strings.ContainsAny(got, "/#@") {
			t.Errorf("PageName(%q) = %q, want prefix %q and no / # @", id, got, want)
		}
	}
	if PageName(KindTrajectory, "a#b") == PageName(KindTrajectory, "a@b") {
		t.Error("ids that differ only in replaced characters share a file")
	}
}

func TestTokensOfMismatchedSegmentAreNoted(t *testing.T) {
	turns := []Turn{{Step: 0}, {Step: 1}}
	segs := []Segment{{ID: "s", FirstStep: 0, LastStep: 1, InputIDs: []int32{1, 2, 3}, LossMask: []int8{0, 1, 1}}}
	note := attachTokens(turns, segs)
	if !strings.Contains(note, "trains turns 0..1 but has 1 trained run") || turns[0].Tokens != nil {
		t.Errorf("note %q, turn 0 tokens %+v", note, turns[0].Tokens)
	}
}

// TestTrajectoryPageInBrowser opens the static page from disk in headless
// Chromium: every screenshot loads from the blobs folder and every action
// marker is laid out.
func TestTrajectoryPageInBrowser(t *testing.T) {
	if notebooktest.Chromium() == "" {
		t.Fatal("chromium is not installed: run make setup (scripts/setup.sh installs it)")
	}
	f := viewtest.New(t, filepath.Join(t.TempDir(), "lake"))
	e := engineOf(t, f)
	out := filepath.Join(t.TempDir(), "t.html")
	if _, err := Write(context.Background(), e, KindTrajectory, "files-001@it001#00", out, WriteOptions{Tokenizers: words}); err != nil {
		t.Fatal(err)
	}
	p := notebooktest.Load(t, out, "view-trajectory.png")
	if p.Rendered != "steps=3 screenshots=3/3 wireframes=0 marks=4" {
		t.Fatalf("data-rendered %q, want 3 steps, 3 loaded screenshots, 4 markers; console: %v", p.Rendered, p.Console)
	}
}
