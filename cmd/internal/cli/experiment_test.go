package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/experiment"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/query"
	"github.com/cualake/cualake/query/notebook/notebooktest"
)

// tinyExperiment: the run test's small config (6 tasks, one iteration, a few
// optimiser steps; the causal policy): two variants that differ after the
// prefix, in the GRPO advantage (the segment mode would not do: the warm
// start reads the segments, so it is part of the prefix).
const tinyExperiment = `name: tiny
doc: Group against STEPO advantages on a tiny config.
base: base.yaml
set: {synthesize.count: 4}
seeds: [3]
variants:
  - {name: grpo, set: {train.advantage: grpo}}
  - {name: stepo}
`

// TestExperimentRunsOnBranches: one prefix, a branch per variant forked
// from it with its lineage marked, the experiments table on main, a rerun
// that redoes nothing, the report and the list.
func TestExperimentRunsOnBranches(t *testing.T) {
	if testing.Short() {
		t.Skip("the experiment test trains a policy; skipped in -short mode")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "base.yaml"), []byte(smallRun), 0o644); err != nil {
		t.Fatal(err)
	}
	exp := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(exp, []byte(tinyExperiment), 0o644); err != nil {
		t.Fatal(err)
	}
	lk := filepath.Join(dir, "lake")
	t.Setenv("CUALAKE_TEST_CHILD", "1") // --workers 2 runs stages as children: this binary, as cualake
	app := App()
	var stdout, stderr strings.Builder
	app.Writer, app.ErrWriter = &stdout, &stderr
	if err := app.RunContext(context.Background(), []string{"cualake", "experiment", "run", exp, "--lake", lk, "--workers", "2", "--json"}); err != nil {
		t.Fatalf("experiment run: %v\n%s", err, stderr.String())
	}
	var res experiment.Result
	if err := json.Unmarshal([]byte(stdout.String()), &res); err != nil {
		t.Fatalf("--json: %v\n%s", err, stdout.String())
	}
	if !strings.Contains(stderr.String(), "[exp/tiny/grpo/s3] ") || !strings.Contains(stderr.String(), "[exp/tiny/stepo/s3] ") {
		t.Errorf("stage output not prefixed with its branch:\n%s", stderr.String())
	}
	p, err := experiment.Load(exp)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Prefixes) != 1 || res.Prefixes[0].Ran != len(p.Prefixes[0].Steps) || len(res.Arms) != 2 {
		t.Fatalf("prefixes %+v, arms %+v", res.Prefixes, res.Arms)
	}
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, lk, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range res.Arms {
		if a.Ran == 0 || a.Resumed != 0 {
			t.Fatalf("%s: ran %d, resumed %d: every iteration step must run on each branch", a.Branch, a.Ran, a.Resumed)
		}
		log, err := l.Log(ctx, a.Branch, 0)
		if err != nil {
			t.Fatal(err)
		}
		// The branch's lineage: its steps, the experiment marker, then the
		// prefix's snapshots.
		var marker *lake.Manifest
		for _, m := range log {
			var params map[string]any
			json.Unmarshal(m.Params, &params)
			if m.Stage == "experiment" && params["variant"] == a.Variant && params["experiment"] == "tiny" {
				marker = m
			}
		}
		if marker == nil || marker.Parent != res.Prefixes[0].Head {
			t.Fatalf("%s: no experiment marker forked from the prefix head %s", a.Branch, res.Prefixes[0].Head)
		}
	}
	main, err := l.At(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if main.ID != res.Snapshot {
		t.Fatalf("main at %s, results committed at %s", main.ID, res.Snapshot)
	}
	e, err := query.Open(ctx, l, main)
	if err != nil {
		t.Fatal(err)
	}
	q, err := e.Query(ctx, `SELECT variant, iteration, heldout_success, train_success, items, train_seconds IS NOT NULL, replayed_groups, executable_rate, policy_lag
		FROM experiments WHERE experiment = 'tiny' ORDER BY variant, iteration`)
	e.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Rows) != 4 || res.Rows != 4 {
		t.Fatalf("rows %v, want 2 variants x iterations 0..1", q.Rows)
	}
	// Iteration 0 is the shared prefix: the same numbers on both branches.
	if q.Rows[0][1] != int32(0) || q.Rows[2][1] != int32(0) || q.Rows[0][2] != q.Rows[2][2] || q.Rows[0][3] != q.Rows[2][3] || q.Rows[0][4] != q.Rows[2][4] {
		t.Fatalf("iteration 0 differs between variants: %v / %v", q.Rows[0], q.Rows[2])
	}
	// From train_groups: no replays (uniform sampler) and lag 0 (the
	// synchronous loop) where GRPO trained, null at the warm start.
	for _, r := range q.Rows {
		if r[5] != true {
			t.Fatalf("row %v: train seconds missing", r)
		}
		if r[1] == int32(0) && (r[6] != nil || r[8] != nil) || r[1] != int32(0) && (r[6] != int64(0) || r[8] != float64(0)) {
			t.Fatalf("row %v: replayed groups and policy lag", r)
		}
	}
	// The warm start's SFT trained on the demonstrations: iteration 0 counts
	// its items.
	if q.Rows[0][4].(int64) <= 0 {
		t.Fatalf("rows %v: the warm start trained no items", q.Rows)
	}
	// The prefix synthesized tasks: its executable rate is at iteration 0.
	if x, ok := q.Rows[0][7].(float64); !ok || x <= 0 || q.Rows[1][7] != nil {
		t.Fatalf("rows %v: executable rate at iteration 0 only", q.Rows)
	}

	// The per-app held-out query of docs/experiments.md runs on a branch
	// and adds up to the branch's held-out success at its last iteration.
	perAppSQL := filepath.Join(dir, "per-app.sql")
	if err := os.WriteFile(perAppSQL, []byte(docsSQL(t, "experiments.md", "-- experiments: held-out success per app")), 0o644); err != nil {
		t.Fatal(err)
	}
	perApp, err := run(t, "query", "--lake", lk, "--branch", "exp/tiny/grpo/s3", "--format", "csv", "--file", perAppSQL)
	if err != nil {
		t.Fatalf("per-app query: %v\n%s", err, perApp)
	}
	tasks, passed := 0, 0
	for _, r := range csvRows(t, perApp) {
		n, err1 := strconv.Atoi(r["tasks"])
		p, err2 := strconv.Atoi(r["pass_final"])
		if err1 != nil || err2 != nil || r["app"] == "" {
			t.Fatalf("per-app row %v", r)
		}
		tasks, passed = tasks+n, passed+p
	}
	heldOut, err := run(t, "query", "--lake", lk, "--branch", "exp/tiny/grpo/s3", "--format", "csv",
		"select count(distinct task_id) as n from trajectories where source = 'eval'")
	if err != nil {
		t.Fatal(err)
	}
	if want := csvRows(t, heldOut)[0]["n"]; strconv.Itoa(tasks) != want {
		t.Fatalf("per-app query counts %d held-out tasks, the branch evaluated %s\n%s", tasks, want, perApp)
	}
	if h, ok := q.Rows[1][2].(float64); !ok || tasks == 0 || math.Abs(float64(passed)/float64(tasks)-h) > 1e-9 {
		t.Fatalf("per-app query: %d of %d held-out tasks pass at the end, experiments says %v\n%s", passed, tasks, q.Rows[1][2], perApp)
	}

	// The samplers query of docs/experiments.md, on this experiment: one
	// row per variant, held-out success at the last iteration as the table
	// has it, the gain from iteration 0, and the zero-variance share.
	sampSQL := filepath.Join(dir, "samplers.sql")
	sq := strings.ReplaceAll(docsSQL(t, "experiments.md", "-- experiments: samplers, final numbers"), "'samplers'", "'tiny'")
	if err := os.WriteFile(sampSQL, []byte(sq), 0o644); err != nil {
		t.Fatal(err)
	}
	samp, err := run(t, "query", "--lake", lk, "--format", "csv", "--file", sampSQL)
	if err != nil {
		t.Fatalf("samplers query: %v\n%s", err, samp)
	}
	sr := csvRows(t, samp)
	if len(sr) != 2 || sr[0]["variant"] != "grpo" || sr[1]["variant"] != "stepo" || sr[0]["seeds"] != "1" {
		t.Fatalf("samplers query rows:\n%s", samp)
	}
	for i, v := range []int{1, 3} { // q.Rows: per variant, iterations 0 and 1
		h0, h1 := q.Rows[v-1][2].(float64), q.Rows[v][2].(float64)
		held, err1 := strconv.ParseFloat(sr[i]["heldout"], 64)
		gain, err2 := strconv.ParseFloat(sr[i]["gain"], 64)
		train, err3 := strconv.ParseFloat(sr[i]["train"], 64)
		if err1 != nil || err2 != nil || err3 != nil || math.Abs(held-100*h1) > 0.051 || math.Abs(gain-100*(h1-h0)) > 0.051 ||
			math.Abs(train-100*q.Rows[v][3].(float64)) > 0.051 {
			t.Fatalf("samplers query %v: want held-out %.3f, gain %.3f, train %v from the table", sr[i], h1, h1-h0, q.Rows[v][3])
		}
		if _, err := strconv.ParseFloat(sr[i]["zero_var"], 64); err != nil {
			t.Fatalf("samplers query %v: zero_var", sr[i])
		}
	}

	// A rerun redoes nothing and commits nothing new.
	out, err := run(t, "experiment", "run", exp, "--lake", lk, "--json")
	if err != nil {
		t.Fatalf("rerun: %v\n%s", err, out)
	}
	if !strings.Contains(out, `"steps_run": 0`) || strings.Contains(out, `"steps_run": 1`) || !strings.Contains(out, res.Snapshot) {
		t.Fatalf("rerun ran steps or moved the results:\n%s", out)
	}

	// Another experiment in the same lake with the same prefix config
	// shares tiny's committed prefix (nothing of it runs again); --seeds
	// runs one of its file's seeds, and only that seed's rows land.
	other := filepath.Join(dir, "other.yaml")
	otherText := strings.Replace(strings.Replace(tinyExperiment, "name: tiny", "name: other", 1), "seeds: [3]", "seeds: [3, 4]", 1)
	// Its variant "same" is tiny's stepo (the base config) at seed 3: the
	// run is shared too; naive runs.
	otherText = otherText[:strings.Index(otherText, "variants:")] + "variants:\n  - {name: naive, set: {train.advantage: naive}}\n  - {name: same}\n"
	if err := os.WriteFile(other, []byte(otherText), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "experiment", "run", other, "--lake", lk, "--seeds", "5"); err == nil || !strings.Contains(err.Error(), "seed 5 is not one of the file's seeds [3 4]") {
		t.Fatalf("--seeds 5: %v\n%s", err, out)
	}
	out, err = run(t, "experiment", "run", other, "--lake", lk, "--seeds", "3", "--json")
	if err != nil {
		t.Fatalf("other experiment: %v\n%s", err, out)
	}
	var shared experiment.Result
	if err := json.NewDecoder(strings.NewReader(out)).Decode(&shared); err != nil { // stdout's JSON, then the log
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if len(shared.Prefixes) != 1 || shared.Prefixes[0].Ran != 0 || shared.Prefixes[0].Head != res.Prefixes[0].Head ||
		!strings.HasPrefix(shared.Prefixes[0].Branch, "exp/other/_prefix/") || !strings.Contains(out, "shared (snapshot") {
		t.Fatalf("the other experiment's prefix %+v: want tiny's (%s) shared, nothing run\n%s", shared.Prefixes, res.Prefixes[0].Head, out)
	}
	if len(shared.Arms) != 2 || shared.Arms[0].Ran == 0 || shared.Arms[1].Ran != 0 || shared.Arms[1].Resumed == 0 || shared.Rows != 4 ||
		!strings.Contains(out, "committed on exp/tiny/stepo/s3; shared") {
		t.Fatalf("the other experiment's arms %+v, rows %d: want naive run and same shared from tiny's stepo, at seed 3 only, iterations 0..1\n%s", shared.Arms, shared.Rows, out)
	}
	cmp, err := run(t, "query", "--lake", lk, "--format", "csv", `SELECT experiment, iteration, heldout_success, train_success, items, tokens, train_seconds
		FROM experiments WHERE (experiment, variant) IN (('tiny', 'stepo'), ('other', 'same')) ORDER BY iteration, experiment`)
	if err != nil {
		t.Fatal(err)
	}
	rows := csvRows(t, cmp)
	if len(rows) != 4 {
		t.Fatalf("shared arm rows:\n%s", cmp)
	}
	for i := 0; i < 4; i += 2 {
		a, b := rows[i], rows[i+1]
		delete(a, "experiment")
		delete(b, "experiment")
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("the shared arm's rows differ from its donor's:\n%s", cmp)
		}
	}
	sameLog, err := l.Log(ctx, "exp/other/same/s3", 1)
	if err != nil {
		t.Fatal(err)
	}
	var mp map[string]any
	json.Unmarshal(sameLog[0].Params, &mp)
	if sameLog[0].Stage != "experiment" || mp["experiment"] != "other" || mp["variant"] != "same" || mp["shared_from"] != "exp/tiny/stepo/s3" {
		t.Fatalf("the shared arm's head is not its marker: %s %s", sameLog[0].Stage, sameLog[0].Params)
	}

	// An edited file whose variant now runs another config does not pile
	// onto the branch of the old one.
	edited := filepath.Join(dir, "edited.yaml")
	os.WriteFile(edited, []byte(strings.Replace(tinyExperiment, "train.advantage: grpo", "train.advantage: naive", 1)), 0o644)
	if out, err := run(t, "experiment", "run", edited, "--lake", lk); err == nil || !strings.Contains(err.Error(), "branch exp/tiny/grpo/s3 already holds a run of another config") {
		t.Fatalf("edited experiment: %v\n%s", err, out)
	}

	// The report: the notebook renderer's page, drawn in Chromium.
	html := filepath.Join(dir, "tiny.html")
	printed, err := run(t, "experiment", "report", exp, "--lake", lk, "--out", html)
	if err != nil {
		t.Fatalf("report: %v\n%s", err, printed)
	}
	b, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{"Final numbers per variant", "train_time_ratio", "heldout_gain", "Train seconds per iteration", "FROM experiments WHERE experiment = &#39;tiny&#39;", main.ID[:12]} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Index(page, ">grpo<") > strings.Index(page, ">stepo<") {
		t.Error("variants not in the file's order")
	}
	pg := notebooktest.Load(t, html, "experiment-tiny.png")
	charts, points, bad, err := pg.Counts()
	if err != nil {
		t.Fatal(err)
	}
	if charts != 6 || points == 0 || bad != 0 {
		t.Fatalf("report in Chromium: %d charts, %d points, %d bad", charts, points, bad)
	}

	// --json: the final numbers unformatted, in the file's order; with one
	// seed the mean is the branch's last row and the sd 0.
	out, err = run(t, "experiment", "report", exp, "--lake", lk, "--out", html, "--json")
	var rep struct {
		Experiment, Report, Snapshot string
		Final                        []map[string]any
	}
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("report --json: %v\n%s", err, out)
	}
	if rep.Experiment != "tiny" || rep.Report != html || len(rep.Snapshot) != 64 || len(rep.Final) != 2 {
		t.Fatalf("report --json: %s", out)
	}
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), rep.Snapshot[:12]) {
		t.Fatalf("the page does not name the snapshot of the JSON, %s: %v", rep.Snapshot, err)
	}
	for i, want := range []struct {
		variant string
		row     []any
		first   []any
	}{{"grpo", q.Rows[1], q.Rows[0]}, {"stepo", q.Rows[3], q.Rows[2]}} {
		f := rep.Final[i]
		if f["variant"] != want.variant || f["position"] != float64(i+1) || f["seeds"] != float64(1) ||
			f["heldout_success"] != want.row[2] || f["heldout_success_sd"] != float64(0) || f["train_success"] != want.row[3] {
			t.Errorf("final row %d: %v, want %s with the branch's last row %v", i, f, want.variant, want.row)
		}
		// The gain over the seed's own iteration 0 (its warm start).
		last, _ := want.row[2].(float64)
		warm, _ := want.first[2].(float64)
		if g, ok := f["heldout_gain"].(float64); !ok || math.Abs(g-(last-warm)) > 1e-12 || f["heldout_gain_sd"] != float64(0) {
			t.Errorf("final row %d: heldout_gain %v +- %v, want %v - %v", i, f["heldout_gain"], f["heldout_gain_sd"], last, warm)
		}
		// Without --json the command printed the same numbers, one line a variant.
		line := fmt.Sprintf("%s 1 %.3f ± 0.000 %+.3f ± 0.000", want.variant, last, last-warm)
		found := false
		for _, l := range strings.Split(printed, "\n") {
			found = found || strings.HasPrefix(strings.Join(strings.Fields(l), " "), line)
		}
		if !found {
			t.Errorf("report printed\n%s\nwithout a line %q", printed, line)
		}
	}

	out, err = run(t, "experiment", "list", "--lake", lk, "--json")
	if err != nil || !strings.Contains(out, `"experiment": "tiny"`) || !strings.Contains(out, `"rows": 4`) || !strings.Contains(out, `"grpo",`) {
		t.Fatalf("list: %v\n%s", err, out)
	}
}

// TestExperimentRefusesBadInputBeforeRunning: nothing is created in the
// lake for a file with an unknown key, an unsafe or duplicate variant, an
// invalid base, a variant value that fails validation or one of the wrong
// type.
func TestExperimentRefusesBadInputBeforeRunning(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "base.yaml"), []byte(smallRun), 0o644)
	os.WriteFile(filepath.Join(dir, "bad-base.yaml"), []byte("sample: {sampler: lucky}\n"), 0o644)
	lk := filepath.Join(dir, "lake")
	for _, c := range []struct{ text, want string }{
		{"name: e\nbase: base.yaml\nseeds: [1]\nvariants: [{name: a, set: {segment.mdoe: step}}]\n", "segment.mdoe"},
		{"name: e\nbase: base.yaml\nseeds: [1]\nvariants: [{name: 'a b'}]\n", `variant "a b"`},
		{"name: e\nbase: base.yaml\nseeds: [1]\nvariants: [{name: a}, {name: a}]\n", `variant "a" is listed twice`},
		{"name: e\nbase: bad-base.yaml\nseeds: [1]\nvariants: [{name: a}]\n", "lucky"},
		// Values Validate refuses in a variant, and a value of the wrong
		// type, named by variant and key.
		{"name: e\nbase: base.yaml\nseeds: [1]\nvariants: [{name: a}, {name: b, set: {eval.split: bogus}}]\n", `variant b: overrides eval.split: eval.split is "bogus"`},
		{"name: e\nbase: base.yaml\nseeds: [1]\nvariants: [{name: a}, {name: b, set: {train.steps: 0}}]\n", `variant b: overrides train.steps: train.steps is 0, want >= 1`},
		{"name: e\nbase: base.yaml\nseeds: [1]\nvariants: [{name: a, set: {segment.k: \"five\"}}]\n", `variant a: segment.k: want an integer, got "five"`},
	} {
		p := filepath.Join(dir, "e.yaml")
		os.WriteFile(p, []byte(c.text), 0o644)
		out, err := run(t, "experiment", "run", p, "--lake", lk)
		if err == nil || !strings.Contains(out+err.Error(), c.want) {
			t.Errorf("%q: %v %s; want an error naming %s", c.text, err, out, c.want)
		}
		if _, err := os.Stat(lk); err == nil {
			t.Fatalf("%q: the lake was created before the file was checked", c.text)
		}
	}
}
