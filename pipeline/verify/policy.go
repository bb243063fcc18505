package verify

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/cualake/cualake/pipeline/simdesk/action"
)

// Strategy names.
const (
	StrategyPassive = "passive"
	StrategyBuiltin = "builtin"
	StrategyTrained = "trained"
	StrategyOpenAI  = "openai"
)

// Defaults of the verification loop (VeriCUA section 3.1: at most K = 2
// Probe rounds; 15 GUI steps per round).
const (
	DefaultMaxRounds     = 2
	DefaultStepsPerRound = 15
)

// StateFeatures name the inputs of the builtin Judge's stop and guess
// choices, computed over the criteria still uncertain when it decides.
var StateFeatures = []string{
	"bias", "uncertain_share",
	"uncertain_files", "uncertain_content", "uncertain_saved", "uncertain_setting",
	"uncertain_mail", "uncertain_sheet", "uncertain_claim", "uncertain_generic",
	"lean_stale_share", "lean_history_share", "lean_none_share", "lean_failure_share",
	"claim_done", "claim_fail", "claim_none", "after_probe", "tried_share",
}

// CheckFeatures name the inputs of the choice of which uncertain criterion
// the Probe checks first.
var CheckFeatures = []string{
	"files", "content", "saved", "setting", "mail", "sheet", "claim", "generic",
	"lean_stale", "lean_history", "lean_none", "lean_failure", "position", "tried",
}

// Strategy is the builtin Judge's verification strategy: a small
// parametric policy with three choices. Stop: with criteria uncertain and
// budget left, probe (p = sigmoid(Stop . x)) or decide now. Guess: when
// deciding with criteria still uncertain, resolve them from their leans
// (what earlier screens or the history suggested, else the agent's own
// ending) or leave the verdict uncertain. Order: which uncertain criterion
// the Probe checks first (softmax over Order . x_c; the rest follow by
// score). Passive never probes; the prompted builtin probes whenever
// something is uncertain, checks in the order written and never guesses;
// trained weights come from Train.
type Strategy struct {
	Name          string     `json:"name"`
	Probe         bool       `json:"probe"`
	MaxRounds     int        `json:"max_rounds"`
	StepsPerRound int        `json:"steps_per_round"`
	StopOnFailure bool       `json:"stop_on_failure"`
	Window        int        `json:"window"`
	Stop          []float64  `json:"stop"`
	Guess         []float64  `json:"guess"`
	Order         []float64  `json:"order"`
	StateFeatures []string   `json:"state_features"`
	CheckFeatures []string   `json:"check_features"`
	Trained       *TrainInfo `json:"trained,omitempty"`
}

// TrainInfo records how a strategy was learned.
type TrainInfo struct {
	From       string  `json:"from"`
	Iterations int     `json:"iterations"`
	Batch      int     `json:"batch"`
	Attempts   int     `json:"attempts"`
	LR         float64 `json:"lr"`
	Seed       int64   `json:"seed"`
	Source     string  `json:"source"`
}

func weights(n int, set map[int]float64) []float64 {
	w := make([]float64, n)
	for i, v := range set {
		w[i] = v
	}
	return w
}

// checkPosition is the index of "position" in CheckFeatures.
const checkPosition = 12

// Builtin is the prompted, untrained strategy: probe whenever a criterion
// is uncertain, check criteria in the order written, never guess.
func Builtin() *Strategy {
	return &Strategy{Name: StrategyBuiltin, Probe: true, MaxRounds: DefaultMaxRounds, StepsPerRound: DefaultStepsPerRound,
		StopOnFailure: true, Window: DefaultWindow,
		Stop:          weights(len(StateFeatures), map[int]float64{0: 2}),
		Guess:         weights(len(StateFeatures), map[int]float64{0: -2}),
		Order:         weights(len(CheckFeatures), map[int]float64{checkPosition: -2}),
		StateFeatures: StateFeatures, CheckFeatures: CheckFeatures}
}

// Passive is the screenshot-only baseline: no probing, every uncertain
// criterion resolved from its lean.
func Passive() *Strategy {
	s := Builtin()
	s.Name, s.Probe, s.MaxRounds = StrategyPassive, false, 0
	s.Stop = weights(len(StateFeatures), map[int]float64{0: -10})
	s.Guess = weights(len(StateFeatures), map[int]float64{0: 10})
	return s
}

// Validate checks a strategy's shape, so a loaded blob cannot index out of
// range.
func (s *Strategy) Validate() error {
	if len(s.Stop) != len(StateFeatures) || len(s.Guess) != len(StateFeatures) || len(s.Order) != len(CheckFeatures) {
		return fmt.Errorf("strategy %q: %d/%d/%d weights, want %d/%d/%d", s.Name, len(s.Stop), len(s.Guess), len(s.Order),
			len(StateFeatures), len(StateFeatures), len(CheckFeatures))
	}
	for _, w := range [][]float64{s.Stop, s.Guess, s.Order} {
		for _, v := range w {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("strategy %q: a weight is %v", s.Name, v)
			}
		}
	}
	if s.MaxRounds < 0 || s.StepsPerRound < 0 {
		return fmt.Errorf("strategy %q: negative budget", s.Name)
	}
	return nil
}

// Clone returns a deep copy.
func (s *Strategy) Clone() *Strategy {
	c := *s
	c.Stop = append([]float64(nil), s.Stop...)
	c.Guess = append([]float64(nil), s.Guess...)
	c.Order = append([]float64(nil), s.Order...)
	if s.Trained != nil {
		t := *s.Trained
		c.Trained = &t
	}
	return &c
}

// MarshalStrategy renders a strategy as deterministic JSON.
func MarshalStrategy(s *Strategy) ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("strategy %s: %w", s.Name, err)
	}
	return append(b, '\n'), nil
}

// UnmarshalStrategy reads and validates a strategy.
func UnmarshalStrategy(b []byte) (*Strategy, error) {
	var s Strategy
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("strategy: %w", err)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.Window <= 0 {
		s.Window = DefaultWindow
	}
	return &s, nil
}

// Decision kinds recorded for training.
const (
	decStop  = iota // x: one row; a: 1 probe, 0 decide
	decGuess        // x: one row; a: 1 guess, 0 abstain
	decOrder        // x: one row per option; a: the option picked first
)

// decision is one choice the policy made, kept for the policy gradient.
type decision struct {
	kind int
	x    [][]float64
	a    int
}

func sigmoid(z float64) float64 { return 1 / (1 + math.Exp(-z)) }

func dot(w, x []float64) float64 {
	s := 0.0
	for i := range w {
		s += w[i] * x[i]
	}
	return s
}

// chooser makes the policy's choices: greedy when rng is nil (evaluation),
// sampled otherwise (training), recording every choice.
type chooser struct {
	s         *Strategy
	rng       *rand.Rand
	decisions []decision
}

func (c *chooser) binary(kind int, w, x []float64) bool {
	p := sigmoid(dot(w, x))
	a := p >= 0.5
	if c.rng != nil {
		a = c.rng.Float64() < p
	}
	d := decision{kind: kind, x: [][]float64{x}}
	if a {
		d.a = 1
	}
	c.decisions = append(c.decisions, d)
	return a
}

// order picks the first option by softmax (greedy: the best score, ties to
// the earlier one) and orders the rest by score.
func (c *chooser) order(xs [][]float64) []int {
	n := len(xs)
	idx := make([]int, n)
	scores := make([]float64, n)
	for i, x := range xs {
		idx[i], scores[i] = i, dot(c.s.Order, x)
	}
	sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] > scores[idx[b]] })
	if n < 2 {
		return idx
	}
	first := idx[0]
	if c.rng != nil {
		p := softmax(scores)
		u, acc := c.rng.Float64(), 0.0
		for i, pi := range p {
			acc += pi
			if u < acc || i == n-1 {
				first = i
				break
			}
		}
	}
	c.decisions = append(c.decisions, decision{kind: decOrder, x: xs, a: first})
	out := []int{first}
	for _, i := range idx {
		if i != first {
			out = append(out, i)
		}
	}
	return out
}

func softmax(z []float64) []float64 {
	m := math.Inf(-1)
	for _, v := range z {
		m = max(m, v)
	}
	out := make([]float64, len(z))
	sum := 0.0
	for i, v := range z {
		out[i] = math.Exp(v - m)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// stateFeatures describes the uncertain criteria at a decision.
func stateFeatures(in *Input, cs []Criterion, round int) []float64 {
	x := make([]float64, len(StateFeatures))
	x[0] = 1
	var u []*Criterion
	for i := range cs {
		if cs[i].Status == Uncertain {
			u = append(u, &cs[i])
		}
	}
	if len(cs) > 0 {
		x[1] = float64(len(u)) / float64(len(cs))
	}
	n := float64(max(len(u), 1))
	for _, c := range u {
		x[2+kindGroup(c.kind())] = 1
		switch c.leanSrc {
		case LeanStale:
			x[10] += 1 / n
		case LeanHistory:
			x[11] += 1 / n
		default:
			x[12] += 1 / n
		}
		if c.lean < 0 {
			x[13] += 1 / n
		}
		if c.tried {
			x[18] += 1 / n
		}
	}
	switch in.Claim {
	case action.Done:
		x[14] = 1
	case action.Fail:
		x[15] = 1
	default:
		x[16] = 1
	}
	if round > 0 {
		x[17] = 1
	}
	return x
}

// checkFeatures describes one uncertain criterion as a Probe target.
func checkFeatures(cs []Criterion, i int) []float64 {
	x := make([]float64, len(CheckFeatures))
	c := &cs[i]
	x[kindGroup(c.kind())] = 1
	switch c.leanSrc {
	case LeanStale:
		x[8] = 1
	case LeanHistory:
		x[9] = 1
	default:
		x[10] = 1
	}
	if c.lean < 0 {
		x[11] = 1
	}
	x[12] = float64(i) / float64(max(len(cs), 1))
	if c.tried {
		x[13] = 1
	}
	return x
}
