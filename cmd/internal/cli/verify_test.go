package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docsSQL returns the SQL block of docs/<file> that starts with marker, so
// the documented query is the tested one.
func docsSQL(t *testing.T, file, marker string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", file))
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range strings.Split(string(b), "```sql\n")[1:] {
		sql, _, _ := strings.Cut(block, "```")
		if strings.HasPrefix(sql, marker) {
			return sql
		}
	}
	t.Fatalf("docs/%s has no query marked %q", file, marker)
	return ""
}

func csvRows(t *testing.T, out string) []map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	head := strings.Split(lines[0], ",")
	var rows []map[string]string
	for _, l := range lines[1:] {
		cells := strings.Split(l, ",")
		if len(cells) != len(head) {
			t.Fatalf("csv line %q for header %q", l, lines[0])
		}
		r := map[string]string{}
		for i, h := range head {
			r[h] = cells[i]
		}
		rows = append(rows, r)
	}
	return rows
}

func TestRolloutRewardBothCommitsVerifications(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	t.Setenv("CUALAKE_LAKE", dir)
	t.Setenv(envVerifyStrategy, "builtin,passive")
	out, err := run(t, "rollout", "--policy", "random", "--n", "2", "--limit-tasks", "5", "--max-turns", "6", "--reward", "both", "--seed", "3", "--json")
	if err != nil {
		t.Fatalf("rollout: %v\n%s", err, out)
	}
	if out, err = run(t, "rollout", "--policy", "oracle", "--n", "1", "--limit-tasks", "4", "--reward", "both", "--tree-only"); err != nil {
		t.Fatalf("oracle rollout: %v\n%s", err, out)
	}
	// Every finished trajectory has one row per strategy; with "both" the
	// executable judge stays the reward.
	out, err = run(t, "query", "--format", "csv", `select
		(select count(*) from trajectories where outcome <> 'error') as trajs,
		(select count(*) from verifications where strategy = 'builtin') as builtin,
		(select count(*) from verifications where strategy = 'passive') as passive,
		(select count(*) from trajectories t where outcome <> 'error' and
			(select count(distinct strategy) from verifications v where v.trajectory_id = t.trajectory_id) <> 2) as missing,
		(select count(*) from trajectories where outcome = 'success' and reward <> 1) as changed,
		(select count(*) from verifications v join trajectories t using (trajectory_id)
			where v.executable_outcome <> case when t.outcome = 'success' then 'success' else 'failure' end) as wrong_truth,
		(select count(*) from verifications where probe_used) > 0 as probed,
		(select bool_and(h in (select hash from blobs)) from (select unnest(evidence) as h from verifications)) as evidence_stored`)
	if err != nil {
		t.Fatalf("query: %v %s", err, out)
	}
	r := csvRows(t, out)[0]
	if r["trajs"] != "14" || r["builtin"] != "14" || r["passive"] != "14" || r["missing"] != "0" || r["changed"] != "0" ||
		r["wrong_truth"] != "0" || r["probed"] != "true" || r["evidence_stored"] != "true" {
		t.Fatalf("verifications: %v", r)
	}
	// --reward verifier: the first strategy's row gives the reward.
	t.Setenv(envVerifyStrategy, "passive")
	if out, err = run(t, "rollout", "--policy", "oracle", "--n", "1", "--limit-tasks", "2", "--reward", "verifier", "--tree-only"); err != nil {
		t.Fatalf("verifier rollout: %v\n%s", err, out)
	}
	out, err = run(t, "query", "--format", "csv", `select count(*) as n, bool_and(t.reward = v.reward) as same from trajectories t
		join verifications v using (trajectory_id) where t.iteration = 2`)
	if err != nil || !strings.HasSuffix(out, "2,true\n") {
		t.Fatalf("verifier reward: %q %v", out, err)
	}
	t.Setenv(envVerifyStrategy, "nope")
	if _, err := run(t, "rollout", "--policy", "oracle", "--n", "1", "--limit-tasks", "1", "--reward", "both"); ExitCode(err) != ExitUsage {
		t.Fatalf("unknown strategy: %v", err)
	}
	t.Setenv(envVerifyStrategy, "trained")
	if _, err := run(t, "rollout", "--policy", "oracle", "--n", "1", "--limit-tasks", "1", "--reward", "both"); err == nil || !strings.Contains(err.Error(), "verify --train") {
		t.Fatalf("trained without training: %v", err)
	}
}

func TestVerifyCommandTrainAndQuery(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	t.Setenv("CUALAKE_LAKE", dir)
	if out, err := run(t, "rollout", "--policy", "random", "--n", "2", "--limit-tasks", "6", "--max-turns", "5", "--seed", "9", "--tree-only"); err != nil {
		t.Fatalf("rollout: %v\n%s", err, out)
	}
	if out, err := run(t, "rollout", "--policy", "oracle", "--n", "1", "--limit-tasks", "6"); err != nil {
		t.Fatalf("rollout: %v\n%s", err, out)
	}
	out, err := run(t, "verify", "--strategy", "passive,builtin", "--json")
	if err != nil {
		t.Fatalf("verify: %v\n%s", err, out)
	}
	var res struct {
		Snapshot string
		Summary  struct{ Rows, Verified, Existing int }
		Metrics  []struct {
			Strategy, Domain string
			N                int
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if res.Summary.Rows != 36 || res.Summary.Verified != 18 || res.Summary.Existing != 0 || len(res.Metrics) == 0 {
		t.Fatalf("summary %+v", res.Summary)
	}
	// One attempt per state: a re-run adds nothing and commits nothing.
	out, err = run(t, "verify", "--strategy", "builtin", "--json")
	if err != nil || !strings.Contains(out, `"existing": 18`) || !strings.Contains(out, res.Snapshot) {
		t.Fatalf("re-run: %v\n%s", err, out)
	}
	// Learn a strategy (briefly), then verify with it.
	out, err = run(t, "verify", "--train", "--iterations", "2", "--batch", "16", "--validation", "20", "--eval", "20", "--seed", "3", "--workers", "2", "--json")
	if err != nil {
		t.Fatalf("train: %v\n%s", err, out)
	}
	var tr struct {
		StrategyBlob string `json:"strategy_blob"`
		Report       struct{ Attempts int }
		Metrics      []struct{ Strategy, Domain string }
	}
	if err := json.Unmarshal([]byte(out), &tr); err != nil || tr.StrategyBlob == "" || tr.Report.Attempts != 32 || len(tr.Metrics) == 0 {
		t.Fatalf("train output: %v\n%.500s", err, out)
	}
	out, err = run(t, "query", "--format", "csv", "select mime from blobs where hash = '"+tr.StrategyBlob+"'")
	if err != nil || !strings.Contains(out, "application/vnd.cualake.verify-strategy+json") {
		t.Fatalf("strategy blob: %q %v", out, err)
	}
	if out, err = run(t, "verify", "--strategy", "trained", "--tree-only"); err != nil || !strings.Contains(out, "18 trajectories") {
		t.Fatalf("verify trained: %v\n%s", err, out)
	}
	// The documented query: per strategy and domain, and overall.
	q := filepath.Join(t.TempDir(), "q.sql")
	if err := os.WriteFile(q, []byte(docsSQL(t, "verify.md", "-- verify: per-domain metrics")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, "query", "--format", "csv", "--file", q)
	if err != nil {
		t.Fatalf("docs query: %v\n%s", err, out)
	}
	if !strings.HasPrefix(out, "strategy,domain,n,agreement,fp_rate,fn_rate,unresolved_rate,probe_rate,probe_steps,probe_tokens,reward\n") {
		t.Fatalf("docs query header: %q", out)
	}
	all := map[string]map[string]string{}
	domains := 0
	for _, r := range csvRows(t, out) {
		if r["domain"] == "all" {
			all[r["strategy"]] = r
		} else {
			domains++
		}
	}
	for _, s := range []string{"passive", "builtin", "trained"} {
		if all[s]["n"] != "18" {
			t.Errorf("%s overall: %v", s, all[s])
		}
	}
	if all["passive"]["probe_rate"] != "0" || all["builtin"]["probe_rate"] == "0" || domains < 3 {
		t.Errorf("probe rates %v / %v, %d domain rows", all["passive"], all["builtin"], domains)
	}
	if _, err := run(t, "verify", "--strategy", "sometimes"); ExitCode(err) != ExitUsage {
		t.Fatalf("unknown strategy: %v", err)
	}
	if _, err := run(t, "verify", "--strategy", "openai"); ExitCode(err) != ExitUsage {
		t.Fatalf("openai without an endpoint: %v", err)
	}
}
