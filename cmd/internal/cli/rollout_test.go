package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/rollout"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/server"
	"github.com/cualake/cualake/schemas"
)

func TestRolloutCommitsTrajectories(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	t.Setenv("CUALAKE_LAKE", dir)
	out, err := run(t, "rollout", "--policy", "oracle", "--n", "1", "--limit-tasks", "3", "--json", "--workers", "2")
	if err != nil {
		t.Fatalf("rollout: %v\n%s", err, out)
	}
	var res struct {
		Snapshot string
		Summary  struct {
			Trajectories int
			SuccessRate  float64 `json:"success_rate"`
			NewBlobs     int     `json:"new_blobs"`
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if res.Summary.Trajectories != 3 || res.Summary.SuccessRate != 1 || res.Summary.NewBlobs == 0 {
		t.Fatalf("summary: %+v", res.Summary)
	}
	out, err = run(t, "query", "--format", "csv", `select count(*) as n, count(distinct t.task_id) as tasks,
		bool_and(s.observation in (select hash from blobs)) as screenshots_stored
		from trajectories t join steps s using (trajectory_id)`)
	if err != nil || !strings.HasSuffix(out, ",3,true\n") {
		t.Fatalf("query: %q %v", out, err)
	}
	// A second random run appends as iteration 1 and stores known screenshots once.
	if out, err = run(t, "rollout", "--policy", "random", "--n", "2", "--limit-tasks", "2", "--max-turns", "3", "--seed", "5"); err != nil {
		t.Fatalf("random rollout: %v %s", err, out)
	}
	out, err = run(t, "query", "--format", "csv", "select iteration, policy, count(*) from trajectories group by all order by 1")
	if err != nil || out != "iteration,policy,count_star()\n0,oracle,3\n1,random,4\n" {
		t.Fatalf("iterations: %q %v", out, err)
	}
	out, _ = run(t, "query", "--format", "csv", "select count(*) = count(distinct hash) from blobs")
	if !strings.HasSuffix(out, "true\n") {
		t.Fatalf("blobs stored twice: %q", out)
	}
	// The same episodes again (an evaluation run twice at one iteration) are
	// refused before anything runs, naming the trajectory: the commit would
	// hold one key twice, which every later stage refuses.
	head, _ := run(t, "query", "--format", "csv", "select count(*) from trajectories")
	for _, src := range []string{"eval", "rollout"} {
		args := []string{"rollout", "--policy", "random", "--source", src, "--n", "2", "--limit-tasks", "2", "--max-turns", "3", "--iteration", "7"}
		if out, err := run(t, args...); err != nil {
			t.Fatalf("%s rollout at iteration 7: %v %s", src, err, out)
		}
		want := "trajectory " + rollout.EpisodeID(src, "", 7, 0)[:len(src)+1] // "eval:" or a training rollout's bare id
		if src == "rollout" {
			want = "@it007#00 is already"
		}
		_, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), "is already in snapshot") || !strings.Contains(err.Error(), want) ||
			!strings.Contains(err.Error(), "pass another --iteration") {
			t.Fatalf("%s rollout at iteration 7 again: %v", src, err)
		}
	}
	after, _ := run(t, "query", "--format", "csv", "select count(*) from trajectories")
	if head != "count_star()\n7\n" || after != "count_star()\n15\n" {
		t.Fatalf("trajectories before %q, after the two runs and the two refusals %q; want 7 and 15", head, after)
	}
	out, _ = run(t, "query", "--format", "csv", "select count(*) = count(distinct trajectory_id) from trajectories")
	if !strings.HasSuffix(out, "true\n") {
		t.Fatalf("duplicate trajectory ids: %q", out)
	}
	if _, err := run(t, "rollout", "--policy", "nope"); ExitCode(err) != ExitUsage {
		t.Fatalf("unknown policy: %v", err)
	}
	if _, err := run(t, "rollout", "--tasks", "no-such-task"); err == nil || !strings.Contains(err.Error(), "no-such-task") {
		t.Fatalf("unknown task: %v", err)
	}
}

// TestRolloutAllEpisodesErrored: when every episode ends in error (here the
// policy's endpoint is down) the rollout fails naming the errors and
// commits nothing; one played-out episode is enough to commit.
func TestRolloutAllEpisodesErrored(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	t.Setenv("CUALAKE_LAKE", dir)
	if out, err := run(t, "rollout", "--policy", "oracle", "--n", "1", "--limit-tasks", "1"); err != nil {
		t.Fatalf("oracle rollout: %v\n%s", err, out)
	}
	before, err := run(t, "lake", "log")
	if err != nil {
		t.Fatal(err)
	}
	down := httptest.NewServer(nil)
	url := down.URL
	down.Close() // a port nothing listens on
	_, err = run(t, "rollout", "--policy", "openai", "--endpoint", url, "--model", "m", "--n", "2", "--limit-tasks", "2", "--max-turns", "2")
	if !errors.Is(err, rollout.ErrAllErrored) || !strings.Contains(err.Error(), "4 of 4 episodes") || !strings.Contains(err.Error(), "@it001#") {
		t.Fatalf("rollout against a down endpoint: %v", err)
	}
	if after, _ := run(t, "lake", "log"); after != before {
		t.Fatalf("a failed rollout committed:\n%s\nwas\n%s", after, before)
	}
	// Sharded: each shard writes its fragment (it sees only its tasks); the
	// merge sees every episode errored and refuses, naming errors of both
	// shards' tasks, and main stays put.
	for i := 0; i < 2; i++ {
		if out, err := run(t, "rollout", "--policy", "openai", "--endpoint", url, "--model", "m", "--n", "2", "--limit-tasks", "2",
			"--max-turns", "2", "--shard", fmt.Sprintf("%d/2", i)); err != nil {
			t.Fatalf("shard %d: %v\n%s", i, err, out)
		}
	}
	_, err = run(t, "lake", "merge", "--stage", "rollout", "--shards", "2")
	if !errors.Is(err, rollout.ErrAllErrored) || !strings.Contains(err.Error(), "4 of 4 episodes") || ExitCode(err) != ExitFailure {
		t.Fatalf("merge of all-errored shards: %v", err)
	}
	if after, _ := run(t, "lake", "log"); after != before {
		t.Fatalf("a refused merge committed:\n%s\nwas\n%s", after, before)
	}
	if out, err := run(t, "lake", "fragments", "--stage", "rollout"); err != nil || !strings.Contains(out, "2 of 2") {
		t.Fatalf("the refused merge's fragments should stay: %v\n%s", err, out)
	}
}

// TestRolloutImportedOSWorldTasks: tasks the simulator cannot run fail the
// run before any episode, each named; --skip-unsupported rolls out the
// rest.
func TestRolloutImportedOSWorldTasks(t *testing.T) {
	sample := osworldSample(t)
	initLake(t)
	if out, err := run(t, "simdesk", "pool"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if out, err := run(t, "import", "osworld-tasks", sample); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	calc := "01b269ae-2111-4a07-81fd-3fcd711993b0"
	bluetooth := "b3d4a89c-53f2-4d6b-8b6a-541fb5d205fa" // infeasible, no setup: the simulator runs it
	tasks := "files-mkdir-001," + calc + "," + bluetooth
	before, _ := run(t, "lake", "log", "--json")
	out, err := run(t, "rollout", "--policy", "random", "--n", "1", "--max-turns", "2", "--tasks", tasks)
	if err == nil || !strings.Contains(err.Error(), "1 of 3 tasks cannot run on the simulator") || !strings.Contains(err.Error(), calc+" (libreoffice_calc)") ||
		!strings.Contains(err.Error(), "setup: download") {
		t.Fatalf("want an early failure naming %s: %v %s", calc, err, out)
	}
	if after, _ := run(t, "lake", "log", "--json"); after != before {
		t.Fatal("a failed rollout committed")
	}
	out, err = run(t, "rollout", "--policy", "random", "--n", "1", "--max-turns", "2", "--tasks", tasks, "--skip-unsupported", "--json")
	if err != nil || !strings.Contains(out, "rolling out the other 2") {
		t.Fatalf("--skip-unsupported: %v %s", err, out)
	}
	q, err := run(t, "query", "--format", "csv", "select count(*), count(*) filter (where outcome = 'error') from trajectories")
	if err != nil || !strings.HasSuffix(q, "\n2,0\n") {
		t.Fatalf("trajectories: %q %v", q, err)
	}
	if _, err := run(t, "rollout", "--env", "osworld"); ExitCode(err) != ExitUsage {
		t.Fatalf("--env osworld without a URL: %v", err)
	}
}

// TestRolloutEnvOSWorld rolls out through OSWorld's protocol against a
// served simulator.
func TestRolloutEnvOSWorld(t *testing.T) {
	initLake(t)
	d, err := simdesk.New(simdesk.DefaultWidth, simdesk.DefaultHeight, 1)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(server.New(d))
	defer ts.Close()
	out, err := run(t, "rollout", "--policy", "random", "--n", "1", "--max-turns", "3", "--tasks", "files-mkdir-001,editor-write-001",
		"--env", "osworld", "--osworld-url", ts.URL, "--json")
	if err != nil {
		t.Fatalf("%v %s", err, out)
	}
	q, err := run(t, "query", "--format", "csv", `select count(distinct t.trajectory_id), count(*), count(*) filter (where t.outcome = 'error'),
		bool_and(s.observation in (select hash from blobs)) from trajectories t join steps s using (trajectory_id)`)
	if err != nil || !strings.HasSuffix(q, "\n2,6,0,true\n") {
		t.Fatalf("episodes over OSWorld's protocol: %q %v\n%s", q, err, out)
	}
}

// TestRolloutCoverage: --coverage 0.25 demonstrates a quarter of each
// family's training tasks (the pick rollout.Cover makes with the run's
// seed), records the fraction in the snapshot's params, and is refused
// outside (0, 1] or together with --tasks, naming the flag.
func TestRolloutCoverage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	t.Setenv("CUALAKE_LAKE", dir)
	for _, args := range [][]string{{"--coverage", "0"}, {"--coverage", "1.5"}, {"--coverage", "NaN"},
		{"--coverage", "0.5", "--tasks", "files-rename-001"}} {
		_, err := run(t, append([]string{"rollout", "--policy", "oracle", "--n", "1", "--tree-only"}, args...)...)
		if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "--coverage") {
			t.Fatalf("%v: %v", args, err)
		}
	}
	out, err := run(t, "rollout", "--policy", "oracle", "--source", "warmstart", "--split", "train", "--n", "1",
		"--tree-only", "--coverage", "0.25", "--seed", "2002", "--workers", "2", "--json")
	if err != nil {
		t.Fatalf("rollout: %v\n%s", err, out)
	}
	var train []schemas.Task
	for _, task := range simdesk.Pool() {
		if task.Split == "train" {
			train = append(train, task)
		}
	}
	want, err := rollout.Cover(train, 0.25, 2002, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, task := range want {
		ids = append(ids, "'"+task.TaskID+"'")
	}
	out, err = run(t, "query", "--format", "csv", fmt.Sprintf(`select count(*), count(*) filter (where task_id in (%s)),
		count(distinct regexp_replace(task_id, '-[0-9]+$', '')) from trajectories`, strings.Join(ids, ",")))
	families := map[string]bool{}
	for _, task := range train {
		families[simdesk.FamilyOf(task.TaskID)] = true
	}
	if line := fmt.Sprintf("%d,%d,%d\n", len(want), len(want), len(families)); err != nil || !strings.HasSuffix(out, line) {
		t.Fatalf("trajectories (all, picked, families): %q %v, want %q (of %d training tasks)", out, err, line, len(train))
	}
	if len(want) >= len(train)/2 {
		t.Fatalf("picked %d of %d", len(want), len(train))
	}
	out, err = run(t, "lake", "show", "--json")
	if err != nil || !strings.Contains(out, `"coverage": 0.25`) || strings.Contains(out, "cover_by") {
		t.Fatalf("params lack the coverage, or name a cover_by: %v\n%s", err, out)
	}

	// --cover-by template: the pick rollout.Cover makes with the pool's
	// oracle templates, recorded in the params.
	for _, args := range [][]string{{"--coverage", "0.25", "--cover-by", "task"}, {"--cover-by", "template"}} {
		_, err := run(t, append([]string{"rollout", "--policy", "oracle", "--n", "1", "--tree-only"}, args...)...)
		if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "--cover-by") {
			t.Fatalf("%v: %v", args, err)
		}
	}
	t.Setenv("CUALAKE_LAKE", filepath.Join(t.TempDir(), "lake"))
	out, err = run(t, "rollout", "--policy", "oracle", "--source", "warmstart", "--split", "train", "--n", "1",
		"--tree-only", "--coverage", "0.25", "--cover-by", "template", "--seed", "2002", "--workers", "2", "--json")
	if err != nil {
		t.Fatalf("rollout --cover-by template: %v\n%s", err, out)
	}
	tm, err := rollout.OracleTemplates(train)
	if err != nil {
		t.Fatal(err)
	}
	byTmpl, err := rollout.Cover(train, 0.25, 2002, tm.ByTask)
	if err != nil {
		t.Fatal(err)
	}
	ids = ids[:0]
	for _, task := range byTmpl {
		ids = append(ids, "'"+task.TaskID+"'")
	}
	if slices.EqualFunc(byTmpl, want, func(a, b schemas.Task) bool { return a.TaskID == b.TaskID }) {
		t.Fatal("seed 2002 picks the same tasks by template as by family: the check below proves nothing")
	}
	out, err = run(t, "query", "--format", "csv", fmt.Sprintf(`select count(*), count(*) filter (where task_id in (%s)) from trajectories`, strings.Join(ids, ",")))
	if line := fmt.Sprintf("%d,%d\n", len(byTmpl), len(byTmpl)); err != nil || !strings.HasSuffix(out, line) {
		t.Fatalf("trajectories (all, picked by template): %q %v, want %q", out, err, line)
	}
	out, err = run(t, "lake", "show", "--json")
	if err != nil || !strings.Contains(out, `"cover_by": "template"`) {
		t.Fatalf("params lack cover_by: %v\n%s", err, out)
	}
}

// TestRolloutUnsolved: --unsolved rolls out only the training tasks with no
// verified success of the checkpoint policy in the input snapshot (here
// three solved ones, committed as the policy's rollouts would be, and one
// whose only success is an evaluation episode), records the flag in the
// snapshot's params, and is refused with --tasks, naming the flag.
func TestRolloutUnsolved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	t.Setenv("CUALAKE_LAKE", dir)
	var train []string
	for _, task := range simdesk.Pool() {
		if task.Split == "train" {
			train = append(train, task.TaskID)
		}
	}
	// commitSuccesses commits a verified success of the checkpoint policy
	// on each task, the last as an evaluation episode when evalLast
	commitSuccesses := func(prefix string, ids []string, evalLast bool) {
		var rows []schemas.Trajectory
		for i, id := range ids {
			src := "rollout"
			if evalLast && i == len(ids)-1 {
				src = "eval"
			}
			rows = append(rows, schemas.Trajectory{TrajectoryID: fmt.Sprintf("%s%d", prefix, i), TaskID: id, GroupID: id, Policy: "checkpoint",
				Source: src, Outcome: schemas.OutcomeSuccess, Reward: 1, JudgeDetail: "{}"})
		}
		commitToLake(t, dir, lake.CommitInfo{Stage: "test"}, func(ctx context.Context, tx *lake.Txn) error {
			return lake.AppendTable(ctx, tx, schemas.Trajectories, rows)
		})
	}
	commitSuccesses("t", train[:4], true)
	_, err := run(t, "rollout", "--policy", "oracle", "--n", "1", "--tree-only", "--unsolved", "--tasks", train[5])
	if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "--unsolved") {
		t.Fatalf("--unsolved with --tasks: %v", err)
	}
	out, err := run(t, "rollout", "--policy", "oracle", "--split", "train", "--n", "1", "--tree-only", "--unsolved",
		"--iteration", "2", "--seed", "5", "--workers", "2", "--json")
	if err != nil {
		t.Fatalf("rollout --unsolved: %v\n%s", err, out)
	}
	solved := "'" + strings.Join(train[:3], "','") + "'"
	out, err = run(t, "query", "--format", "csv", fmt.Sprintf(`select count(*), count(*) filter (where task_id in (%s)),
		count(*) filter (where task_id = '%s') from trajectories where policy = 'oracle'`, solved, train[3]))
	if line := fmt.Sprintf("%d,0,1\n", len(train)-3); err != nil || !strings.HasSuffix(out, line) {
		t.Fatalf("oracle episodes (all, of solved tasks, of the eval-only task): %q %v, want %q", out, err, line)
	}
	out, err = run(t, "lake", "show", "--json")
	if err != nil || !strings.Contains(out, `"unsolved": true`) || !strings.Contains(out, fmt.Sprintf(`"tasks": %d`, len(train)-3)) {
		t.Fatalf("params lack the unsolved pass: %v\n%s", err, out)
	}
	// Once every training task is solved, --unsolved commits nothing, and
	// --json says so as JSON, naming the unchanged head.
	commitSuccesses("all", train, false)
	head, err := run(t, "lake", "log", "--json")
	if err != nil {
		t.Fatal(err)
	}
	out, err = run(t, "rollout", "--policy", "oracle", "--split", "train", "--n", "1", "--tree-only", "--unsolved", "--json")
	if err != nil {
		t.Fatalf("rollout --unsolved with nothing left: %v\n%s", err, out)
	}
	var res struct {
		Committed *bool  `json:"committed"`
		Snapshot  string `json:"snapshot"`
		Reason    string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Committed == nil || *res.Committed ||
		!strings.Contains(res.Reason, "nothing to do") || res.Snapshot == "" || !strings.Contains(head, res.Snapshot) {
		t.Fatalf("nothing to do as JSON: %v %+v\n%s", err, res, out)
	}
	if after, err := run(t, "lake", "log", "--json"); err != nil || after != head {
		t.Fatalf("the head moved: %v\n%s", err, after)
	}
}
