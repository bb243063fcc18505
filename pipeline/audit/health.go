package audit

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/cualake/cualake/schemas"
)

// HealthOptions are the thresholds of the health audit.
type HealthOptions struct {
	PMin, PMax    float64 // the frontier / filtering band of EMA pass rates (ScaleCUA: 0.1, 0.9)
	StaleVersions int     // a sample more than this many versions behind is stale (EvoCUA-1.5: 3)
	Ks            []int   // pass@k for these k
	Bins          int     // EMA histogram bins over [0, 1]
}

// DefaultHealth holds the papers' defaults.
var DefaultHealth = HealthOptions{PMin: 0.1, PMax: 0.9, StaleVersions: 3, Ks: []int{1, 2, 4, 8}, Bins: 10}

// Health metrics.
const (
	MetricGroups         = "groups"
	MetricZeroVariance   = "zero_variance_share"
	MetricWastedRollouts = "wasted_rollouts"
	MetricTasksWithEMA   = "tasks_with_ema"
	MetricFrontierSize   = "frontier_size"
	MetricEMAHistogram   = "ema_histogram"
	MetricNeverSampled   = "never_sampled"
	MetricStaleDropped   = "stale_dropped"
	MetricFilteredOut    = "filtered_out"
	MetricPassAtKPrefix  = "pass@"
	// MetricReplayed counts an iteration's AdaPR replays (groups trained
	// from the buffer without a new rollout); its detail has the buffer's
	// live, capped and stale groups after that iteration's selection.
	MetricReplayed = "adapr_replayed"
)

const (
	healthGroupsSQL = `
WITH g AS (
  SELECT iteration, group_id, count(*) AS n, max(reward) = min(reward) AS flat,
         bool_and(outcome = 'success') AS all_success, bool_and(outcome <> 'success') AS no_success
  FROM trajectories GROUP BY iteration, group_id)
SELECT iteration, grouping(iteration) AS total, count(*) AS groups, sum(n) AS rollouts,
  count(*) FILTER (WHERE flat) AS flat, coalesce(sum(n) FILTER (WHERE flat), 0) AS wasted,
  count(*) FILTER (WHERE flat AND all_success) AS flat_success,
  count(*) FILTER (WHERE flat AND no_success) AS flat_failure
FROM g GROUP BY GROUPING SETS ((iteration), ()) ORDER BY total, iteration`
	healthNeverSQL = `
WITH seen AS (
  SELECT task_id, min(iteration) AS first FROM (
    SELECT task_id, iteration FROM batches UNION ALL SELECT task_id, iteration FROM trajectories)
  GROUP BY task_id),
its AS (
  SELECT DISTINCT iteration FROM (
    SELECT iteration FROM batches UNION ALL SELECT iteration FROM trajectories UNION ALL SELECT iteration FROM pass_rates))
SELECT its.iteration, count(t.task_id) FILTER (WHERE s.first IS NULL OR s.first > its.iteration) AS never
FROM its CROSS JOIN tasks t LEFT JOIN seen s ON s.task_id = t.task_id
GROUP BY its.iteration ORDER BY its.iteration`
	healthNeverAllSQL = `
SELECT t.task_id FROM tasks t
WHERE t.task_id NOT IN (SELECT task_id FROM batches UNION SELECT task_id FROM trajectories)
ORDER BY t.task_id`
	healthPassAtKSQL = `
SELECT iteration, task_id, count(*) AS n, count(*) FILTER (WHERE outcome = 'success') AS c
FROM trajectories GROUP BY iteration, task_id ORDER BY iteration, task_id`
)

// PassAtK is the unbiased pass@k estimator 1 - C(n-c, k) / C(n, k) for c
// successes in n samples (Chen et al. 2021), computed as a running product
// so large n does not overflow. It needs n >= k.
func PassAtK(n, c, k int) float64 {
	if n-c < k {
		return 1
	}
	p := 1.0
	for i := 0; i < k; i++ {
		p *= float64(n-c-i) / float64(n-i)
	}
	return 1 - p
}

// Health audits the sampler and the data per iteration: the share of
// zero-variance rollout groups (all rewards equal: no GRPO signal, wasted
// rollouts), frontier size (tasks whose EMA lies in [PMin, PMax]), the EMA
// histogram, tasks never sampled (in no batch or trajectory up to that
// iteration), stale samples (policy_version more than StaleVersions behind
// the newest version seen up to that iteration), pass@k per task then
// averaged (tasks with fewer than k rollouts in the iteration are left
// out), and policy-dependent filtering (tasks whose EMA left [PMin, PMax]
// since their previous pass_rates row).
func Health(ctx context.Context, in Input, opt HealthOptions) (*Result, error) {
	if opt.PMin < 0 || opt.PMax > 1 || opt.PMin >= opt.PMax {
		return nil, fmt.Errorf("audit health: want 0 <= p_min < p_max <= 1, got %v, %v", opt.PMin, opt.PMax)
	}
	if opt.StaleVersions < 0 || opt.Bins < 1 || opt.Bins > 100 {
		return nil, fmt.Errorf("audit health: stale versions %d and bins %d out of range", opt.StaleVersions, opt.Bins)
	}
	s, err := openSession(ctx, in, KindHealth)
	if err != nil {
		return nil, err
	}
	defer s.close()
	band := func(col string) string { return fmt.Sprintf("%s >= %v AND %s <= %v", col, opt.PMin, col, opt.PMax) }
	frontierSQL := fmt.Sprintf(`SELECT iteration, count(*) AS tasks, count(ema) AS with_ema,
  count(*) FILTER (WHERE %s) AS frontier FROM pass_rates GROUP BY iteration ORDER BY iteration`, band("ema"))
	histSQL := fmt.Sprintf(`SELECT iteration, least(CAST(floor(ema * %d) AS INTEGER), %d) AS bin, count(*) AS n
FROM pass_rates WHERE ema IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2`, opt.Bins, opt.Bins-1)
	staleSQL := fmt.Sprintf(`
WITH per AS (SELECT iteration, max(policy_version) AS newest_here FROM trajectories GROUP BY iteration),
newest AS (SELECT iteration, max(newest_here) OVER (ORDER BY iteration ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS newest FROM per)
SELECT t.iteration, any_value(n.newest) AS newest, count(*) AS n, count(*) FILTER (WHERE t.policy_version < n.newest - %d) AS stale
FROM trajectories t JOIN newest n USING (iteration) GROUP BY t.iteration ORDER BY t.iteration`, opt.StaleVersions)
	filterSQL := fmt.Sprintf(`
SELECT iteration, task_id, ema, prev FROM (
  SELECT iteration, task_id, ema, lag(ema) OVER (PARTITION BY task_id ORDER BY iteration) AS prev FROM pass_rates)
WHERE prev IS NOT NULL AND ema IS NOT NULL AND %s AND NOT (%s)
ORDER BY iteration, task_id`, band("prev"), band("ema"))

	replaySQL := `SELECT iteration, count(*) FILTER (WHERE replayed) AS replayed, count(*) FILTER (WHERE state = 'live') AS live,
  count(*) FILTER (WHERE state = 'capped') AS capped, count(*) FILTER (WHERE state = 'stale') AS stale
FROM replay_buffer GROUP BY iteration ORDER BY iteration`
	queries := []struct{ what, sql string }{
		{"rollout groups", healthGroupsSQL}, {"frontier", frontierSQL}, {"EMA histogram", histSQL},
		{"never sampled", healthNeverSQL}, {"never sampled (all)", healthNeverAllSQL}, {"stale samples", staleSQL},
		{"pass@k", healthPassAtKSQL}, {"filtering", filterSQL}, {"adapr replays", replaySQL},
	}
	res := make([][]row, len(queries))
	for i, q := range queries {
		if res[i], err = s.rows(ctx, q.what, q.sql); err != nil {
			return nil, err
		}
	}
	groups, frontier, hist, never, neverAll, stale, passk, filtered, replays := res[0], res[1], res[2], res[3], res[4], res[5], res[6], res[7], res[8]

	params := map[string]any{"p_min": opt.PMin, "p_max": opt.PMax, "stale_versions": opt.StaleVersions, "ks": opt.Ks, "bins": opt.Bins,
		"zero_variance": "all rewards of a group equal", "never_sampled": "in no batch and no trajectory up to the iteration",
		"pass_at_k": "1 - C(n-c,k)/C(n,k) per task with n >= k, then mean"}
	b := newBuilder(KindHealth, params)
	iter := func(r row) string { return strconv.FormatInt(r.int("iteration"), 10) }
	last := ""
	lastIt := int64(math.MinInt64)
	seenIt := func(r row) {
		if it := r.int("iteration"); it > lastIt {
			lastIt, last = it, iter(r)
		}
	}

	for _, r := range groups {
		g := GroupAll
		if r.int("total") == 0 {
			g = iter(r)
			seenIt(r)
		}
		n, flat, rollouts, wasted := r.int("groups"), r.int("flat"), r.int("rollouts"), r.int("wasted")
		b.add(MetricGroups, g, float64(n), n, nil)
		b.rate(MetricZeroVariance, g, flat, n, map[string]int64{"all_success": r.int("flat_success"), "all_failure": r.int("flat_failure"),
			"other_equal": flat - r.int("flat_success") - r.int("flat_failure"), "wasted_rollouts": wasted, "groups": n})
		b.rate(MetricWastedRollouts, g, wasted, rollouts, nil)
	}
	for _, r := range frontier {
		seenIt(r)
		b.add(MetricTasksWithEMA, iter(r), float64(r.int("with_ema")), r.int("with_ema"), nil)
		b.add(MetricFrontierSize, iter(r), float64(r.int("frontier")), r.int("frontier"), map[string]any{"tasks": r.int("tasks")})
	}
	type bin struct {
		Lo float64 `json:"lo"`
		Hi float64 `json:"hi"`
		N  int64   `json:"n"`
	}
	hists := map[int64][]bin{}
	var histOrder []int64
	for _, r := range hist {
		it := r.int("iteration")
		if hists[it] == nil {
			histOrder = append(histOrder, it)
			hists[it] = make([]bin, opt.Bins)
			for k := range hists[it] {
				hists[it][k] = bin{Lo: float64(k) / float64(opt.Bins), Hi: float64(k+1) / float64(opt.Bins)}
			}
		}
		if k := r.int("bin"); k >= 0 && k < int64(opt.Bins) {
			hists[it][k].N = r.int("n")
		}
	}
	for _, it := range histOrder {
		total := int64(0)
		for _, x := range hists[it] {
			total += x.N
		}
		b.add(MetricEMAHistogram, strconv.FormatInt(it, 10), float64(total), total, map[string]any{"bins": hists[it]})
	}
	for _, r := range never {
		seenIt(r)
		b.add(MetricNeverSampled, iter(r), float64(r.int("never")), r.int("never"), nil)
	}
	var neverIDs []string
	for _, r := range neverAll {
		neverIDs = append(neverIDs, r.str("task_id"))
	}
	b.add(MetricNeverSampled, GroupAll, float64(len(neverIDs)), int64(len(neverIDs)), map[string]any{"tasks": listed(neverIDs), "total": len(neverIDs)})
	var staleAll, nAll int64
	for _, r := range stale {
		seenIt(r)
		staleAll += r.int("stale")
		nAll += r.int("n")
		b.rate(MetricStaleDropped, iter(r), r.int("stale"), r.int("n"), map[string]int64{"newest_version": r.int("newest")})
	}
	b.rate(MetricStaleDropped, GroupAll, staleAll, nAll, nil)
	for _, r := range replays {
		n := r.int("replayed")
		b.add(MetricReplayed, iter(r), float64(n), n, map[string]int64{"live": r.int("live"), "capped": r.int("capped"), "stale": r.int("stale")})
	}

	type acc struct {
		sum float64
		n   int64
	}
	pk := map[string]map[int]*acc{}
	var pkOrder []string
	for _, r := range passk {
		g := iter(r)
		if pk[g] == nil {
			pk[g] = map[int]*acc{}
			pkOrder = append(pkOrder, g)
		}
		n, c := int(r.int("n")), int(r.int("c"))
		for _, k := range opt.Ks {
			if k < 1 || n < k {
				continue
			}
			if pk[g][k] == nil {
				pk[g][k] = &acc{}
			}
			pk[g][k].sum += PassAtK(n, c, k)
			pk[g][k].n++
		}
	}
	for _, g := range pkOrder {
		for _, k := range opt.Ks {
			if a := pk[g][k]; a != nil {
				b.add(MetricPassAtKPrefix+strconv.Itoa(k), g, a.sum/float64(a.n), a.n, nil)
			}
		}
	}

	type moved struct {
		Task string  `json:"task"`
		From float64 `json:"from"`
		To   float64 `json:"to"`
	}
	type filt struct {
		easy, hard int64
		tasks      []moved
	}
	fl := map[string]*filt{}
	var flOrder []string
	for _, r := range filtered {
		g := iter(r)
		if fl[g] == nil {
			fl[g] = &filt{}
			flOrder = append(flOrder, g)
		}
		to := r.float("ema")
		if to > opt.PMax {
			fl[g].easy++
		} else {
			fl[g].hard++
		}
		fl[g].tasks = append(fl[g].tasks, moved{r.str("task_id"), r.float("prev"), to})
	}
	// Iterations with pass rates but no task leaving the band report 0.
	for _, r := range frontier {
		if g := iter(r); fl[g] == nil {
			fl[g] = &filt{}
			flOrder = append(flOrder, g)
		}
	}
	sort.SliceStable(flOrder, func(a, c int) bool { x, _ := strconv.Atoi(flOrder[a]); y, _ := strconv.Atoi(flOrder[c]); return x < y })
	for _, g := range flOrder {
		f := fl[g]
		n := f.easy + f.hard
		b.add(MetricFilteredOut, g, float64(n), n, map[string]any{"too_easy": f.easy, "too_hard": f.hard, "tasks": listed(f.tasks)})
	}
	return b.result(params, func(r schemas.Audit) bool { return r.Group == GroupAll || r.Group == last })
}
