package verify

import (
	"context"
	"fmt"
	"testing"

	"github.com/cualake/cualake/pipeline/rollout"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/schemas"
)

// step computes one scripted action from the current screen.
type step func(s *Screen) (schemas.Action, error)

func click(id string) step {
	return func(s *Screen) (schemas.Action, error) {
		n := s.Find(id)
		if n == nil {
			return schemas.Action{}, fmt.Errorf("%s is not visible", id)
		}
		return clickAt(action.Click, n), nil
	}
}

func keys(k ...string) step {
	return func(*Screen) (schemas.Action, error) { return action.HotkeyAction(k...), nil }
}

func typeText(text string) step {
	return func(*Screen) (schemas.Action, error) { return action.TypeAction(text), nil }
}

func finish(kind string) step {
	return func(*Screen) (schemas.Action, error) { return action.Simple(kind), nil }
}

// script is an agent that plays steps, reading the accessibility tree the
// way any agent does.
type script struct{ steps []step }

func (script) Name() string   { return "script" }
func (script) Version() int32 { return 0 }
func (s script) New(schemas.Task, int64) (rollout.Agent, error) {
	return &scriptAgent{steps: s.steps}, nil
}

type scriptAgent struct {
	steps []step
	i     int
}

func (a *scriptAgent) Act(_ context.Context, _ schemas.Task, obs simdesk.Obs, _ []rollout.Turn) (rollout.Decision, error) {
	if a.i >= len(a.steps) {
		return rollout.Decision{}, fmt.Errorf("script ran out of steps")
	}
	s, err := ParseScreen(obs.Tree)
	if err != nil {
		return rollout.Decision{}, err
	}
	act, err := a.steps[a.i](s)
	if err != nil {
		return rollout.Decision{}, fmt.Errorf("script step %d: %w", a.i+1, err)
	}
	a.i++
	text, _ := action.Format(act)
	return rollout.Decision{Action: act, Response: text, RawAction: text}, nil
}

// episode rolls a script out once on the simulator with screenshots.
func episode(t *testing.T, task schemas.Task, seed int64, steps ...step) *rollout.Episode {
	t.Helper()
	p := rollout.DefaultParams()
	p.N, p.MaxTurns, p.Seed, p.Workers = 1, len(steps)+1, seed, 1
	var out *rollout.Episode
	err := rollout.Run(context.Background(), []schemas.Task{task}, script{steps}, rollout.SimEnvs(p), p, func(ep rollout.Episode) error {
		out = &ep
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Trajectory.Outcome == schemas.OutcomeError {
		t.Fatalf("episode failed: %s", out.Trajectory.Error)
	}
	return out
}

func input(t *testing.T, ep *rollout.Episode) *Input {
	t.Helper()
	in, err := InputFromEpisode(ep, DefaultWindow)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func fileJudge(p, want string) string {
	return judge.Build("and", judge.Criterion{Func: "exact_match", Result: &judge.Getter{Type: "file_content", Path: p},
		Expected: &judge.Getter{Type: "rule", Rules: &judge.Rules{Expected: want}}, Options: judge.Options{Strip: true}})
}

func task(id, domain, instruction string, setup []simdesk.SetupStep, judgeSpec string) schemas.Task {
	return schemas.Task{TaskID: id, Domain: domain, App: domain, Instruction: instruction, Setup: simdesk.BuildSetup(setup...),
		Judge: judgeSpec, Feasible: true, Source: schemas.SourceSeed}
}

// verifyAll runs passive and builtin on an input.
func verifyAll(t *testing.T, in *Input) (passive, builtin schemas.Verification, att *Attempt) {
	t.Helper()
	ctx := context.Background()
	pa, err := NewRunner(Passive(), nil, true).Run(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	ba, err := NewRunner(Builtin(), nil, true).Run(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	return pa.Row(in, StrategyPassive), ba.Row(in, StrategyBuiltin), ba
}
