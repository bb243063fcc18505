package notebooks_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cualake/cualake/notebooks"
	"github.com/cualake/cualake/pipeline/audit"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/query"
	"github.com/cualake/cualake/query/notebook"
	"github.com/cualake/cualake/query/notebook/notebooktest"
	"github.com/cualake/cualake/schemas"
)

// auditedFixture is the notebooktest fixture with every audit run on top,
// so the audits table holds real rows of every kind.
func auditedFixture(t *testing.T) (*lake.Lake, *lake.Manifest) {
	t.Helper()
	ctx := context.Background()
	l, m := notebooktest.Lake(t)
	rows := notebooktest.FixtureRows()
	labels := filepath.Join(t.TempDir(), "labels.csv")
	var csv strings.Builder
	csv.WriteString("trajectory_id,human\n")
	for i, tr := range rows.Trajectories[:30] {
		verdict := "failure"
		if (tr.Outcome == schemas.OutcomeSuccess) != (i%7 == 0) { // every 7th label disagrees with the judge
			verdict = "success"
		}
		csv.WriteString(tr.TrajectoryID + "," + verdict + "\n")
	}
	if err := os.WriteFile(labels, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	lab, err := audit.ReadLabels(labels)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range audit.Kinds {
		in := audit.Input{Lake: l, Snapshot: m}
		var res *audit.Result
		switch kind {
		case audit.KindOverlap:
			tasks, _ := lake.ReadTable(ctx, l, m, schemas.Tasks)
			train, eval, err := audit.WithinPools(tasks, audit.WithinSource, m.ID)
			if err != nil {
				t.Fatal(err)
			}
			// Plant one near-duplicate so the pairs table and histogram have data.
			near := eval.Items[0]
			near.ID, near.Instruction = "planted", near.Instruction+" now"
			train.Items = append(train.Items, near)
			res, err = audit.OverlapPools(train, eval, audit.DefaultThreshold)
			if err != nil {
				t.Fatal(err)
			}
		case audit.KindJudges:
			trajs, _ := lake.ReadTable(ctx, l, m, schemas.Trajectories)
			tasks, _ := lake.ReadTable(ctx, l, m, schemas.Tasks)
			res, err = audit.JudgesAgreement(trajs, tasks, lab)
		case audit.KindVerifier:
			res, err = audit.Verifier(ctx, in)
		case audit.KindSynthesis:
			res, err = audit.Synthesis(ctx, in)
		case audit.KindHealth:
			res, err = audit.Health(ctx, in, audit.DefaultHealth)
		}
		if err != nil {
			t.Fatalf("audit %s: %v", kind, err)
		}
		if m, err = audit.Commit(ctx, l, "", res); err != nil {
			t.Fatal(err)
		}
	}
	return l, m
}

var reWord = regexp.MustCompile(`[a-z_]+`)

// TestShippedNotebooksRender runs every shipped notebook against a fixture
// with rows in every table they read: no cell may fail, every chart must
// draw points, and the browser must render them without console errors.
func TestShippedNotebooksRender(t *testing.T) {
	ctx := context.Background()
	l, m := auditedFixture(t)
	e, err := query.Open(ctx, l, m)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	names := notebooks.Names()
	for _, want := range []string{"rollout-health", "frontier", "segments", "synthesis", "verification",
		"audit-overlap", "audit-judges", "audit-verifier", "audit-synthesis", "audit-health"} {
		if _, err := notebooks.Source(want); err != nil {
			t.Fatalf("shipped notebook %s is missing: %v", want, err)
		}
	}
	dir := t.TempDir()
	type page struct {
		name, path     string
		charts, points int
	}
	var pages []page
	for _, name := range names {
		src, _ := notebooks.Source(name)
		nb := notebook.Parse(name+".md", src)
		// Every table a notebook names must have rows in the fixture, or
		// an empty chart could pass unnoticed.
		for _, c := range nb.Cells {
			if c.Kind != notebook.SQL {
				continue
			}
			for _, w := range reWord.FindAllString(strings.ToLower(c.Text), -1) {
				if _, ok := schemas.Lookup(w); ok && m.Tables[w].Rows == 0 {
					t.Errorf("%s %s reads table %s, which the fixture leaves empty", name, c.Label(), w)
				}
			}
		}
		r, err := notebook.Run(ctx, e, nb)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Err(); err != nil {
			t.Errorf("%v", err)
			continue
		}
		charts, points := 0, 0
		for _, o := range r.Cells {
			if o.Cell.Chart == nil {
				continue
			}
			charts++
			if o.Figure == nil || o.Figure.Points == 0 {
				t.Errorf("%s %s: chart %q drew no points", name, o.Cell.Label(), o.Cell.Title)
				continue
			}
			points += o.Figure.Points
		}
		if charts == 0 {
			t.Errorf("%s has no chart", name)
		}
		var html, ipynb bytes.Buffer
		if err := notebook.WriteHTML(&html, r); err != nil {
			t.Fatal(err)
		}
		if err := notebook.WriteIPYNB(&ipynb, r); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name+".html")
		if err := os.WriteFile(path, html.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		pages = append(pages, page{name, path, charts, points})
	}
	if notebooktest.Chromium() == "" {
		t.Skip("chromium is not installed (apt-get install chromium chromium-driver): the notebooks ran, the browser check did not")
	}
	t.Run("browser", func(t *testing.T) {
		for _, p := range pages {
			t.Run(p.name, func(t *testing.T) {
				t.Parallel()
				got := notebooktest.Load(t, p.path, "notebook-"+p.name+".png")
				charts, points, bad, err := got.Counts()
				if err != nil {
					t.Fatal(err)
				}
				if charts != p.charts || points != p.points || bad != 0 {
					t.Errorf("charts=%d points=%d bad=%d; want %d, %d, 0", charts, points, bad, p.charts, p.points)
				}
				if len(got.Console) > 0 {
					t.Errorf("console messages %q", got.Console)
				}
			})
		}
	})
}
