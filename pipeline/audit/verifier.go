package audit

import (
	"context"
	"sort"

	"github.com/cualake/cualake/schemas"
)

// The VeriCUA terminal reward schedule (VeriCUA table 9): a correct verdict
// is worth more without probing, a wrong one costs less after probing, an
// unresolved (uncertain) verdict costs most.
const (
	RewardCorrect      = 1.0
	RewardCorrectProbe = 0.7
	RewardWrong        = -0.7
	RewardWrongProbe   = -0.3
	RewardUnresolved   = -1.0
)

// Verifier metrics (besides n, agreement, fp, fn and macro_agreement).
const (
	MetricUnresolved      = "unresolved"
	MetricProbeRate       = "probe_rate"
	MetricProbeStepsMean  = "probe_steps_mean"
	MetricProbeTokensMean = "probe_tokens_mean"
	MetricProbeTokens     = "probe_tokens"
	MetricScheduleReward  = "schedule_reward_mean"
	MetricPareto          = "pareto"
	MetricNoGroundTruth   = "no_ground_truth"
)

const verifierSQL = `
WITH v AS (
  SELECT strategy, coalesce(nullif(domain, ''), 'unknown') AS domain,
         CASE WHEN executable_outcome IN ('success', 'failure') THEN verdict ELSE 'uncertain' END AS verdict,
         executable_outcome AS truth, probe_used, probe_steps, probe_tokens
  FROM verifications)
SELECT strategy, domain, grouping(domain) AS total,
  count(*) AS n,
  count(*) FILTER (WHERE verdict = truth) AS agree,
  count(*) FILTER (WHERE verdict = 'success' AND truth = 'failure') AS fp,
  count(*) FILTER (WHERE verdict = 'failure' AND truth = 'success') AS fn,
  count(*) FILTER (WHERE verdict = 'uncertain') AS unresolved,
  count(*) FILTER (WHERE probe_used) AS probed,
  count(*) FILTER (WHERE verdict = truth AND NOT probe_used) AS correct_plain,
  count(*) FILTER (WHERE verdict = truth AND probe_used) AS correct_probe,
  count(*) FILTER (WHERE verdict <> truth AND verdict <> 'uncertain' AND NOT probe_used) AS wrong_plain,
  count(*) FILTER (WHERE verdict <> truth AND verdict <> 'uncertain' AND probe_used) AS wrong_probe,
  sum(probe_steps) AS probe_steps, sum(probe_tokens) AS probe_tokens
FROM v
GROUP BY GROUPING SETS ((strategy, domain), (strategy))
ORDER BY strategy, total, domain`

const noTruthSQL = `
SELECT strategy, count(*) AS n FROM verifications
WHERE executable_outcome NOT IN ('success', 'failure') OR executable_outcome IS NULL
GROUP BY strategy ORDER BY strategy`

// Verifier audits the verifications table per strategy and domain against
// the executable outcome: agreement (verdict equals the outcome; uncertain
// counts as disagreement and as unresolved), false positives and negatives,
// probe rate, mean probe steps and tokens, the mean VeriCUA schedule reward,
// and which strategies lie on the agreement-cost Pareto frontier (higher
// agreement, fewer probe tokens per verification). Rows whose executable
// outcome is missing or uncertain have no ground truth: they are
// unresolved attempts (VeriCUA table 9), and no_ground_truth counts them.
func Verifier(ctx context.Context, in Input) (*Result, error) {
	s, err := openSession(ctx, in, KindVerifier)
	if err != nil {
		return nil, err
	}
	defer s.close()
	rows, err := s.rows(ctx, "per strategy and domain", verifierSQL)
	if err != nil {
		return nil, err
	}
	noTruth, err := s.rows(ctx, "rows without ground truth", noTruthSQL)
	if err != nil {
		return nil, err
	}
	params := map[string]any{"schedule": map[string]float64{"correct": RewardCorrect, "correct_probe": RewardCorrectProbe,
		"wrong": RewardWrong, "wrong_probe": RewardWrongProbe, "unresolved": RewardUnresolved},
		"ground_truth": "executable_outcome in (success, failure)", "cost": "probe tokens per verification"}
	b := newBuilder(KindVerifier, params)

	type point struct {
		strategy   string
		agree, tok float64
	}
	var points []point
	macro := map[string][]float64{}
	for _, r := range rows {
		strategy := r.str("strategy")
		g := strategy + "/" + r.str("domain")
		total := r.int("total") == 1
		if total {
			g = strategy + "/" + GroupAll
		}
		n := r.int("n")
		b.add(MetricN, g, float64(n), n, nil)
		b.rate(MetricAgreement, g, r.int("agree"), n, nil)
		b.add(MetricFP, g, float64(r.int("fp")), r.int("fp"), nil)
		b.add(MetricFN, g, float64(r.int("fn")), r.int("fn"), nil)
		b.add(MetricUnresolved, g, float64(r.int("unresolved")), r.int("unresolved"), nil)
		b.rate(MetricProbeRate, g, r.int("probed"), n, nil)
		b.add(MetricProbeTokens, g, r.float("probe_tokens"), r.int("probe_tokens"), nil)
		outcomes := map[string]int64{"correct": r.int("correct_plain"), "correct_probe": r.int("correct_probe"),
			"wrong": r.int("wrong_plain"), "wrong_probe": r.int("wrong_probe"), "unresolved": r.int("unresolved")}
		if n > 0 {
			b.add(MetricProbeStepsMean, g, r.float("probe_steps")/float64(n), r.int("probe_steps"), nil)
			b.add(MetricProbeTokensMean, g, r.float("probe_tokens")/float64(n), r.int("probe_tokens"), nil)
			sum := RewardCorrect*float64(outcomes["correct"]) + RewardCorrectProbe*float64(outcomes["correct_probe"]) +
				RewardWrong*float64(outcomes["wrong"]) + RewardWrongProbe*float64(outcomes["wrong_probe"]) +
				RewardUnresolved*float64(outcomes["unresolved"])
			b.add(MetricScheduleReward, g, sum/float64(n), n, outcomes)
			agree := float64(r.int("agree")) / float64(n)
			if total {
				points = append(points, point{strategy, agree, r.float("probe_tokens") / float64(n)})
			} else {
				macro[strategy] = append(macro[strategy], agree)
			}
		}
	}
	for _, st := range sortedKeys(macro) {
		sum := 0.0
		for _, a := range macro[st] {
			sum += a
		}
		b.add(MetricMacroAgreement, st+"/"+GroupAll, sum/float64(len(macro[st])), int64(len(macro[st])), nil)
	}
	for _, p := range points {
		var by []string
		for _, q := range points {
			if q.strategy != p.strategy && q.agree >= p.agree && q.tok <= p.tok && (q.agree > p.agree || q.tok < p.tok) {
				by = append(by, q.strategy)
			}
		}
		sort.Strings(by)
		on := 0.0
		if len(by) == 0 {
			on = 1
		}
		b.add(MetricPareto, p.strategy+"/"+GroupAll, on, int64(len(by)),
			map[string]any{"agreement": p.agree, "probe_tokens_mean": p.tok, "dominated_by": listed(by)})
	}
	for _, r := range noTruth {
		g := r.str("strategy") + "/" + GroupAll
		b.add(MetricNoGroundTruth, g, float64(r.int("n")), r.int("n"), nil)
	}
	return b.result(params, func(r schemas.Audit) bool {
		return isAllGroup(r) && (r.Metric == MetricAgreement || r.Metric == MetricProbeTokensMean || r.Metric == MetricScheduleReward || r.Metric == MetricPareto || r.Metric == MetricN)
	})
}
