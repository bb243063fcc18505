package cli

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/outfile"
	"github.com/cualake/cualake/query/view"
)

// viewLake is a lake of real rollouts: oracle episodes with screenshots on
// two tasks, then tree-only random ones.
func viewLake(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "lake")
	t.Setenv("CUALAKE_LAKE", dir)
	if out, err := run(t, "rollout", "--policy", "oracle", "--n", "2", "--limit-tasks", "2", "--workers", "2"); err != nil {
		t.Fatalf("rollout: %v\n%s", err, out)
	}
	return dir
}

func TestViewTrajectoryWritesScreenshotsWithActions(t *testing.T) {
	viewLake(t)
	out, err := run(t, "query", "--format", "csv", `select t.trajectory_id, count(*) as steps, count(distinct s.observation) as shots,
		count(*) filter (where s.x is not null) as placed from trajectories t join steps s using (trajectory_id)
		group by 1 order by 1 limit 1`)
	if err != nil {
		t.Fatal(err)
	}
	rec := strings.Split(strings.Split(strings.TrimSpace(out), "\n")[1], ",")
	id := rec[0]
	pages := t.TempDir()
	t.Chdir(pages) // the default --out is out/view under the working directory
	out, err = run(t, "view", "trajectory", id, "--json")
	if err != nil {
		t.Fatalf("view: %v\n%s", err, out)
	}
	var res struct {
		Pages   []string `json:"pages"`
		Written int      `json:"screenshots_written"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	want := filepath.Join("out", "view", view.PageName(view.KindTrajectory, id))
	if len(res.Pages) != 1 || res.Pages[0] != want || res.Written != atoi(t, rec[2]) {
		t.Fatalf("view --json %+v; want %s and %s screenshots", res, want, rec[2])
	}
	b, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	imgs := regexp.MustCompile(`<img src="blobs/([0-9a-f]{64})\.png"`).FindAllStringSubmatch(page, -1)
	if len(imgs) != atoi(t, rec[1]) {
		t.Fatalf("%d screenshots on the page for %s steps", len(imgs), rec[1])
	}
	for _, m := range imgs {
		if _, err := os.Stat(filepath.Join("out", "view", "blobs", m[1]+".png")); err != nil {
			t.Errorf("screenshot %s: %v", m[1], err)
		}
	}
	if n := strings.Count(page, `class="mark mark-`); n < atoi(t, rec[3]) || atoi(t, rec[3]) == 0 {
		t.Errorf("%d action markers for %s placed actions", n, rec[3])
	}
	// Flags after the id work, and the lake is never written into.
	lakeDir := os.Getenv("CUALAKE_LAKE")
	if _, err := run(t, "view", "trajectory", id, "--out", filepath.Join(lakeDir, "t.html")); !errors.Is(err, outfile.ErrInsideLake) {
		t.Errorf("view --out inside the lake: %v", err)
	}
	if _, err := run(t, "view", "trajectory", "no-such-id"); err == nil || !strings.Contains(err.Error(), "no-such-id") {
		t.Errorf("unknown id: %v", err)
	}
	// A group page comes with its rollouts' pages, which find their
	// screenshots already written.
	group := id[:strings.LastIndex(id, "#")]
	out, err = run(t, "view", "group", group)
	if err != nil || !strings.Contains(out, "2 more page(s)") {
		t.Fatalf("view group: %v\n%s", err, out)
	}
}

func TestReportsLinkIDsToViewerPages(t *testing.T) {
	viewLake(t)
	nb := filepath.Join(t.TempDir(), "ids.md")
	if err := os.WriteFile(nb, []byte("```sql\nSELECT trajectory_id, group_id, task_id FROM trajectories ORDER BY 1 LIMIT 1\n```\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(t.TempDir(), "r.html")
	if out, err := run(t, "notebook", "run", nb, "--out", report); err != nil {
		t.Fatalf("notebook: %v\n%s", err, out)
	}
	out, _ := run(t, "query", "--format", "csv", "SELECT trajectory_id, group_id, task_id FROM trajectories ORDER BY 1 LIMIT 1")
	ids := strings.Split(strings.Split(strings.TrimSpace(out), "\n")[1], ",")
	b, _ := os.ReadFile(report)
	for i, kind := range []string{view.KindTrajectory, view.KindGroup, view.KindTask} {
		if href := `href="view/` + view.PageName(kind, ids[i]) + `"`; !strings.Contains(string(b), href) {
			t.Errorf("report lacks %s", href)
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("not a number: %q", s)
		}
		n = n*10 + int(c-'0')
	}
	return n
}
