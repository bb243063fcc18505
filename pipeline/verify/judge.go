package verify

import (
	"context"
	"math/rand/v2"
	"sort"

	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/schemas"
)

// JudgeRequest is one round of the Judge: the episode, and after probing
// the criteria as the Probe left them with its evidence.
type JudgeRequest struct {
	In       *Input
	Criteria []Criterion    // nil in the first round
	Evidence []schemas.Blob // the last Probe round's screenshots
	Notes    []string       // what the Probe reported, for model Judges
	Round    int            // Probe rounds so far
	CanProbe bool           // a live environment and budget remain
}

// Judgment is the Judge's answer: criteria with statuses, the overall
// status and, when uncertain, whether to probe and which criteria first.
type Judgment struct {
	Criteria []Criterion
	Status   string
	Probe    bool
	Order    []int
	Tokens   int
	Invalid  string // why the output could not be used ("" when valid)

	decisions []decision
}

// Judge decides a verification round.
type Judge interface {
	Judge(ctx context.Context, req *JudgeRequest) (*Judgment, error)
}

// BuiltinJudge is the rule-based Judge of the simulator driven by a
// Strategy: it writes criteria from the instruction (WriteCriteria),
// reads the last screens and the action history (assess), and lets the
// strategy choose, for each criterion the final screen did not settle,
// whether the Probe checks it or its lean is accepted, and, when no Probe
// round is left, whether to guess or stay uncertain. With a nil Rand its
// choices are greedy.
type BuiltinJudge struct {
	Strategy *Strategy
	Rand     *rand.Rand
}

// Judge implements Judge.
func (j *BuiltinJudge) Judge(_ context.Context, req *JudgeRequest) (*Judgment, error) {
	var cs []Criterion
	if req.Criteria == nil {
		cs = WriteCriteria(req.In.Task.Instruction)
		assess(req.In, cs)
		cs = claimCriteria(req.In, cs)
	} else {
		// The Probe's statuses are the baseline (VeriCUA's Judge prompt):
		// the builtin Judge has no grounds to override them.
		cs = cloneCriteria(req.Criteria)
	}
	ch := &chooser{rng: j.Rand}
	out := &Judgment{Criteria: cs}
	defer func() { out.decisions = ch.decisions }()
	var uncertain []int
	for i := range cs {
		if cs[i].Status == Uncertain {
			uncertain = append(uncertain, i)
		}
	}
	if Overall(Statuses(cs)) == Failure {
		uncertain = nil // one failure settles the verdict: nothing left to choose
	}
	xs := make([][]float64, len(cs))
	for _, i := range uncertain {
		xs[i] = criterionFeatures(req.In, cs, i, req.Round)
	}
	probing := req.CanProbe && j.Strategy.Probe
	var checks []int
	for _, i := range uncertain {
		switch {
		case probing && ch.binary(decCheck, j.Strategy.Check, xs[i]):
			checks = append(checks, i)
		case probing || ch.binary(decGuess, j.Strategy.Guess, xs[i]):
			resolve(&cs[i], req.In.Claim)
		}
	}
	if len(checks) > 0 && Overall(Statuses(cs)) != Failure {
		// Highest check score first: the criterion the policy most wants
		// evidence for.
		sort.SliceStable(checks, func(a, b int) bool {
			return dot(j.Strategy.Check, xs[checks[a]]) > dot(j.Strategy.Check, xs[checks[b]])
		})
		out.Order, out.Probe = checks, true
	}
	out.Status = Overall(Statuses(cs))
	if out.Status != Uncertain {
		out.Probe, out.Order = false, nil
	}
	return out, nil
}

// resolve settles an uncertain criterion from its lean, else from how the
// agent ended.
func resolve(c *Criterion, claim string) {
	switch {
	case c.lean > 0:
		c.Status = Success
	case c.lean < 0:
		c.Status = Failure
	case claim == action.Done:
		c.Status = Success
	default:
		c.Status = Failure
	}
	c.Note = "accepted from " + leanName(c) + "; " + c.Note
}

func leanName(c *Criterion) string {
	switch {
	case c.lean != 0 && c.leanSrc == LeanStale:
		return "an earlier screen"
	case c.lean != 0:
		return "the action history"
	}
	return "the agent's own ending"
}
