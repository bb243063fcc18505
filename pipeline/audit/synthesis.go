package audit

import (
	"context"
	"fmt"

	"github.com/cualake/cualake/schemas"
)

// Synthesis metrics.
const (
	MetricCandidates        = "candidates"
	MetricRows              = "rows"
	MetricExecutableRate    = "executable_rate"
	MetricAcceptanceRate    = "acceptance_rate"
	MetricCallsPerAccepted  = "calls_per_accepted"
	MetricTokensPerAccepted = "tokens_per_accepted"
)

var synthesisRoundsSQL = `
SELECT coalesce(nullif(config, ''), 'default') AS config, round,
  count(*) AS rows,
  count(*) FILTER (WHERE ` + schemas.SynthesisValidatedSQL + `) AS judged,
  count(*) FILTER (WHERE executable AND ` + schemas.SynthesisValidatedSQL + `) AS executable,
  count(*) FILTER (WHERE accepted) AS accepted,
  coalesce(sum(calls), 0) AS calls, coalesce(sum(tokens), 0) AS tokens
FROM synthesis GROUP BY 1, 2 ORDER BY 1, 2`

var synthesisConfigSQL = `
WITH s AS (SELECT coalesce(nullif(config, ''), 'default') AS cfg, * FROM synthesis)
SELECT cfg AS config, grouping(cfg) AS total,
  count(*) AS rows,
  count(DISTINCT candidate_id) AS candidates,
  count(*) FILTER (WHERE ` + schemas.SynthesisValidatedSQL + `) AS judged,
  count(DISTINCT candidate_id) FILTER (WHERE ` + schemas.SynthesisValidatedSQL + `) AS judged_candidates,
  count(DISTINCT candidate_id) FILTER (WHERE accepted) AS accepted,
  count(*) FILTER (WHERE executable AND ` + schemas.SynthesisValidatedSQL + `) AS executable,
  coalesce(sum(calls), 0) AS calls, coalesce(sum(tokens), 0) AS tokens,
  count(*) FILTER (WHERE NOT rule_valid) AS rule_invalid,
  count(*) FILTER (WHERE judger_verdict = 'reject') AS judger_reject,
  count(*) FILTER (WHERE NOT checker_reachable) AS checker_unreachable,
  count(*) FILTER (WHERE NOT checker_judge_correct) AS checker_judge_wrong
FROM s GROUP BY GROUPING SETS ((cfg), ()) ORDER BY total, config`

const synthesisDroppedSQL = `
SELECT coalesce(nullif(config, ''), 'default') AS config, dropped, count(DISTINCT candidate_id) AS n
FROM synthesis WHERE dropped <> '' GROUP BY 1, 2 ORDER BY 1, 2`

// Synthesis audits the synthesize stage's records per role configuration
// (synthesis.config) and round: the executable rate (share of
// candidate-rounds whose judge ran and behaved in the dry run), the
// acceptance rate (accepted candidates over candidates; per round, accepted
// rows over that round's rows) and the cost per accepted task (all calls
// and tokens spent, accepted or not, over accepted candidates; per round,
// cumulative up to that round: the cost if the loop had stopped there).
// The breakdown of each configuration's acceptance rate is the rejection
// funnel: rule-invalid, judger rejections, checker failures, drop reasons.
//
// Both rates leave out the rows no role validated (candidates dropped as
// duplicates before the loop; schemas.SynthesisValidatedSQL), as the
// stage's own summary does: such a row is neither executable nor not. The
// funnel still counts them under dropped. A candidate found to duplicate
// an accepted task only after validation counts like any other.
func Synthesis(ctx context.Context, in Input) (*Result, error) {
	s, err := openSession(ctx, in, KindSynthesis)
	if err != nil {
		return nil, err
	}
	defer s.close()
	rounds, err := s.rows(ctx, "per configuration and round", synthesisRoundsSQL)
	if err != nil {
		return nil, err
	}
	configs, err := s.rows(ctx, "per configuration", synthesisConfigSQL)
	if err != nil {
		return nil, err
	}
	dropped, err := s.rows(ctx, "drop reasons", synthesisDroppedSQL)
	if err != nil {
		return nil, err
	}
	params := map[string]any{"executable_rate": "executable rows / rows, duplicates aside", "acceptance_rate": "accepted candidates / candidates, duplicates aside",
		"cost_per_accepted": "all calls (tokens) / accepted candidates; per round cumulative"}
	b := newBuilder(KindSynthesis, params)

	drops := map[string]map[string]int64{GroupAll: {}}
	for _, r := range dropped {
		c := r.str("config")
		if drops[c] == nil {
			drops[c] = map[string]int64{}
		}
		drops[c][r.str("dropped")] += r.int("n")
		drops[GroupAll][r.str("dropped")] += r.int("n")
	}
	for _, r := range configs {
		g := r.str("config") + "/" + GroupAll
		if r.int("total") == 1 {
			g = GroupAll
		}
		key := r.str("config")
		if g == GroupAll {
			key = GroupAll
		}
		cand, acc, rows := r.int("candidates"), r.int("accepted"), r.int("rows")
		b.add(MetricCandidates, g, float64(cand), cand, nil)
		b.add(MetricRows, g, float64(rows), rows, nil)
		b.rate(MetricExecutableRate, g, r.int("executable"), r.int("judged"), nil)
		funnel := map[string]any{"rule_invalid": r.int("rule_invalid"), "judger_reject": r.int("judger_reject"),
			"checker_unreachable": r.int("checker_unreachable"), "checker_judge_wrong": r.int("checker_judge_wrong"),
			"dropped": drops[key]}
		if funnel["dropped"] == nil {
			funnel["dropped"] = map[string]int64{}
		}
		den := r.int("judged_candidates")
		if den == 0 {
			den = cand // every candidate a duplicate: 0 accepted, and the funnel still says why
		}
		b.rate(MetricAcceptanceRate, g, acc, den, funnel)
		if acc > 0 {
			b.add(MetricCallsPerAccepted, g, r.float("calls")/float64(acc), r.int("calls"), nil)
			b.add(MetricTokensPerAccepted, g, r.float("tokens")/float64(acc), r.int("tokens"), nil)
		}
	}
	var cumCalls, cumTokens, cumAcc int64
	prev := ""
	for _, r := range rounds {
		c := r.str("config")
		if c != prev {
			cumCalls, cumTokens, cumAcc, prev = 0, 0, 0, c
		}
		round := r.int("round")
		g := fmt.Sprintf("%s/round-%d", c, round)
		dims := map[string]any{"config": c, "round": round}
		rows, acc := r.int("rows"), r.int("accepted")
		cumCalls += r.int("calls")
		cumTokens += r.int("tokens")
		cumAcc += acc
		b.add(MetricRows, g, float64(rows), rows, dims)
		b.rate(MetricExecutableRate, g, r.int("executable"), r.int("judged"), dims)
		b.rate(MetricAcceptanceRate, g, acc, r.int("judged"), dims)
		if cumAcc > 0 {
			b.add(MetricCallsPerAccepted, g, float64(cumCalls)/float64(cumAcc), cumCalls, dims)
			b.add(MetricTokensPerAccepted, g, float64(cumTokens)/float64(cumAcc), cumTokens, dims)
		}
	}
	return b.result(params, func(r schemas.Audit) bool { return isAllGroup(r) && r.Metric != MetricRows })
}
