package verify

import (
	"encoding/json"
	"fmt"

	"github.com/cualake/cualake/schemas"
)

// Verdicts and statuses, shared with schemas.Verdicts.
const (
	Success   = "success"
	Failure   = "failure"
	Uncertain = "uncertain"
)

// The VeriCUA terminal reward schedule (table 9): a correct verdict is worth
// more without probing, a wrong one costs less after probing, and an
// unresolved or invalid attempt costs most. An attempt whose trajectory has
// no executable outcome is unresolved too (table 9: "the executable
// evaluator returns no metadata").
const (
	RewardCorrect      = 1.0
	RewardCorrectProbe = 0.7
	RewardWrong        = -0.7
	RewardWrongProbe   = -0.3
	RewardUnresolved   = -1.0
)

// Reward scores one verification attempt: verdict against the executable
// outcome (success or failure), with or without probing. An uncertain or
// invalid verdict is unresolved (-1.0), and so is any verdict when the
// executable outcome is not success or failure: there is nothing it could
// be right about.
func Reward(verdict, outcome string, probeUsed bool) float64 {
	switch {
	case !Scored(outcome), verdict != Success && verdict != Failure:
		return RewardUnresolved
	case verdict == outcome && !probeUsed:
		return RewardCorrect
	case verdict == outcome:
		return RewardCorrectProbe
	case !probeUsed:
		return RewardWrong
	}
	return RewardWrongProbe
}

// Scored reports whether an executable outcome can score a verdict as
// right or wrong; without one the attempt is unresolved.
func Scored(outcome string) bool { return outcome == Success || outcome == Failure }

// ExecutableOutcome is the executable judge's verdict on a trajectory's
// final state, in the verifier's words: the judge score recorded in
// judge_detail when there is one (1 is success), else the outcome column
// (success, failure; a reported-infeasible episode counts by its reward).
// It is "" when the trajectory carries no executable judgment (an episode
// that errored, an imported log without a judge).
func ExecutableOutcome(t schemas.Trajectory) string {
	if t.Outcome == schemas.OutcomeError {
		return ""
	}
	if t.JudgeDetail != "" {
		var d struct {
			Score *float64 `json:"score"`
		}
		if err := json.Unmarshal([]byte(t.JudgeDetail), &d); err == nil && d.Score != nil {
			if *d.Score >= 1 {
				return Success
			}
			return Failure
		}
	}
	switch t.Outcome {
	case schemas.OutcomeSuccess:
		return Success
	case schemas.OutcomeFailure:
		return Failure
	case schemas.OutcomeReportedInfeasible:
		if t.Reward >= 1 {
			return Success
		}
		return Failure
	}
	return ""
}

// Overall is the Judge's overall status rule (VeriCUA appendix I): success
// when every criterion is success, failure when any is failure, otherwise
// uncertain. No criteria is uncertain.
func Overall(statuses []string) string {
	if len(statuses) == 0 {
		return Uncertain
	}
	all := true
	for _, s := range statuses {
		if s == Failure {
			return Failure
		}
		if s != Success {
			all = false
		}
	}
	if all {
		return Success
	}
	return Uncertain
}

func validStatus(s string) error {
	switch s {
	case Success, Failure, Uncertain:
		return nil
	}
	return fmt.Errorf("status %q: want success, failure or uncertain", s)
}
