package experiment

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"time"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/loop"
	"github.com/cualake/cualake/query"
	"github.com/cualake/cualake/schemas"
)

// BranchSQL reads one experiment branch's per-iteration numbers; run it
// with `cualake query --branch exp/<experiment>/<variant>/s<seed>` to check
// a row of the experiments table. Iteration 0 is the prefix: held-out
// success after the warm start, the initial pass, the warm-start SFT (whose
// checkpoint has iteration -1).
var BranchSQL = `WITH its AS (SELECT DISTINCT iteration FROM trajectories WHERE source IN ('rollout', 'eval')),
tr AS (SELECT iteration, avg(CASE WHEN outcome = 'success' THEN 1.0 ELSE 0.0 END) AS train_success, avg(reward) AS mean_reward
       FROM trajectories WHERE source = 'rollout' GROUP BY iteration),
ev AS (SELECT iteration, avg(CASE WHEN outcome = 'success' THEN 1.0 ELSE 0.0 END) AS heldout_success
       FROM trajectories WHERE source = 'eval' GROUP BY iteration),
g AS (SELECT iteration, group_id, count(*) AS n, min(reward) AS lo, max(reward) AS hi
      FROM trajectories WHERE source = 'rollout' GROUP BY iteration, group_id),
zv AS (SELECT iteration, avg(CASE WHEN lo = hi THEN 1.0 ELSE 0.0 END) AS zero_variance_share FROM g WHERE n >= 2 GROUP BY iteration),
tm AS (SELECT greatest(c.iteration, 0) AS iteration, CAST(sum(m.items) AS BIGINT) AS items, CAST(sum(m.tokens) AS BIGINT) AS tokens
       FROM train_metrics m JOIN checkpoints c ON c.version = m.version GROUP BY 1),
sy AS (SELECT 0 AS iteration, avg(CASE WHEN executable THEN 1.0 ELSE 0.0 END) AS executable_rate
       FROM synthesis WHERE ` + schemas.SynthesisValidatedSQL + ` HAVING count(*) > 0),
tg AS (SELECT c.iteration, CAST(count(*) FILTER (WHERE g.kept AND g.channel = 'adapr') AS BIGINT) AS replayed_groups,
              avg(g.lag) FILTER (WHERE g.kept) AS policy_lag
       FROM train_groups g JOIN checkpoints c ON c.version = g.version GROUP BY 1)
SELECT its.iteration, tr.train_success, ev.heldout_success, tr.mean_reward, zv.zero_variance_share,
       coalesce(tm.items, 0) AS items, coalesce(tm.tokens, 0) AS tokens, sy.executable_rate, tg.replayed_groups, tg.policy_lag
FROM its LEFT JOIN tr ON tr.iteration = its.iteration LEFT JOIN ev ON ev.iteration = its.iteration
  LEFT JOIN zv ON zv.iteration = its.iteration LEFT JOIN tm ON tm.iteration = its.iteration
  LEFT JOIN sy ON sy.iteration = its.iteration LEFT JOIN tg ON tg.iteration = its.iteration
ORDER BY its.iteration`

// Collect reads every arm's rows from its branch head: BranchSQL, and the
// train and rollout seconds of each iteration from the commit times of the
// steps' snapshots (iteration 0: the warm-start SFT and the initial pass,
// on the prefix branch).
func Collect(ctx context.Context, l *lake.Lake, p *Plan) ([]schemas.ExperimentResult, error) {
	tags, err := l.Tags(ctx)
	if err != nil {
		return nil, err
	}
	var out []schemas.ExperimentResult
	for _, a := range p.Arms {
		rows, err := collectArm(ctx, l, p, a, tags)
		if err != nil {
			return nil, fmt.Errorf("results of %s: %w", a.Branch, err)
		}
		out = append(out, rows...)
	}
	schemas.ExperimentResults.Sort(out)
	return out, nil
}

func collectArm(ctx context.Context, l *lake.Lake, p *Plan, a *Arm, tags map[string]string) ([]schemas.ExperimentResult, error) {
	b, err := l.OnBranch(a.Branch)
	if err != nil {
		return nil, err
	}
	m, err := b.At(ctx, "")
	if err != nil {
		return nil, err
	}
	res, err := query.QueryAt(ctx, b, m, BranchSQL)
	if err != nil {
		return nil, err
	}
	run := loop.RunID(a.Config)
	var out []schemas.ExperimentResult
	for _, r := range res.Rows {
		it, ok := toInt(r[0])
		if !ok {
			return nil, fmt.Errorf("iteration %v is not a number", r[0])
		}
		row := schemas.ExperimentResult{Experiment: p.Spec.Name, Variant: a.Variant, Seed: a.Seed, Iteration: int32(it),
			Branch: a.Branch, Snapshot: m.ID, TrainSuccess: toFloat(r[1]), HeldoutSuccess: toFloat(r[2]), MeanReward: toFloat(r[3]),
			ZeroVarianceShare: toFloat(r[4])}
		row.Items, _ = toInt(r[5])
		row.Tokens, _ = toInt(r[6])
		row.ExecutableRate = toFloat(r[7])
		if n, ok := toInt(r[8]); ok {
			row.ReplayedGroups = &n
		}
		row.PolicyLag = toFloat(r[9])
		trainTag, rollTag := loop.DoneTag(a.Branch, run, fmt.Sprintf("it%02d-train", it)), loop.DoneTag(a.Branch, run, fmt.Sprintf("it%02d-rollout", it))
		if it == 0 {
			trainTag, rollTag = loop.DoneTag(a.Prefix.Branch, a.Prefix.RunID, "warm-sft"), loop.DoneTag(a.Prefix.Branch, a.Prefix.RunID, PrefixEnd)
		}
		if row.TrainSeconds, err = stepSeconds(ctx, l, tags[trainTag], tags[trainTag+loop.StartedSuffix]); err != nil {
			return nil, err
		}
		if row.RolloutSeconds, err = stepSeconds(ctx, l, tags[rollTag], tags[rollTag+loop.StartedSuffix]); err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, nil
}

// stepSeconds is a step's wall time: from its transaction's start to its
// commit (the manifest's started_at and committed_at), so also for the
// async loop's steps that ran at once. Manifests without started_at
// (before cualake/0.1.2) are timed from the commit of the snapshot the
// step started from (its start tag; else its parent), which overstates a
// step whose start snapshot is an earlier commit of the same content (a
// branch deleted and run again). Nil when the step has no snapshot or
// the lake no commit times.
func stepSeconds(ctx context.Context, l *lake.Lake, id, started string) (*float64, error) {
	if id == "" {
		return nil, nil
	}
	m, err := l.Snapshot(ctx, id)
	if err != nil {
		return nil, err
	}
	t1, err := time.Parse(time.RFC3339, m.CommittedAt)
	if err != nil {
		return nil, nil // an imported snapshot without commit times
	}
	if t0, err := time.Parse(time.RFC3339, m.StartedAt); err == nil {
		s := t1.Sub(t0).Seconds()
		return &s, nil
	}
	if m.Parent == "" {
		return nil, nil
	}
	from := m.Parent
	if started != "" {
		from = started
	}
	parent, err := l.Snapshot(ctx, from)
	if err != nil {
		return nil, err
	}
	t0, err := time.Parse(time.RFC3339, parent.CommittedAt)
	if err != nil {
		return nil, nil
	}
	s := t1.Sub(t0).Seconds()
	return &s, nil
}

// commitResults replaces the experiment's rows (at p's seeds) of the experiments table on
// l's branch; rows of other experiments stay. Two experiments finishing in
// one lake at once both replace the table, so the lake refuses the later
// commit (ErrConflict); the merge is then redone on the new head, since
// each run only owns its own rows.
func commitResults(ctx context.Context, l *lake.Lake, p *Plan, rows []schemas.ExperimentResult) (*lake.Manifest, error) {
	const attempts = 8
	for i := 1; ; i++ {
		m, err := mergeResults(ctx, l, p, rows)
		if err == nil || !errors.Is(err, lake.ErrConflict) || i == attempts {
			return m, err
		}
	}
}

// mergeResults is one attempt of commitResults.
func mergeResults(ctx context.Context, l *lake.Lake, p *Plan, rows []schemas.ExperimentResult) (*lake.Manifest, error) {
	tx, err := l.Begin(ctx, "")
	if err != nil {
		return nil, err
	}
	old, err := lake.ReadTable(ctx, l, tx.Base(), schemas.ExperimentResults)
	if err != nil {
		return nil, err
	}
	all := append([]schemas.ExperimentResult{}, rows...)
	for _, r := range old {
		// Rows of other experiments stay, and of this one's other seeds
		// (a run of some seeds: Plan.OnlySeeds).
		if r.Experiment != p.Spec.Name || !slices.Contains(p.Spec.Seeds, r.Seed) {
			all = append(all, r)
		}
	}
	schemas.ExperimentResults.Sort(all)
	if err := lake.ReplaceTable(ctx, tx, schemas.ExperimentResults, all); err != nil {
		return nil, err
	}
	heads := map[string]string{}
	for _, r := range rows {
		heads[r.Branch] = r.Snapshot
	}
	branches := make([]string, 0, len(heads))
	for b := range heads {
		branches = append(branches, b)
	}
	sort.Strings(branches)
	inputs := make([]string, len(branches))
	for i, b := range branches {
		inputs[i] = heads[b]
	}
	return tx.Commit(ctx, lake.CommitInfo{Stage: "experiment", Inputs: inputs,
		Params:  map[string]any{"experiment": p.Spec.Name, "branches": heads},
		Message: fmt.Sprintf("experiment %s: %d rows from %d branches", p.Spec.Name, len(rows), len(branches))})
}

func toFloat(v any) *float64 {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case float32:
		f = float64(x)
	case int64:
		f = float64(x)
	case int32:
		f = float64(x)
	default:
		return nil
	}
	return &f
}

func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case int16:
		return int64(x), true
	case int8:
		return int64(x), true
	case *big.Int:
		return x.Int64(), true
	}
	return 0, false
}
