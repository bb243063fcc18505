package synthesize

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func TestQuickInspect(t *testing.T) {
	p := DefaultParams()
	p.Count = 200
	p.Workers = 8
	res, err := Run(context.Background(), Input{}, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Records {
		bad := (r.Accepted && !r.Executable) || (r.Round == 0 && !strings.Contains(r.Candidate, `"flaw"`) && (!r.RuleValid || r.JudgerVerdict == "reject" || !r.CheckerJudgeCorrect) && r.Dropped != "duplicate") || (r.Round == 0 && strings.Contains(r.Candidate, `"flaw":"missing_setup"`))
		if bad {
			fmt.Printf("%s r%d acc=%v %s rule=%v %q judger=%s %q checker=%v/%v %q exec=%v\n  %s\n", r.CandidateID, r.Round, r.Accepted, r.Dropped, r.RuleValid, r.RuleReason, r.JudgerVerdict, r.JudgerReason, r.CheckerReachable, r.CheckerJudgeCorrect, r.CheckerReason, r.Executable, r.Candidate)
		}
	}
}
