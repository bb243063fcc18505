package verify

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/schemas"
)

// Round is one completed Judge-Probe round of the Judge's history
// (VeriCUA section 2.2): the criteria the Judge wrote, with the statuses it
// gave them (C^(k)), the ones it sent to the Probe, and the evidence the
// Probe returned (e^(k)): the criteria as the Probe left them (statuses,
// notes, evidence hashes) and its screenshots.
type Round struct {
	Criteria []Criterion    // C^(k): the Judge's criteria and statuses
	Sent     []int          // the criteria sent to the Probe, first first
	Probed   []Criterion    // e^(k): the criteria after the Probe's updates
	Evidence []schemas.Blob // e^(k): the screenshots the Probe collected
}

// JudgeRequest is one round of the Judge. Its input is the history
// H^(k) = psi(tau) + (C^(0), e^(0)) + ... + (C^(k-1), e^(k-1)): the episode
// (In) and every earlier round, oldest first, never only the latest.
type JudgeRequest struct {
	In       *Input
	History  []Round // nil in the first round
	CanProbe bool    // a live environment and budget remain
}

// Round is the number of Probe rounds so far.
func (r *JudgeRequest) Round() int { return len(r.History) }

// Criteria are the criteria as the latest Probe round left them, the
// baseline of this round (VeriCUA's Judge prompt); nil in the first round.
func (r *JudgeRequest) Criteria() []Criterion {
	if len(r.History) == 0 {
		return nil
	}
	return r.History[len(r.History)-1].Probed
}

// probeFindings lists, per criterion, what each Probe round of the history
// reported about it ("" where a round left it alone): a Probe that
// updates a criterion rewrites its note.
func probeFindings(h []Round, i int) []string {
	out := make([]string, len(h))
	for k, r := range h {
		if i < len(r.Probed) && i < len(r.Criteria) && r.Probed[i].Note != r.Criteria[i].Note {
			out[k] = strings.TrimPrefix(r.Probed[i].Note, "probe: ")
		}
	}
	return out
}

// keepTrail rewrites the notes of the criteria a later round starts from
// so that they keep every round's findings, not only the latest Probe's:
// the Judge's first reading, then "probe round k: ..." for each round that
// reported on the criterion.
func keepTrail(cs []Criterion, h []Round) {
	if len(h) == 0 {
		return
	}
	for i := range cs {
		parts := []string{}
		if i < len(h[0].Criteria) && h[0].Criteria[i].Note != "" {
			parts = append(parts, h[0].Criteria[i].Note)
		}
		for k, f := range probeFindings(h, i) {
			if f != "" {
				parts = append(parts, fmt.Sprintf("probe round %d: %s", k+1, f))
			}
		}
		cs[i].Note = strings.Join(parts, "; ")
	}
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
	if req.Round() == 0 {
		cs = WriteCriteria(req.In.Task.Instruction)
		assess(req.In, cs)
		cs = claimCriteria(req.In, cs)
	} else {
		// The Probe's statuses are the baseline (VeriCUA's Judge prompt):
		// the builtin Judge has no grounds to override them. Leans, tries
		// and evidence hashes carry over with the criteria; the notes are
		// rebuilt from the whole history.
		cs = cloneCriteria(req.Criteria())
		keepTrail(cs, req.History)
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
		xs[i] = criterionFeatures(req.In, cs, i, req.Round())
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
