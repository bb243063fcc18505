package cli

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/audit"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/loop"
	"github.com/cualake/cualake/pipeline/segment"
	"github.com/cualake/cualake/pipeline/synthesize"
	"github.com/cualake/cualake/query/notebook/notebooktest"
)

const smallRun = `seed: 3
iterations: 1
workers: 2
limit_tasks: 6
warmstart: {demos: 1, steps: 4, lr: 0.001, max_turns: 30}
initial_pass: {n: 2}
sample: {sampler: uniform, batch: 3, alpha: 0.2, p_min: 0, p_max: 1}
rollout: {n: 2, max_turns: 4}
segment: {mode: window, k: 2, delta: 2}
train: {advantage: stepo, steps: 2, lr: 0.0001}
eval: {n: 1, split: heldout}
audits: [health]
`

func writeConfig(t *testing.T, report string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pipeline.yaml")
	if err := os.WriteFile(p, []byte(smallRun+"report: "+report+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// queryRows runs `cualake query --json` over the lake in dir and returns
// its rows.
func queryRows(t *testing.T, dir, sql string) []map[string]any {
	t.Helper()
	out, err := run(t, "query", "--lake", dir, "--json", sql)
	if err != nil {
		t.Fatalf("%s: %v\n%s", sql, err, out)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%s: %v\n%s", sql, err, out)
	}
	return rows
}

// mainLog returns main's snapshots of the lake in dir, newest first.
func mainLog(t *testing.T, dir string) []*lake.Manifest {
	t.Helper()
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	log, err := l.Log(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return log
}

// dataFiles lists every data-file hash of every snapshot on main.
func dataFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, m := range mainLog(t, dir) {
		out = append(out, m.Stage)
		for _, n := range m.TableNames() {
			for _, f := range m.Tables[n].Files {
				out = append(out, n+":"+f.SHA256)
			}
		}
	}
	return out
}

func TestRunReproducibleAndResumable(t *testing.T) {
	if testing.Short() {
		t.Skip("the loop test trains a policy; skipped in -short mode")
	}
	report := filepath.Join(t.TempDir(), "report.html")
	cfg := writeConfig(t, report)
	a := filepath.Join(t.TempDir(), "a")
	app := App()
	var stdout, stderr strings.Builder
	app.Writer, app.ErrWriter = &stdout, &stderr
	if err := app.RunContext(context.Background(), []string{"cualake", "run", "--lake", a, "--config", cfg, "--json"}); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	var sum map[string]any
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	for _, k := range []string{"heldout_success_warmstart", "heldout_success_final", "train_success_by_iteration", "snapshots", "report"} {
		if _, ok := sum[k]; !ok {
			t.Fatalf("summary lacks %s: %v", k, sum)
		}
	}
	// Reach: training tasks with a verified success so far, after each pass;
	// it never falls, and the last equals the lake's count (this small run
	// may solve none: TestLoopSummaryReach counts real successes).
	solved, ok := sum["train_tasks_solved_by_iteration"].(map[string]any)
	if !ok || len(solved) == 0 {
		t.Fatalf("train_tasks_solved_by_iteration: %v", sum["train_tasks_solved_by_iteration"])
	}
	var its []int
	for k := range solved {
		it, err := strconv.Atoi(k)
		if err != nil {
			t.Fatalf("train_tasks_solved_by_iteration key %q: %v", k, err)
		}
		its = append(its, it)
	}
	slices.Sort(its)
	prev := -1.0
	for _, it := range its {
		n, _ := solved[strconv.Itoa(it)].(float64)
		if n < prev {
			t.Fatalf("solved tasks fall at pass %d: %v", it, solved)
		}
		prev = n
	}
	rows := queryRows(t, a, "select count(distinct task_id) as n from trajectories where source = 'rollout' and outcome = 'success'")
	if len(rows) != 1 {
		t.Fatalf("query rows %v", rows)
	}
	if want, _ := rows[0]["n"].(float64); prev != want {
		t.Fatalf("solved after the last pass %v, the lake has %v tasks with a success", prev, want)
	}
	if b, err := os.ReadFile(report); err != nil || !strings.Contains(string(b), "Success rate per iteration") {
		t.Fatalf("report: %v", err)
	}
	// Same config and seed, another lake: identical data files in every snapshot.
	b := filepath.Join(t.TempDir(), "b")
	if out, err := run(t, "run", "--lake", b, "--config", cfg); err != nil {
		t.Fatalf("second run: %v\n%s", err, out)
	}
	fa, fb := dataFiles(t, a), dataFiles(t, b)
	if strings.Join(fa, "\n") != strings.Join(fb, "\n") {
		t.Fatalf("two runs differ:\n%v\n%v", fa, fb)
	}
	// Killed after a step committed but before it was recorded: the rerun
	// neither redoes nor duplicates it, and ends where an unbroken run ends.
	c := filepath.Join(t.TempDir(), "c")
	conf, err := loop.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lake.OpenDir(context.Background(), c, true)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	killed := errors.New("killed")
	exec := inProcess(c, &strings.Builder{})
	_, err = loop.Run(context.Background(), l, conf, func(ctx context.Context, cmd, flags []string) error {
		calls++
		if err := exec(ctx, cmd, flags); err != nil {
			return err
		}
		if calls == 5 {
			return killed // the commit landed, the tag did not
		}
		return nil
	}, &strings.Builder{})
	if !errors.Is(err, killed) {
		t.Fatalf("want the injected kill, got %v", err)
	}
	if out, err := run(t, "run", "--lake", c, "--config", cfg); err != nil {
		t.Fatalf("resumed run: %v\n%s", err, out)
	}
	if fc := dataFiles(t, c); strings.Join(fc, "\n") != strings.Join(fa, "\n") {
		t.Fatalf("resumed run differs from an unbroken one:\n%v\n%v", fc, fa)
	}
}

// TestLoopConfigTakesTheStagesValues: loop.Config.Validate names the
// values of the stages it configures without importing them; every value
// the stage takes validates (audit kinds but judges, which needs labels the
// loop has none of), and a value outside them does not.
func TestLoopConfigTakesTheStagesValues(t *testing.T) {
	for _, kind := range audit.Kinds {
		c := loop.Default()
		c.Audits = []string{kind}
		if err := c.Validate(); (err == nil) != (kind != audit.KindJudges) {
			t.Errorf("audits: [%s]: %v", kind, err)
		}
	}
	if len(loop.LoopAudits) != len(audit.Kinds)-1 {
		t.Errorf("loop audits %v, audit kinds %v", loop.LoopAudits, audit.Kinds)
	}
	for _, m := range segment.Modes {
		c := loop.Default()
		c.Segment.Mode = string(m)
		if err := c.Validate(); err != nil {
			t.Errorf("segment.mode %s: %v", m, err)
		}
	}
	for _, b := range []string{synthesize.BackendBuiltin, synthesize.BackendOpenAI} {
		c := loop.Default()
		c.Synthesize.Backend = b
		if err := c.Validate(); err != nil {
			t.Errorf("synthesize.backend %s: %v", b, err)
		}
	}
}

// TestLoopSummaryReach checks the summary's reach, the training tasks with a
// verified success in any pass up to each one, against the fixture lake's
// rollouts counted here.
func TestLoopSummaryReach(t *testing.T) {
	l, _ := notebooktest.Lake(t)
	sum, err := loopSummary(context.Background(), l, loop.Config{})
	if err != nil {
		t.Fatal(err)
	}
	got, ok := sum["train_tasks_solved_by_iteration"].(map[int64]int64)
	if !ok {
		t.Fatalf("train_tasks_solved_by_iteration is %T", sum["train_tasks_solved_by_iteration"])
	}
	first, passes := notebooktest.Reach() // task -> first iteration with a success; iterations with rollouts
	want := map[int64]int64{}
	for it := range passes {
		want[int64(it)] = 0
	}
	for it := range want {
		for _, f := range first {
			if int64(f) <= it {
				want[it]++
			}
		}
	}
	if !maps.Equal(got, want) {
		t.Fatalf("reach %v, want %v", got, want)
	}
	if want[0] == want[int64(len(want)-1)] {
		t.Fatalf("the fixture's later passes solve no new task (%v): a count of one pass alone would pass", want)
	}
}

// TestRunAugmentsBeforeThePass runs two RFT rounds with rft.augment: before
// round 2's pass, trajectory-guided synthesis adds tasks derived from the
// training tasks' rollouts (never from a held-out task's evaluation), and
// the pass over the unsolved tasks rolls them out.
func TestRunAugmentsBeforeThePass(t *testing.T) {
	if testing.Short() {
		t.Skip("the loop test trains a policy; skipped in -short mode")
	}
	// A warm start that fits its six demonstrated tasks, so that round 1
	// has successes to imitate and synthesis has some to compose.
	cfg := strings.NewReplacer("iterations: 1\n", "iterations: 2\nrft: {iterations: 2, n: 2, steps: 2, pass: unsolved, augment: 3}\n",
		"steps: 4, lr: 0.001", "steps: 60, lr: 0.01", "max_turns: 4}", "max_turns: 30}").Replace(smallRun)
	p := filepath.Join(t.TempDir(), "pipeline.yaml")
	if err := os.WriteFile(p, []byte(cfg+"report: "+filepath.Join(t.TempDir(), "r.html")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "lake")
	out, err := run(t, "run", "--lake", dir, "--config", p)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	added := queryRows(t, dir, `SELECT s.task_id, k.split AS parent_split, s.split FROM
		(SELECT task_id, split, unnest(parent_task_ids) AS parent FROM tasks WHERE source IN ('split', 'composed')) s
		JOIN tasks k ON k.task_id = s.parent ORDER BY 1`)
	ids := map[string]bool{}
	for _, r := range added {
		if r["parent_split"] != "train" || r["split"] != "train" {
			t.Fatalf("trajectory-guided task %v: want a training task of training parents", r)
		}
		ids[r["task_id"].(string)] = true
	}
	if len(ids) < 3 {
		t.Fatalf("%d trajectory-guided tasks, want >= 3: %v", len(ids), added)
	}
	// The pass chose among every training task, the new ones included
	// (limit_tasks then keeps the first six ids, here the original ones).
	m := regexp.MustCompile(`rollout --unsolved: \d+ of the (\d+) tasks`).FindAllStringSubmatch(out, -1)
	train := queryRows(t, dir, `SELECT count(*) AS n FROM tasks WHERE split = 'train'`)[0]["n"].(float64)
	if len(m) != 1 || m[0][1] != strconv.Itoa(int(train)) {
		t.Fatalf("round 2's pass: %v; want one pass over the %v training tasks, the %d new ones included", m, train, len(ids))
	}
}
