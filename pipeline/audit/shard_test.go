package audit_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/audit"
	"github.com/cualake/cualake/pipeline/shard"
	"github.com/cualake/cualake/schemas"
)

var genWords = strings.Fields("open rename delete file folder settings dark mode chart sum column cell save report final move copy the a to in of and with all empty home directory sheet table pivot sales region bar insert")

// genPools makes pools over several domains with planted duplicates and
// near-duplicates, and more than MaxListed pairs in some groups.
func genPools(seed uint64, nTrain, nEval int) (audit.Pool, audit.Pool) {
	r := rand.New(rand.NewPCG(seed, 7))
	domains := []string{"chrome", "os", "calc", "writer", "gimp", "vlc", ""}
	sentence := func() string {
		n := 3 + r.IntN(6)
		w := make([]string, n)
		for i := range w {
			w[i] = genWords[r.IntN(len(genWords))]
		}
		return strings.Join(w, " ")
	}
	judges := []string{`{}`, `{"func":"a"}`, `{"func":"b","expected":1}`, `{"expected":1,"func":"b"}`}
	var eval, train []audit.Item
	for i := 0; i < nEval; i++ {
		eval = append(eval, audit.Item{ID: fmt.Sprintf("e%03d", i), Domain: domains[r.IntN(len(domains))], Instruction: sentence(),
			Setup: `[]`, Judge: judges[r.IntN(len(judges))]})
	}
	for i := 0; i < nTrain; i++ {
		it := audit.Item{ID: fmt.Sprintf("t%04d", r.IntN(100000)*10+i%10), Domain: domains[r.IntN(len(domains))], Setup: `[]`, Judge: judges[r.IntN(len(judges))]}
		switch r.IntN(4) {
		case 0:
			it.Instruction = eval[r.IntN(nEval)].Instruction
		case 1:
			it.Instruction = eval[r.IntN(nEval)].Instruction + " " + genWords[r.IntN(len(genWords))]
		default:
			it.Instruction = sentence()
		}
		train = append(train, it)
	}
	return audit.Pool{Desc: map[string]any{"x": 1}, Items: train}, audit.Pool{Desc: map[string]any{"y": 2}, Items: eval}
}

func genJudges(seed uint64, n int) ([]schemas.Trajectory, []schemas.Task, *audit.Labels) {
	r := rand.New(rand.NewPCG(seed, 9))
	domains := []string{"chrome", "os", "calc", "writer", ""}
	outcomes := []string{schemas.OutcomeSuccess, schemas.OutcomeFailure, schemas.OutcomeIncomplete, schemas.OutcomeError}
	tasks := []schemas.Task{{TaskID: "u", Domain: "os"}, {TaskID: "v", Domain: ""}}
	var trajs []schemas.Trajectory
	labels := &audit.Labels{Path: "gen", SHA256: "x"}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("tr%04d", i)
		trajs = append(trajs, schemas.Trajectory{TrajectoryID: id, Domain: domains[r.IntN(len(domains))], TaskID: []string{"u", "v"}[r.IntN(2)],
			Outcome: outcomes[r.IntN(len(outcomes))]})
		for k := r.IntN(3); k > 0; k-- {
			labels.Items = append(labels.Items, audit.Label{TrajectoryID: id, Success: r.IntN(2) == 0, Line: len(labels.Items) + 1})
		}
	}
	for i := 0; i < 20; i++ {
		labels.Items = append(labels.Items, audit.Label{TrajectoryID: fmt.Sprintf("zz%02d", i), Line: len(labels.Items) + 1})
	}
	return trajs, tasks, labels
}

// partsOf runs an audit's n parts (one per shard, by domain) and
// completes them.
func partsOf(t *testing.T, n int, part func(owns func(string) bool) (*audit.Part, error)) *audit.Result {
	t.Helper()
	var rows []schemas.Audit
	var first *audit.Part
	for i := n - 1; i >= 0; i-- {
		spec := shard.Spec{Index: i, Count: n}
		p, err := part(spec.Owns)
		if err != nil {
			t.Fatal(err)
		}
		first = p
		rows = append(rows, p.Rows...)
	}
	res, err := audit.Complete(first.Kind, first.RowParams, rows)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestShardedAuditsEqualUnsharded(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		train, eval := genPools(seed, 900, 300)
		want, err := audit.OverlapPools(train, eval, audit.DefaultThreshold)
		if err != nil {
			t.Fatal(err)
		}
		if r := row(t, want, audit.MetricJudgeReuse, "calc"); !strings.Contains(r.Breakdown, `"truncated":true`) {
			t.Fatalf("the fixture should list more than %d pairs in a domain: %s", audit.MaxListed, r.Breakdown[:200])
		}
		trajs, tasks, labels := genJudges(seed, 1500)
		wantJ, err := audit.JudgesAgreement(trajs, tasks, labels)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 2, 3, 7} {
			got := partsOf(t, n, func(owns func(string) bool) (*audit.Part, error) {
				return audit.OverlapPart(train, eval, audit.DefaultThreshold, owns)
			})
			if !reflect.DeepEqual(got.Rows, want.Rows) {
				t.Fatalf("overlap seed %d N=%d: parts differ from the whole", seed, n)
			}
			got = partsOf(t, n, func(owns func(string) bool) (*audit.Part, error) {
				return audit.JudgesPart(trajs, tasks, labels, owns)
			})
			if !reflect.DeepEqual(got.Rows, wantJ.Rows) {
				t.Fatalf("judges seed %d N=%d: parts differ from the whole", seed, n)
			}
		}
	}
	// Two parts of one domain are refused.
	train, eval := genPools(1, 50, 20)
	p, _ := audit.OverlapPart(train, eval, audit.DefaultThreshold, nil)
	if _, err := audit.Complete(p.Kind, p.RowParams, append(p.Rows, p.Rows...)); err == nil || !strings.Contains(err.Error(), "two parts") {
		t.Fatalf("a domain twice: %v", err)
	}
}
