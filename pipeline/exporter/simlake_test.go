package exporter

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/schemas"
)

// simFixture is a lake of simulator tasks with real rollouts: task A was
// rolled out twice (an oracle success, seed 7, and a random failure, seed
// 8, one group), task B never (the simulator renders it), task C is an
// imported OSWorld task the simulator cannot show. Segments cut A's
// trajectories with non-zero advantages, one of them without recorded
// log-probabilities.
type simFixture struct {
	l     *lake.Lake
	dir   string
	m     *lake.Manifest
	a, b  schemas.Task
	c     schemas.Task
	turns map[string][]string // trajectory -> screenshot hash per turn
	blobs map[string][]byte
	segs  []schemas.Segment
}

const (
	trajOK  = "A@it000#00"
	trajBad = "A@it000#01"
)

func record(t *testing.T, f *simFixture, task schemas.Task, seed int64, pol simdesk.Policy, id, policy string, max int) (schemas.Trajectory, []schemas.Step) {
	t.Helper()
	sim, err := simdesk.NewSim(simdesk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := sim.Reset(task, seed)
	if err != nil {
		t.Fatal(err)
	}
	var steps []schemas.Step
	for i := 0; i < max && !obs.Done; i++ {
		a, err := pol.Next(obs)
		if err != nil {
			t.Fatal(err)
		}
		h := schemas.HashBytes(obs.Screenshot)
		f.blobs[h] = obs.Screenshot
		f.turns[id] = append(f.turns[id], h)
		text, err := action.Format(a)
		if err != nil {
			t.Fatal(err)
		}
		st := schemas.Step{TrajectoryID: id, Step: int32(i), RawAction: text, Response: "I act.\nAction: " + text, Observation: h, Info: "{}"}
		st.SetAction(a)
		steps = append(steps, st)
		if obs, err = sim.Step(a); err != nil {
			t.Fatal(err)
		}
	}
	score, detail, err := sim.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	outcome := schemas.OutcomeFailure
	if score == 1 {
		outcome = schemas.OutcomeSuccess
	}
	return schemas.Trajectory{TrajectoryID: id, TaskID: task.TaskID, Domain: task.Domain, GroupID: "A@it000", Policy: policy,
		Seed: seed, Steps: int32(len(steps)), Reward: score, Outcome: outcome, JudgeDetail: detail, Source: "rollout"}, steps
}

func simLake(t *testing.T) *simFixture {
	t.Helper()
	ctx := context.Background()
	f := &simFixture{dir: t.TempDir(), turns: map[string][]string{}, blobs: map[string][]byte{}}
	l, err := lake.OpenDir(ctx, f.dir, true)
	if err != nil {
		t.Fatal(err)
	}
	l.Now = func() time.Time { return time.Unix(0, 0) }
	f.l = l
	pool := simdesk.Pool()
	f.a = pool[0]
	f.a.TaskID = "A"
	for _, p := range pool {
		if p.Domain != f.a.Domain {
			f.b = p
			break
		}
	}
	// B opens its app first, so its rendered state is not the bare desktop
	// every pool task starts on (A's first screenshot).
	f.b.TaskID, f.b.Setup = "B", `[{"type":"launch","parameters":{"command":["`+f.b.Domain+`"]}}]`
	f.c = schemas.Task{TaskID: "C", Domain: "chrome", App: "Google Chrome", Instruction: "Open a tab.", Setup: `[{"type":"launch","parameters":{"command":["google-chrome"]}}]`,
		Judge: `{"func":"infeasible"}`, Source: schemas.SourceImported, Raw: "{}"}
	pol, err := simdesk.Oracle(f.a)
	if err != nil {
		t.Fatal(err)
	}
	ok, okSteps := record(t, f, f.a, 7, pol, trajOK, "oracle", 30)
	bad, badSteps := record(t, f, f.a, 8, simdesk.RandomPolicy(3), trajBad, "random", 3)
	if ok.Outcome != schemas.OutcomeSuccess || bad.Outcome != schemas.OutcomeFailure || len(okSteps) < 3 || len(badSteps) != 3 {
		t.Fatalf("fixture rollouts: %s with %d steps, %s with %d", ok.Outcome, len(okSteps), bad.Outcome, len(badSteps))
	}
	var blobs []schemas.Blob
	for h, b := range f.blobs {
		blobs = append(blobs, schemas.Blob{Hash: h, Mime: "image/png", Size: int64(len(b)), Width: 1280, Height: 800, Bytes: b})
	}
	T := int32(len(okSteps))
	seg := func(id string, idx, first, last, images, steps int32, logp bool, adv float64) schemas.Segment {
		lp := []float32{0, -0.5, 0, -0.25}
		if !logp {
			lp = []float32{0, 0, 0, 0}
		}
		return schemas.Segment{SegmentID: fmt.Sprintf("%s/%d", id, idx), TrajectoryID: id, TaskID: "A", GroupID: "A@it000", Index: idx, Mode: "window",
			InputIDs: []int32{10 + idx, 11, 12, 13}, LossMask: []int8{0, 1, 0, 1}, Logprobs: lp, HasLogprobs: logp, Images: images,
			Tokens: 4, TrainableTokens: 2, FirstStep: first, LastStep: last, TrajectorySteps: steps, Reward: map[bool]float64{true: 1, false: 0}[adv > 0],
			Advantage: adv, PolicyVersion: 2, Tokenizer: "tokenizer.json@sha256:0123456789abcdef"}
	}
	f.segs = []schemas.Segment{
		seg(trajOK, 0, 0, 1, 2, T, true, 0.7071),
		seg(trajOK, 1, 2, T-1, T-1, T, true, 0.7071), // screenshots of turns 1 .. T-1
		seg(trajBad, 0, 0, 2, 3, 3, false, -0.7071),
	}
	tx, err := l.Begin(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		lake.ReplaceTable(ctx, tx, schemas.Tasks, []schemas.Task{f.a, f.b, f.c}),
		lake.ReplaceTable(ctx, tx, schemas.Trajectories, []schemas.Trajectory{ok, bad}),
		lake.ReplaceTable(ctx, tx, schemas.Steps, append(okSteps, badSteps...)),
		lake.ReplaceTable(ctx, tx, schemas.Blobs, blobs),
		lake.ReplaceTable(ctx, tx, schemas.Segments, f.segs),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if f.m, err = tx.Commit(ctx, lake.CommitInfo{Stage: "fixture"}); err != nil {
		t.Fatal(err)
	}
	return f
}

// without returns f's snapshot as if it lacked the named tables (a
// manifest copy; nothing is committed).
func (f *simFixture) without(tables ...string) *lake.Manifest {
	m := *f.m
	m.Tables = map[string]lake.TableFiles{}
	for n, tf := range f.m.Tables {
		m.Tables[n] = tf
	}
	for _, n := range tables {
		delete(m.Tables, n)
	}
	return &m
}

// withBlobs commits f's data with only the blobs keep allows.
func (f *simFixture) withBlobs(t *testing.T, keep func(hash string) bool) *lake.Manifest {
	t.Helper()
	ctx := context.Background()
	var blobs []schemas.Blob
	for h, b := range f.blobs {
		if keep(h) {
			blobs = append(blobs, schemas.Blob{Hash: h, Mime: "image/png", Size: int64(len(b)), Width: 1280, Height: 800, Bytes: b})
		}
	}
	tx, err := f.l.Begin(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := lake.ReplaceTable(ctx, tx, schemas.Blobs, blobs); err != nil {
		t.Fatal(err)
	}
	m, err := tx.Commit(ctx, lake.CommitInfo{Stage: "drop-blobs"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
