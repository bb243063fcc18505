package verify

import (
	"sort"

	"github.com/cualake/cualake/schemas"
)

// AllDomains is the Domain of a strategy's overall metrics.
const AllDomains = "all"

// Metrics summarises one strategy's verifications in one domain against
// the executable outcomes. A row without an executable outcome is an
// unresolved attempt (VeriCUA table 9): it counts in N and Unresolved,
// never agrees, carries its row's reward (-1.0), and NoOutcome says how
// many of the unresolved are such rows. Rates are shares of N; an
// uncertain verdict never agrees, so agreement, FP, FN and unresolved
// rates add up to 1.
type Metrics struct {
	Strategy          string  `json:"strategy"`
	Domain            string  `json:"domain"`
	N                 int     `json:"n"`
	Agree             int     `json:"agree"`
	FP                int     `json:"fp"` // verdict success, outcome failure
	FN                int     `json:"fn"` // verdict failure, outcome success
	Unresolved        int     `json:"unresolved"`
	Probed            int     `json:"probed"`
	ProbeSteps        int     `json:"probe_steps"`
	ProbeTokens       int     `json:"probe_tokens"`
	Refused           int     `json:"refused"`
	NoOutcome         int     `json:"no_outcome"` // of Unresolved: rows without an executable outcome
	Agreement         float64 `json:"agreement"`
	FPRate            float64 `json:"fp_rate"`
	FNRate            float64 `json:"fn_rate"`
	ProbeRate         float64 `json:"probe_rate"`
	StepsPerJudgment  float64 `json:"probe_steps_per_judgment"`
	TokensPerJudgment float64 `json:"probe_tokens_per_judgment"`
	MeanReward        float64 `json:"mean_reward"`
}

// Summarize computes Metrics per (strategy, domain) and per strategy over
// all domains (Domain AllDomains), sorted by strategy then domain with
// "all" last.
func Summarize(rows []schemas.Verification) []Metrics {
	type key struct{ s, d string }
	acc := map[key]*Metrics{}
	get := func(s, d string) *Metrics {
		k := key{s, d}
		if m, ok := acc[k]; ok {
			return m
		}
		m := &Metrics{Strategy: s, Domain: d}
		acc[k] = m
		return m
	}
	for _, r := range rows {
		d := r.Domain
		if d == "" {
			d = "unknown"
		}
		for _, m := range []*Metrics{get(r.Strategy, d), get(r.Strategy, AllDomains)} {
			m.N++
			switch {
			case !Scored(r.ExecutableOutcome):
				m.Unresolved++
				m.NoOutcome++
			case r.Verdict == r.ExecutableOutcome:
				m.Agree++
			case r.Verdict == Success:
				m.FP++
			case r.Verdict == Failure:
				m.FN++
			default:
				m.Unresolved++
			}
			if r.ProbeUsed {
				m.Probed++
			}
			m.ProbeSteps += int(r.ProbeSteps)
			m.ProbeTokens += int(r.ProbeTokens)
			m.Refused += int(r.RefusedActions)
			m.MeanReward += r.Reward
		}
	}
	out := make([]Metrics, 0, len(acc))
	for _, m := range acc {
		if n := float64(m.N); n > 0 {
			m.Agreement, m.FPRate, m.FNRate = float64(m.Agree)/n, float64(m.FP)/n, float64(m.FN)/n
			m.ProbeRate, m.StepsPerJudgment, m.TokensPerJudgment = float64(m.Probed)/n, float64(m.ProbeSteps)/n, float64(m.ProbeTokens)/n
			m.MeanReward /= n
		}
		out = append(out, *m)
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Strategy != out[b].Strategy {
			return out[a].Strategy < out[b].Strategy
		}
		if (out[a].Domain == AllDomains) != (out[b].Domain == AllDomains) {
			return out[b].Domain == AllDomains
		}
		return out[a].Domain < out[b].Domain
	})
	return out
}
