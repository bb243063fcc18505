package verify

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/schemas"
)

func TestExploreOne(t *testing.T) {
	ids := os.Getenv("VERIFY_ONE")
	if ids == "" {
		t.Skip()
	}
	ctx := context.Background()
	var tasks []schemas.Task
	for _, tk := range simdesk.Pool() {
		for _, id := range strings.Split(ids, ",") {
			if tk.TaskID == id {
				tasks = append(tasks, tk)
			}
		}
	}
	ins, err := BenchInputs(ctx, tasks, 1, 0, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range ins {
		fmt.Println(in.TrajectoryID, in.Outcome, PerturbMode(in.Task, 0))
		fmt.Println(strings.Join(in.History, "\n"))
		live, _ := NewLive(in.FinalState, false)
		r := NewRunner(Builtin(), nil, false)
		r.Probe = tracingProbe{BuiltinProbe{StopOnFailure: true}}
		att, err := r.Run(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		_ = live
		fmt.Println(att.Verdict, CriteriaJSON(att.Criteria, ""))
	}
}

type tracingProbe struct{ p BuiltinProbe }

func (t tracingProbe) Probe(ctx context.Context, req ProbeRequest) (ProbeReport, error) {
	tracing = true
	defer func() { tracing = false }()
	return t.p.Probe(ctx, req)
}
