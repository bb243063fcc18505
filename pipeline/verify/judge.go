package verify

import (
	"context"
	"math/rand/v2"

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
// strategy choose whether to probe, what to check first and whether to
// guess. With a nil Rand its choices are greedy.
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
	ch := &chooser{s: j.Strategy, rng: j.Rand}
	out := &Judgment{Criteria: cs, Status: Overall(Statuses(cs))}
	defer func() { out.decisions = ch.decisions }()
	if out.Status != Uncertain {
		return out, nil
	}
	x := stateFeatures(req.In, cs, req.Round)
	if req.CanProbe && j.Strategy.Probe && ch.binary(decStop, j.Strategy.Stop, x) {
		var idx []int
		var xs [][]float64
		for i := range cs {
			if cs[i].Status == Uncertain {
				idx = append(idx, i)
				xs = append(xs, checkFeatures(cs, i))
			}
		}
		for _, k := range ch.order(xs) {
			out.Order = append(out.Order, idx[k])
		}
		out.Probe = true
		return out, nil
	}
	if ch.binary(decGuess, j.Strategy.Guess, x) {
		for i := range cs {
			c := &cs[i]
			if c.Status != Uncertain {
				continue
			}
			switch {
			case c.lean > 0:
				c.Status = Success
			case c.lean < 0:
				c.Status = Failure
			case req.In.Claim == action.Done:
				c.Status = Success
			default:
				c.Status = Failure
			}
			c.Note = "guessed from " + leanName(c) + "; " + c.Note
		}
		out.Status = Overall(Statuses(cs))
	}
	return out, nil
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
