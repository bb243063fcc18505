package notebook

import (
	"regexp"
	"strings"
	"testing"

	"github.com/cualake/cualake/query"
)

// lossResult is a loss curve of 60 steps, decaying from 2.5, with one
// spike.
func lossResult(spike float64) *query.Result {
	res := &query.Result{Columns: []string{"step", "loss"}, Types: []string{"INTEGER", "DOUBLE"}}
	for s := 0; s < 60; s++ {
		v := 2.5 / float64(s+1)
		if s == 30 {
			v = spike
		}
		res.Rows = append(res.Rows, []any{int64(s), v})
	}
	return res
}

var yTick = regexp.MustCompile(`text-anchor="end" dominant-baseline="middle" stroke="none" fill="#444">([^<]+)</text>`)

func TestOutlierClipsTheAxis(t *testing.T) {
	c, err := ParseChart("line x=step y=loss")
	if err != nil {
		t.Fatal(err)
	}
	fig, err := c.Render(lossResult(76000), "loss")
	if err != nil {
		t.Fatal(err)
	}
	ticks := yTick.FindAllStringSubmatch(fig.SVG, -1)
	if len(ticks) == 0 || ticks[len(ticks)-1][1] != "2.5" {
		t.Errorf("y ticks %v: want the axis to end at 2.5, the top of the curve of the curve", ticks)
	}
	if n := strings.Count(fig.SVG, `class="dp clipped"`); n != 1 || !strings.Contains(fig.SVG, `data-x="30" data-y="76000"`) {
		t.Errorf("%d clipped marks; want the spike drawn clipped with its true value", n)
	}
	if fig.Points != 60 || strings.Count(fig.SVG, `class="dp`) != 60 {
		t.Errorf("points %d: every row is still a mark", fig.Points)
	}
	if !strings.Contains(fig.Note, "1 point(s) above 2.5 drawn on the top edge (max 76000)") || !strings.Contains(fig.SVG, `class="clip-note"`) {
		t.Errorf("note %q: the clipping must be said on the chart and under it", fig.Note)
	}

	// yscale=linear keeps the full range.
	c, _ = ParseChart("line x=step y=loss yscale=linear")
	fig, _ = c.Render(lossResult(76000), "loss")
	ticks = yTick.FindAllStringSubmatch(fig.SVG, -1)
	if strings.Contains(fig.SVG, "clipped") || ticks[len(ticks)-1][1] != "80000" {
		t.Errorf("yscale=linear: ticks %v", ticks)
	}
}

func TestOrdinarySpreadIsNotClipped(t *testing.T) {
	c, _ := ParseChart("line x=step y=loss")
	for _, spike := range []float64{4, 20} { // within the curve's range or under ten times it: kept
		fig, err := c.Render(lossResult(spike), "loss")
		if err != nil || strings.Contains(fig.SVG, "clipped") {
			t.Errorf("spike %v clipped: %v", spike, err)
		}
	}
	// All zeros but one success: nothing to clip to.
	res := &query.Result{Columns: []string{"i", "n"}, Types: []string{"INTEGER", "INTEGER"}}
	for i := 0; i < 20; i++ {
		n := int64(0)
		if i == 7 {
			n = 1
		}
		res.Rows = append(res.Rows, []any{int64(i), n})
	}
	c2, _ := ParseChart("line x=i y=n")
	if fig, err := c2.Render(res, "x"); err != nil || strings.Contains(fig.SVG, "clipped") {
		t.Errorf("a single 1 among zeros was clipped: %v", err)
	}
	if _, err := ParseChart("line x=a y=b yscale=log"); err == nil || !strings.Contains(err.Error(), "auto or linear") {
		t.Errorf("yscale=log: %v", err)
	}
}
