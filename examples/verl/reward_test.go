// Package verl holds the example reward function for verl
// (cualake_reward.py); this test runs it under Debian's python3.
package verl

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/cualake/cualake/pipeline/exporter"
	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/pipeline/simdesk/server"
	"github.com/cualake/cualake/schemas"
)

// python is Debian's interpreter (scripts/setup.sh installs python3 with
// python3-torch and python3-requests); the example needs nothing else.
const python = "/usr/bin/python3"

// call is one compute_score call, as verl makes it for a row.
type call struct {
	DataSource  string         `json:"data_source"`
	Solution    string         `json:"solution_str"`
	GroundTruth string         `json:"ground_truth"`
	ExtraInfo   map[string]any `json:"extra_info"`
}

// runReward runs compute_score on each call in a fresh python3 and returns
// the scores, or the process's failure and stderr.
func runReward(t *testing.T, env []string, calls []call) ([]float64, string, error) {
	t.Helper()
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("Debian's python3 is a setup dependency (apt-get install python3): %v", err)
	}
	fixture := filepath.Join(t.TempDir(), "calls.json")
	b, _ := json.Marshal(calls)
	if err := os.WriteFile(fixture, b, 0o644); err != nil {
		t.Fatal(err)
	}
	dir, _ := filepath.Abs(".")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-I", "-B", "-c", `
import json, sys
sys.path.insert(0, sys.argv[1])
import cualake_reward
calls = json.load(open(sys.argv[2]))
print(json.dumps([cualake_reward.compute_score(c["data_source"], c["solution_str"], c["ground_truth"], extra_info=c["extra_info"]) for c in calls]))
`, dir, fixture)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, stderr.String(), err
	}
	var scores []float64
	if err := json.Unmarshal(stdout.Bytes(), &scores); err != nil {
		t.Fatalf("compute_score output %q: %v (stderr %s)", stdout.String(), err, stderr.String())
	}
	return scores, stderr.String(), nil
}

// exportedRow exports a one-task lake with `export verl` and reads the row
// back with DuckDB: the data_source, ground truth and extra_info verl hands
// the reward function.
func exportedRow(t *testing.T, task schemas.Task) call {
	t.Helper()
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	tx, _ := l.Begin(ctx, "")
	if err := lake.ReplaceTable(ctx, tx, schemas.Tasks, []schemas.Task{task}); err != nil {
		t.Fatal(err)
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "fixture"})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "pool.parquet")
	if _, err := exporter.Verl(ctx, l, m, out, exporter.VerlOptions{}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var c call
	var extra []byte
	err = db.QueryRow(`SELECT data_source, reward_model.ground_truth, to_json(extra_info)::VARCHAR FROM read_parquet(?)`, out).
		Scan(&c.DataSource, &c.GroundTruth, &extra)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(extra, &c.ExtraInfo); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRewardOnSimdesk: the reward function replays a response's plan on
// `cualake simdesk serve` from the exported row's initial state and returns
// the judge's score: 1 for the oracle's actions, 0 for giving up or for
// text that is no plan.
func TestRewardOnSimdesk(t *testing.T) {
	var task schemas.Task
	for _, p := range simdesk.Pool() {
		if strings.HasPrefix(p.TaskID, "files-mkdir-") {
			task = p
			break
		}
	}
	row := exportedRow(t, task)
	if row.DataSource != "cualake/files" || row.ExtraInfo["seed"] != float64(exporter.RenderSeed) || row.ExtraInfo["setup"] != task.Setup {
		t.Fatalf("exported row: %+v", row)
	}
	// The oracle's plan from the same initial state, as compact actions.
	pol, err := simdesk.Oracle(task)
	if err != nil {
		t.Fatal(err)
	}
	sim, _ := simdesk.NewSim(simdesk.Options{})
	ep, err := simdesk.Run(sim, pol, task, exporter.RenderSeed, 50)
	if err != nil || ep.Score != 1 {
		t.Fatalf("oracle: %v, score %v", err, ep.Score)
	}
	var plan []string
	for _, a := range ep.Actions {
		s, err := action.Format(a)
		if err != nil {
			t.Fatal(err)
		}
		plan = append(plan, "Action: "+s)
	}
	d, err := simdesk.New(simdesk.DefaultWidth, simdesk.DefaultHeight, 99) // serve starts from another seed: reset must set it
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, d)
	oracle, giveUp, noise := row, row, row
	oracle.Solution = "I will make the folder.\n" + strings.Join(plan, "\nThen:\n")
	giveUp.Solution = "Action: fail"
	noise.Solution = "I cannot see the screen. Maybe click somewhere?"
	scores, stderr, err := runReward(t, []string{"CUALAKE_SIMDESK_URL=" + srv}, []call{oracle, giveUp, noise, oracle})
	if err != nil {
		t.Fatalf("compute_score: %v\n%s", err, stderr)
	}
	if len(scores) != 4 || scores[0] != 1 || scores[1] != 0 || scores[2] != 0 || scores[3] != 1 {
		t.Fatalf("scores %v, want [1 0 0 1]", scores)
	}
	// A row that is not cualake's is refused.
	other := row
	other.DataSource = "openai/gsm8k"
	if _, stderr, err := runReward(t, []string{"CUALAKE_SIMDESK_URL=" + srv}, []call{other}); err == nil || !strings.Contains(stderr, "openai/gsm8k") {
		t.Fatalf("a foreign row: %v\n%s", err, stderr)
	}
}

func newServer(t *testing.T, d *simdesk.Desktop) string {
	t.Helper()
	s := httptest.NewServer(server.NewHTTPServer(d).Handler) // the handler of `cualake simdesk serve`
	t.Cleanup(s.Close)
	return s.URL
}

// TestRewardFromVerdicts: the reward recorded in `cualake export verdicts`
// for the row's trajectory; an unknown trajectory is an error naming it.
func TestRewardFromVerdicts(t *testing.T) {
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	tx, _ := l.Begin(ctx, "")
	trajs := []schemas.Trajectory{
		{TrajectoryID: "t@it000#00", TaskID: "t", GroupID: "t@it000", Reward: 1, Outcome: schemas.OutcomeSuccess},
		{TrajectoryID: "t@it000#01", TaskID: "t", GroupID: "t@it000", Reward: -0.2, Outcome: schemas.OutcomeIncomplete},
	}
	if err := lake.ReplaceTable(ctx, tx, schemas.Trajectories, trajs); err != nil {
		t.Fatal(err)
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "fixture"})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "verdicts.json")
	if _, err := exporter.Verdicts(ctx, l, m, file); err != nil {
		t.Fatal(err)
	}
	env := []string{"CUALAKE_VERDICTS=" + file}
	row := func(id string) call {
		return call{DataSource: "cualake/files", Solution: "Action: done", GroundTruth: "{}", ExtraInfo: map[string]any{"trajectory_id": id}}
	}
	scores, stderr, err := runReward(t, env, []call{row("t@it000#00"), row("t@it000#01")})
	if err != nil || len(scores) != 2 || scores[0] != 1 || scores[1] != -0.2 {
		t.Fatalf("scores %v: %v\n%s", scores, err, stderr)
	}
	if _, stderr, err := runReward(t, env, []call{row("ghost#07")}); err == nil || !strings.Contains(stderr, "ghost#07") {
		t.Fatalf("an unknown trajectory: %v\n%s", err, stderr)
	}
	// Neither way configured: an error saying what to set.
	if _, stderr, err := runReward(t, nil, []call{row("t@it000#00")}); err == nil || !strings.Contains(stderr, "CUALAKE_SIMDESK_URL") {
		t.Fatalf("no configuration: %v\n%s", err, stderr)
	}
}
