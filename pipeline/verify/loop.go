package verify

import (
	"context"
	"fmt"
	"slices"

	"github.com/cualake/cualake/schemas"
)

// Runner is one verification strategy: a Judge, a Probe (nil for passive)
// and the budget.
type Runner struct {
	Name          string
	Judge         Judge
	Probe         Probe
	MaxRounds     int  // Probe rounds, K
	StepsPerRound int  // GUI steps per Probe round
	Screenshots   bool // the Probe records PNG evidence
}

// Attempt is one complete verification of one terminal state.
type Attempt struct {
	Criteria    []Criterion
	Verdict     string
	Rounds      int // Judge rounds: 1 + Probe rounds
	ProbeUsed   bool
	ProbeSteps  int
	ProbeTokens int
	Refused     int
	Evidence    []schemas.Blob
	Invalid     string
	JudgeTokens int

	decisions []decision
}

// Run verifies one episode: the Judge decides; while its status is
// uncertain, it asks for probing and rounds remain, the Probe inspects the
// live environment restored from the final state and the Judge decides
// again on the whole history (the episode and every round's criteria and
// evidence). It never touches in.FinalState.
func (r *Runner) Run(ctx context.Context, in *Input) (*Attempt, error) {
	att := &Attempt{}
	var live *Live
	if r.Probe != nil && r.MaxRounds > 0 && in.FinalState != nil {
		l, err := NewLive(in.FinalState, r.Screenshots)
		if err != nil {
			return nil, fmt.Errorf("verify %s (%s): %w", in.TrajectoryID, r.Name, err)
		}
		live = l
	}
	req := &JudgeRequest{In: in, CanProbe: live != nil}
	for {
		j, err := r.Judge.Judge(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("verify %s (%s): judge round %d: %w", in.TrajectoryID, r.Name, att.Rounds+1, err)
		}
		att.Rounds++
		att.JudgeTokens += j.Tokens
		att.decisions = append(att.decisions, j.decisions...)
		if j.Invalid != "" {
			att.Verdict, att.Invalid = Uncertain, j.Invalid
			if j.Criteria != nil {
				att.Criteria = j.Criteria
			}
			break
		}
		att.Criteria, att.Verdict = j.Criteria, j.Status
		if j.Status != Uncertain || !j.Probe || !req.CanProbe {
			break
		}
		order := j.Order
		if order == nil {
			for i, c := range j.Criteria {
				if c.Status == Uncertain {
					order = append(order, i)
				}
			}
		}
		rep, err := r.Probe.Probe(ctx, ProbeRequest{Task: in.Task, Live: live, Criteria: j.Criteria, Order: order, Budget: r.StepsPerRound})
		if err != nil {
			return nil, fmt.Errorf("verify %s (%s): probe round %d: %w", in.TrajectoryID, r.Name, req.Round()+1, err)
		}
		att.ProbeUsed = true
		att.ProbeTokens += rep.Tokens
		for _, b := range rep.Evidence {
			if !slices.ContainsFunc(att.Evidence, func(e schemas.Blob) bool { return e.Hash == b.Hash }) {
				att.Evidence = append(att.Evidence, b)
			}
		}
		// H^(k+1) = H^(k) + (C^(k), e^(k)) (VeriCUA section 2.2): the next
		// round sees every round so far, not only this one.
		h := append(slices.Clip(req.History), Round{Criteria: cloneCriteria(j.Criteria), Sent: slices.Clone(order),
			Probed: rep.Criteria, Evidence: rep.Evidence})
		req = &JudgeRequest{In: in, History: h, CanProbe: len(h) < r.MaxRounds}
	}
	if live != nil {
		att.ProbeSteps, att.Refused = live.Steps(), live.Refused()
	}
	return att, nil
}

// Row is the verifications row of an attempt.
func (a *Attempt) Row(in *Input, strategy string) schemas.Verification {
	var ev []string
	for _, c := range a.Criteria {
		for _, h := range c.Evidence {
			if !slices.Contains(ev, h) {
				ev = append(ev, h)
			}
		}
	}
	return schemas.Verification{TrajectoryID: in.TrajectoryID, Strategy: strategy, TaskID: in.Task.TaskID, Domain: in.Task.Domain,
		Rounds: int32(a.Rounds), Criteria: CriteriaJSON(a.Criteria, a.Invalid), ProbeUsed: a.ProbeUsed,
		ProbeSteps: int32(a.ProbeSteps), ProbeTokens: int32(a.ProbeTokens), RefusedActions: int32(a.Refused),
		Evidence: ev, Verdict: a.Verdict, ExecutableOutcome: in.Outcome, Reward: Reward(a.Verdict, in.Outcome, a.ProbeUsed)}
}
