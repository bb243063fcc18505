package synthesize

import (
	"context"
	"fmt"
	"testing"
)

func TestQuickAblation(t *testing.T) {
	for _, w := range [][]string{nil, {"judger"}, {"fixer"}, {"rule-validator"}} {
		p := DefaultParams()
		p.Count = 200
		p.Workers = 8
		p.Without = w
		res, err := Run(context.Background(), Input{}, p)
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		fmt.Printf("%-30s cands=%d acc=%d exec_rows=%.3f final=%.3f acc_exec=%.3f accept=%.3f calls/acc=%.2f sec=%.2f caught=%v dropped=%v\n", s.Config, s.Candidates, s.Accepted, s.ExecutableRate, s.FinalExecutableRate, s.AcceptedExecutableRate, s.AcceptanceRate, s.CallsPerAccepted, s.Seconds, s.CaughtBy, s.Dropped)
	}
}
