package verify

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"

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

// leanTypes are the kinds of tentative evidence an uncertain criterion can
// have, in feature order.
var leanTypes = []string{"stale_success", "stale_failure", "history_success", "history_failure", "none"}

// interactionGroups are the kind groups whose stale and history leans get a
// feature of their own (how much a lean is worth depends on the kind).
var interactionGroups = []string{"files", "content", "saved", "setting", "mail", "sheet", "claim"}

// CriterionFeatures name the inputs of the builtin Judge's choices about
// one uncertain criterion.
var CriterionFeatures = func() []string {
	f := []string{"bias"}
	for _, g := range kindGroups {
		f = append(f, "kind_"+g.name)
	}
	for _, l := range leanTypes {
		f = append(f, "lean_"+l)
	}
	for _, g := range interactionGroups {
		f = append(f, g+"_stale_success", g+"_history_success")
	}
	return append(f, "claim_done", "claim_fail", "claim_none", "after_probe", "tried", "uncertain_share")
}()

// Strategy is the builtin Judge's verification strategy: a small
// parametric policy over two choices about every criterion it could not
// settle from the final screen. Check: while a Probe round is available,
// send the criterion to the Probe (p = sigmoid(Check . x)) or accept its
// lean (what an earlier screen or the history suggested, else the agent's
// own ending); the Judge probes when it checks anything, and the Probe
// takes the checked criteria highest score first, so the same weights
// decide "probe or decide now" and "which criterion first". Guess: once no
// round is left, resolve a still uncertain criterion from its lean
// (p = sigmoid(Guess . x)) or leave it, and the verdict, uncertain.
// Passive never probes and always guesses; the prompted builtin checks
// every uncertain criterion and never guesses; trained weights come from
// Train.
type Strategy struct {
	Name              string     `json:"name"`
	Probe             bool       `json:"probe"`
	MaxRounds         int        `json:"max_rounds"`
	StepsPerRound     int        `json:"steps_per_round"`
	StopOnFailure     bool       `json:"stop_on_failure"`
	Check             []float64  `json:"check"`
	Guess             []float64  `json:"guess"`
	CriterionFeatures []string   `json:"criterion_features"`
	Trained           *TrainInfo `json:"trained,omitempty"`
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

// Builtin is the prompted, untrained strategy: check every uncertain
// criterion, never guess.
func Builtin() *Strategy {
	return &Strategy{Name: StrategyBuiltin, Probe: true, MaxRounds: DefaultMaxRounds, StepsPerRound: DefaultStepsPerRound,
		StopOnFailure:     true,
		Check:             weights(len(CriterionFeatures), map[int]float64{0: 1}),
		Guess:             weights(len(CriterionFeatures), map[int]float64{0: -1}),
		CriterionFeatures: CriterionFeatures}
}

// Passive is the screenshot-only baseline: no probing, every uncertain
// criterion resolved from its lean.
func Passive() *Strategy {
	s := Builtin()
	s.Name, s.Probe, s.MaxRounds = StrategyPassive, false, 0
	s.Check = weights(len(CriterionFeatures), map[int]float64{0: -10})
	s.Guess = weights(len(CriterionFeatures), map[int]float64{0: 10})
	return s
}

// Validate checks a strategy's shape, so a loaded blob cannot index out of
// range.
func (s *Strategy) Validate() error {
	if len(s.Check) != len(CriterionFeatures) || len(s.Guess) != len(CriterionFeatures) {
		return fmt.Errorf("strategy %q: %d/%d weights, want %d", s.Name, len(s.Check), len(s.Guess), len(CriterionFeatures))
	}
	for _, w := range [][]float64{s.Check, s.Guess} {
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
	c.Check = append([]float64(nil), s.Check...)
	c.Guess = append([]float64(nil), s.Guess...)
	c.CriterionFeatures = append([]string(nil), s.CriterionFeatures...)
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
	return &s, nil
}

// Decision kinds recorded for training.
const (
	decCheck = iota // a: 1 send to the Probe, 0 accept the lean
	decGuess        // a: 1 resolve from the lean, 0 leave uncertain
)

// decision is one choice the policy made, kept for the policy gradient.
type decision struct {
	kind int
	x    []float64
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
	rng       *rand.Rand
	decisions []decision
}

func (c *chooser) binary(kind int, w, x []float64) bool {
	p := sigmoid(dot(w, x))
	a := p >= 0.5
	if c.rng != nil {
		a = c.rng.Float64() < p
	}
	d := decision{kind: kind, x: x}
	if a {
		d.a = 1
	}
	c.decisions = append(c.decisions, d)
	return a
}

// leanType names an uncertain criterion's tentative evidence.
func leanType(c *Criterion) string {
	switch {
	case c.lean > 0 && c.leanSrc == LeanStale:
		return "stale_success"
	case c.lean < 0 && c.leanSrc == LeanStale:
		return "stale_failure"
	case c.lean > 0:
		return "history_success"
	case c.lean < 0:
		return "history_failure"
	}
	return "none"
}

// criterionFeatures describes uncertain criterion i for the policy.
func criterionFeatures(in *Input, cs []Criterion, i, round int) []float64 {
	x := make([]float64, len(CriterionFeatures))
	set := func(name string) {
		for j, f := range CriterionFeatures {
			if f == name {
				x[j] = 1
				return
			}
		}
	}
	c := &cs[i]
	set("bias")
	g := kindGroups[kindGroup(c.kind())].name
	set("kind_" + g)
	lt := leanType(c)
	set("lean_" + lt)
	if lt == "stale_success" || lt == "history_success" {
		set(g + "_" + lt)
	}
	switch in.Claim {
	case action.Done:
		set("claim_done")
	case action.Fail:
		set("claim_fail")
	default:
		set("claim_none")
	}
	if round > 0 {
		set("after_probe")
	}
	if c.tried {
		set("tried")
	}
	u := 0
	for _, o := range cs {
		if o.Status == Uncertain {
			u++
		}
	}
	x[len(x)-1] = float64(u) / float64(len(cs))
	return x
}
