package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/schemas"
)

type synthOut struct {
	Snapshot string
	Accepted []string
	Summary  struct {
		Mode                   string
		Candidates, Rows       int
		Accepted               int
		ByMethod               map[string]int `json:"accepted_by_method"`
		ExecutableRate         float64        `json:"executable_rate"`
		AcceptedExecutableRate float64        `json:"accepted_executable_rate"`
		AcceptanceRate         float64        `json:"acceptance_rate"`
		CallsPerAccepted       float64        `json:"calls_per_accepted"`
		SecondsPerAccepted     float64        `json:"seconds_per_accepted"`
	}
}

func runSynth(t *testing.T, args ...string) synthOut {
	t.Helper()
	out, err := run(t, append([]string{"synthesize", "--json"}, args...)...)
	if err != nil {
		t.Fatalf("synthesize %v: %v\n%s", args, err, out)
	}
	var res synthOut
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	return res
}

// rolloutOracle rolls the oracle out on ids and wants every episode to
// succeed.
func rolloutOracle(t *testing.T, ids []string) {
	t.Helper()
	out, err := run(t, "rollout", "--policy", "oracle", "--n", "1", "--tree-only", "--workers", "2", "--json", "--tasks", strings.Join(ids, ","))
	if err != nil {
		t.Fatalf("rollout: %v\n%s", err, out)
	}
	var res struct {
		Summary struct {
			Trajectories int
			SuccessRate  float64 `json:"success_rate"`
			Errors       []string
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("rollout --json: %v\n%s", err, out)
	}
	if res.Summary.Trajectories != len(ids) || res.Summary.SuccessRate != 1 {
		t.Fatalf("the oracle on the new tasks: %+v", res.Summary)
	}
}

func TestSynthesizeBuiltinCommitsAndRollsOut(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	t.Setenv("CUALAKE_LAKE", dir)
	res := runSynth(t, "--count", "10", "--workers", "2", "--seed", "1")
	if res.Summary.Accepted < 10 || len(res.Accepted) != res.Summary.Accepted || res.Summary.ExecutableRate <= 0 ||
		res.Summary.AcceptanceRate <= 0 || res.Summary.CallsPerAccepted <= 0 {
		t.Fatalf("summary %+v", res.Summary)
	}
	out, err := run(t, "query", "--format", "csv", "select source, count(*) from tasks group by 1 order by 1")
	pool := len(simdesk.Pool())
	if err != nil || !strings.Contains(out, "seed,"+itoa(pool)+"\n") || !strings.Contains(out, "synthesized,"+itoa(len(res.Accepted))+"\n") {
		t.Fatalf("tasks: %q %v", out, err)
	}
	out, err = run(t, "query", "--format", "csv", `select count(*), count(*) filter (where accepted),
		bool_and(config = 'builtin'), count(*) filter (where accepted and task_id not in (select task_id from tasks))
		from synthesis`)
	if err != nil || !strings.HasSuffix(out, itoa(res.Summary.Rows)+","+itoa(len(res.Accepted))+",true,0\n") {
		t.Fatalf("synthesis: %q %v", out, err)
	}
	// The synthesis audit and the stage count the rates alike: a candidate
	// dropped as a duplicate (never validated) is in neither.
	if out, err := run(t, "audit", "synthesis"); err != nil {
		t.Fatalf("audit synthesis: %v\n%s", err, out)
	}
	out, err = run(t, "query", "--format", "csv", `select (select count(*) from synthesis where dropped = 'duplicate') > 0,
		max(value) filter (where metric = 'executable_rate'), max(value) filter (where metric = 'acceptance_rate')
		from audits where kind = 'synthesis' and "group" = 'all'`)
	want := fmt.Sprintf("true,%v,%v\n", res.Summary.ExecutableRate, res.Summary.AcceptanceRate)
	if err != nil || !strings.HasSuffix(out, want) {
		t.Fatalf("audit against the stage's summary: %q %v, want a duplicate and %q", out, err, want)
	}
	rolloutOracle(t, res.Accepted)

	// Text output reports the rates and the cost.
	out, err = run(t, "synthesize", "--count", "3", "--seed", "2", "--without", "judger")
	for _, want := range []string{"builtin/without-judger", "executable rate", "acceptance rate", "cost per accepted task", "snapshot "} {
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("text output lacks %q: %v\n%s", want, err, out)
		}
	}
	for _, bad := range [][]string{{"--without", "checker"}, {"--backend", "gpt"}, {"--count", "0"}} {
		if _, err := run(t, append([]string{"synthesize"}, bad...)...); ExitCode(err) != ExitUsage {
			t.Errorf("synthesize %v: %v", bad, err)
		}
	}
	if _, err := run(t, "synthesize", "--proposer", "openai"); err == nil || !strings.Contains(err.Error(), "endpoint") {
		t.Errorf("openai without an endpoint: %v", err)
	}
}

func TestSynthesizeSnapshotIndependentOfWorkers(t *testing.T) {
	var ids []string
	for _, w := range []string{"1", "4"} {
		t.Setenv("CUALAKE_LAKE", filepath.Join(t.TempDir(), "lake"))
		ids = append(ids, runSynth(t, "--count", "8", "--seed", "4", "--workers", w).Snapshot)
	}
	if ids[0] != ids[1] {
		t.Fatalf("snapshots differ with the number of workers: %v", ids)
	}
}

// commitPool commits the simulator's built-in pool as the lake's tasks.
func commitPool(t *testing.T, dir string) {
	t.Helper()
	commitToLake(t, dir, lake.CommitInfo{Stage: "import", Params: map[string]string{"pool": "builtin"}},
		func(ctx context.Context, tx *lake.Txn) error {
			return lake.ReplaceTable(ctx, tx, schemas.Tasks, simdesk.Pool())
		})
}

// commitToLake commits what write puts in one transaction on main of the
// lake in dir (created if missing): rows a test needs that no stage makes.
func commitToLake(t *testing.T, dir string, info lake.CommitInfo, write func(context.Context, *lake.Txn) error) {
	t.Helper()
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, dir, true)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := l.Begin(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := write(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx, info); err != nil {
		t.Fatal(err)
	}
}

func TestSynthesizeFromTrajectories(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	t.Setenv("CUALAKE_LAKE", dir)
	commitPool(t, dir)
	if _, err := run(t, "synthesize", "--from-trajectories"); err == nil || !strings.Contains(err.Error(), "no trajectories") {
		t.Fatalf("without trajectories: %v", err)
	}
	hard := "settings-multi-001,settings-multi-002,settings-multi-003,files-organize-001,files-organize-002,cross-mail-file-001"
	if out, err := run(t, "rollout", "--policy", "random", "--n", "2", "--max-turns", "10", "--tree-only", "--workers", "2", "--tasks", hard); err != nil {
		t.Fatalf("random rollout: %v\n%s", err, out)
	}
	easy := "files-mkdir-001,files-mkdir-002,files-mkdir-003,settings-toggle-001,settings-toggle-002,settings-choice-001,editor-write-001,editor-write-002"
	if out, err := run(t, "rollout", "--policy", "oracle", "--n", "1", "--tree-only", "--workers", "2", "--tasks", easy); err != nil {
		t.Fatalf("oracle rollout: %v\n%s", err, out)
	}
	res := runSynth(t, "--from-trajectories", "--count", "6", "--workers", "2")
	if res.Summary.Mode != "trajectories" || res.Summary.ByMethod["split"] == 0 || res.Summary.ByMethod["composed"] == 0 {
		t.Fatalf("summary %+v", res.Summary)
	}
	out, err := run(t, "query", "--format", "csv", `select count(*) from tasks
		where source in ('split', 'composed') and len(parent_task_ids) > 0 and split = 'train'`)
	if err != nil || !strings.HasSuffix(out, "\n"+itoa(len(res.Accepted))+"\n") {
		t.Fatalf("new tasks with parents: %q %v", out, err)
	}
	rolloutOracle(t, res.Accepted)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
