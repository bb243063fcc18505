package ui

import (
	"strings"
	"testing"

	"github.com/cualake/cualake/query/notebook/notebooktest"
	"github.com/cualake/cualake/query/view/viewtest"
)

// TestUIInBrowser drives a real headless Chromium through chromedriver as
// a user would: open the UI with its token, browse the refs, run a query
// with a chart from the SQL box, open a trajectory from the result, see its
// screenshots load and its action markers laid out, open a table and a
// notebook; and the lake is byte for byte what it was.
func TestUIInBrowser(t *testing.T) {
	dir, f := uiLake(t)
	before := hashTree(t, dir)
	ts := newServer(t, f, Options{Token: "browser-token"})
	b := notebooktest.StartBrowser(t)

	b.Open(ts.URL + "/?token=browser-token")
	if refs := b.FindAll("table.refs tr[data-ref]"); len(refs) != 3 {
		t.Fatalf("%d refs on the home page, want main, experiment and release-1", len(refs))
	}
	b.Click(b.Find(`nav.ui-nav a[href^="/sql"]`))
	b.Type(b.Find("#q"), "SELECT trajectory_id, outcome, reward FROM trajectories ORDER BY 1")
	b.Click(b.Find(`#chart option[value="bar"]`))
	b.Type(b.Find("#x"), "trajectory_id")
	b.Type(b.Find("#y"), "reward")
	b.Click(b.Find("#run"))
	if rows := b.FindAll("table.result tbody tr"); len(rows) != 3 {
		t.Fatalf("%d result rows, want 3 trajectories", len(rows))
	}
	if marks := b.FindAll("figure.chart svg .dp"); len(marks) != 3 {
		t.Errorf("%d bars in the chart, want 3", len(marks))
	}
	b.Screenshot("ui-sql.png")

	b.Click(b.Find(`table.result a.ref[href^="/view/trajectory/files-001@it001%2300?"]`))
	rendered := b.Attr(b.Find("body[data-rendered]"), "data-rendered")
	if rendered != "steps=3 screenshots=3/3 wireframes=0 marks=4" {
		t.Errorf("trajectory page rendered %q, want 3 steps, 3 loaded screenshots, 4 markers", rendered)
	}
	var widths []int
	b.Eval(`return Array.from(document.querySelectorAll(".screen img")).map(function (i) { return i.naturalWidth; });`, &widths)
	if len(widths) != 3 || widths[0] != 200 || widths[1] != 200 || widths[2] != 200 {
		t.Errorf("screenshots' natural widths %v, want three 200-pixel images", widths)
	}
	for kind, n := range map[string]int{"click": 1, "drag": 1, "scroll": 1, "type": 1} {
		if got := len(b.FindAll(`svg.overlay .mark[data-kind="` + kind + `"]`)); got != n {
			t.Errorf("%d %s markers, want %d", got, kind, n)
		}
	}
	var box struct{ W, H float64 }
	b.Eval(`var r = document.querySelector(".mark-click circle").getBoundingClientRect(); return {W: r.width, H: r.height};`, &box)
	if box.W <= 0 || box.H <= 0 {
		t.Errorf("the click marker was not laid out: %+v", box)
	}
	if !strings.Contains(b.Text(b.Find(".screen-caption")), `type "hello <world>"`) {
		t.Error("the typed text is not captioned on the screen")
	}
	b.Screenshot("ui-trajectory.png")

	b.Click(b.Find(`a.ref[data-kind="group"]`))
	if cols := b.FindAll("table.rollouts thead th a.ref"); len(cols) != 2 {
		t.Errorf("group page: %d rollouts side by side, want 2", len(cols))
	}
	b.Open(ts.URL + "/table/steps")
	if cols := b.FindAll("table.schema tbody tr"); len(cols) < 20 {
		t.Errorf("steps schema shows %d columns", len(cols))
	}
	b.Open(ts.URL + "/notebook/rollout-health?at=" + f.Snap.ID)
	if r := b.Attr(b.Find("body[data-rendered]"), "data-rendered"); !strings.HasSuffix(r, "bad=0") || strings.HasPrefix(r, "charts=0 ") {
		t.Errorf("notebook rendered %q", r)
	}
	b.Open(ts.URL + "/view/trajectory/" + strings.ReplaceAll(viewtest.TreeOnly, "#", "%23"))
	if r := b.Attr(b.Find("body[data-rendered]"), "data-rendered"); r != "steps=1 screenshots=0/0 wireframes=1 marks=1" {
		t.Errorf("tree-only trajectory rendered %q", r)
	}
	sameTree(t, before, hashTree(t, dir))
}
