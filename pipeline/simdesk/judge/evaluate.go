package judge

import (
	"encoding/json"
	"fmt"
)

// CriterionResult is how one criterion scored.
type CriterionResult struct {
	Func    string  `json:"func"`
	Score   float64 `json:"score"`
	Got     string  `json:"got,omitempty"`
	Message string  `json:"message,omitempty"`
}

// Result is a judge's verdict: the combined score and each criterion's.
type Result struct {
	Score    float64           `json:"score"`
	Conj     string            `json:"conj"`
	Terminal string            `json:"terminal,omitempty"`
	Criteria []CriterionResult `json:"criteria"`
}

// JSON renders the result for the trajectories table's judge_detail.
func (r Result) JSON() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// Evaluate scores the state src exposes: 1 when the criteria hold (all of
// them for "and", any for "or"), else 0. As in OSWorld, an episode the agent
// ended with fail scores 0 on a feasible task and 1 on an infeasible one.
// An error means the state could not be read, not that the task failed.
func (j *Judge) Evaluate(src Source) (Result, error) {
	term, err := src.Terminal()
	if err != nil {
		return Result{}, fmt.Errorf("judge: terminal action: %w", err)
	}
	res := Result{Conj: j.Conj, Terminal: term}
	if j.Infeasible() {
		s := 0.0
		msg := "the agent did not report the task infeasible"
		if term == "fail" {
			s, msg = 1, ""
		}
		res.Criteria = []CriterionResult{{Func: "infeasible", Score: s, Message: msg}}
		res.Score = s
		return res, nil
	}
	all, any := true, false
	for i, c := range j.Criteria {
		cr, err := j.evalCriterion(c, src)
		if err != nil {
			return Result{}, fmt.Errorf("judge: criterion %d (%s): %w", i, c.Func, err)
		}
		res.Criteria = append(res.Criteria, cr)
		all = all && cr.Score == 1
		any = any || cr.Score == 1
	}
	ok := all
	if j.Conj == "or" {
		ok = any
	}
	if ok && term != "fail" {
		res.Score = 1
	}
	return res, nil
}

func (j *Judge) evalCriterion(c Criterion, src Source) (CriterionResult, error) {
	m := metrics[c.Func]
	got, err := get(c.Result, src)
	if err != nil {
		return CriterionResult{}, err
	}
	var want any
	var rules *Rules
	if c.Expected != nil {
		if c.Expected.Type == "rule" {
			rules = c.Expected.Rules
		} else if want, err = get(c.Expected, src); err != nil {
			return CriterionResult{}, err
		}
	}
	ok, why := m.score(got, want, rules, c.Options)
	cr := CriterionResult{Func: c.Func, Got: clip(Text(got))}
	if got == nil {
		cr.Got = ""
	}
	if ok {
		cr.Score = 1
	} else {
		cr.Message = why
	}
	return cr, nil
}

// EvaluateCriterion scores criterion i alone (ignoring how the episode
// ended); planners use it to tell which goals still need work.
func (j *Judge) EvaluateCriterion(i int, src Source) (CriterionResult, error) {
	if i < 0 || i >= len(j.Criteria) {
		return CriterionResult{}, fmt.Errorf("judge: criterion %d of %d", i, len(j.Criteria))
	}
	c := j.Criteria[i]
	if c.Func == "infeasible" {
		term, err := src.Terminal()
		if err != nil {
			return CriterionResult{}, err
		}
		if term == "fail" {
			return CriterionResult{Func: c.Func, Score: 1}, nil
		}
		return CriterionResult{Func: c.Func}, nil
	}
	return j.evalCriterion(c, src)
}
