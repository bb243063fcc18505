package synthesize

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cualake/cualake/pipeline/rollout"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/schemas"
)

// Issue codes of the checker.
const (
	codeJudgeError    = "judge_error"
	codeSetupFailed   = "setup_failed"
	codeInitialPasses = "initial_passes"
	codeNoPlan        = "no_plan"
	codeUnreachable   = "unreachable"
)

// checkResult is a checker's dry run: whether the goal was reached and
// whether the judge behaved (0 on the untouched state, 1 on the reached
// one).
type checkResult struct {
	ran       bool
	reachable bool
	correct   bool
	issues    []Issue
	steps     int // actions it took to reach the goal
	cost      Cost
}

func (r checkResult) reason() string {
	if !r.ran {
		return ""
	}
	if len(r.issues) == 0 {
		return fmt.Sprintf("goal reached in %d steps; the judge scores the untouched state 0 and the reached state 1", r.steps)
	}
	return reasons(r.issues)
}

// worker is what one goroutine of the stage owns: simulators are not safe
// for concurrent use.
type worker struct {
	sim    *simdesk.Sim // accessibility trees only: rules, builtin checker, referee, fixer
	screen *simdesk.Sim // with screenshots, for a policy checker (created on first use)
}

func newWorker() (*worker, error) {
	sim, err := simdesk.NewSim(simdesk.Options{TreeOnly: true})
	if err != nil {
		return nil, fmt.Errorf("synthesize: simulator: %w", err)
	}
	return &worker{sim: sim}, nil
}

// checkerRole dry-runs a candidate in a live environment.
type checkerRole interface {
	check(ctx context.Context, w *worker, c *Candidate, seed int64) checkResult
}

// initialCheck resets env to the candidate's setup and scores the untouched
// state; a non-nil result means the dry run is over.
func initialCheck(env simdesk.Env, task schemas.Task, seed int64) (*checkResult, simdesk.Obs) {
	fail := func(code, format string, a ...any) (*checkResult, simdesk.Obs) {
		return &checkResult{ran: true, issues: []Issue{{Role: RoleChecker, Code: code, Criterion: -1, Detail: fmt.Sprintf(format, a...)}}}, simdesk.Obs{}
	}
	if _, err := judge.Compile(task.Judge); err != nil {
		return fail(codeJudgeError, "the judge does not run: %v", err)
	}
	obs, err := env.Reset(task, seed)
	if err != nil {
		return fail(codeSetupFailed, "the setup fails: %v", err)
	}
	score, detail, err := env.Evaluate()
	if err != nil {
		return fail(codeJudgeError, "the judge fails on the untouched state: %v", err)
	}
	if score != 0 {
		r, _ := fail(codeInitialPasses, "the judge already scores the untouched state 1 (%s): the setup achieves the goal", clip(detail, 160))
		r.reachable = true
		return r, obs
	}
	return nil, obs
}

// builtinChecker reaches the goal with the simulator's planner, which plans
// from the judge: it proves the judge reachable and consistent, not that it
// matches the instruction (that is the judger's review).
type builtinChecker struct{}

func (builtinChecker) check(_ context.Context, w *worker, c *Candidate, seed int64) checkResult {
	task := c.task("candidate")
	task.Setup, task.Judge = c.Setup, c.Judge
	res := checkResult{ran: true, cost: Cost{Calls: 1}}
	if r, _ := initialCheck(w.sim, task, seed); r != nil {
		r.cost = res.cost
		return *r
	}
	add := func(code, format string, a ...any) checkResult {
		res.issues = append(res.issues, Issue{Role: RoleChecker, Code: code, Criterion: -1, Detail: fmt.Sprintf(format, a...)})
		return res
	}
	pol, err := simdesk.Oracle(task)
	if err != nil {
		if errors.Is(err, simdesk.ErrNoPlan) {
			return add(codeNoPlan, "no way to reach the goal was found: %v", err)
		}
		return add(codeJudgeError, "%v", err)
	}
	ep, err := simdesk.Run(w.sim, pol, task, seed, simdesk.MaxOracleSteps)
	res.steps = len(ep.Actions)
	if err != nil {
		return add(codeUnreachable, "the goal was not reached after %d steps: %v", len(ep.Actions), err)
	}
	if ep.Score != 1 {
		return add(codeUnreachable, "the planner finished after %d steps but the judge scores 0: %s", len(ep.Actions), clip(ep.Detail, 200))
	}
	res.reachable, res.correct = true, true
	return res
}

// policyChecker acts in the environment through a rollout policy (an
// OpenAI-compatible model, or any rollout.AgentFactory), following the
// instruction as an agent would.
type policyChecker struct {
	f        rollout.AgentFactory
	maxTurns int
	treeOnly bool
}

func (p policyChecker) check(ctx context.Context, w *worker, c *Candidate, seed int64) checkResult {
	task := c.task("candidate")
	task.Setup, task.Judge = c.Setup, c.Judge
	res := checkResult{ran: true}
	env := w.sim
	if !p.treeOnly {
		if w.screen == nil {
			s, err := simdesk.NewSim(simdesk.Options{})
			if err != nil {
				res.issues = []Issue{{Role: RoleChecker, Code: codeSetupFailed, Criterion: -1, Detail: err.Error()}}
				return res
			}
			w.screen = s
		}
		env = w.screen
	}
	r, obs := initialCheck(env, task, seed)
	if r != nil {
		return *r
	}
	add := func(code, format string, a ...any) checkResult {
		res.issues = append(res.issues, Issue{Role: RoleChecker, Code: code, Criterion: -1, Detail: fmt.Sprintf(format, a...)})
		return res
	}
	agent, err := p.f.New(task, seed)
	if err != nil {
		return add(codeUnreachable, "checker policy %s: %v", p.f.Name(), err)
	}
	var history []rollout.Turn
	for turn := 0; !obs.Done && turn < p.maxTurns; turn++ {
		if err := ctx.Err(); err != nil {
			return add(codeUnreachable, "stopped: %v", err)
		}
		d, err := agent.Act(ctx, task, obs, history)
		res.cost.Calls++
		res.cost.Tokens += int64(d.PromptTokens) + int64(len(d.ResponseIDs))
		if err != nil {
			return add(codeUnreachable, "checker policy %s at step %d: %v", p.f.Name(), turn, err)
		}
		history = append(history, rollout.Turn{Obs: obs.Kept(), Decision: d})
		if obs, err = env.Step(d.Action); err != nil {
			return add(codeSetupFailed, "the environment failed at step %d: %v", turn, err)
		}
		res.steps++
	}
	score, detail, err := env.Evaluate()
	if err != nil {
		return add(codeJudgeError, "the judge fails on the reached state: %v", err)
	}
	if !obs.Done || score != 1 {
		return add(codeUnreachable, "the checker policy did not reach the goal in %d steps (ended: %v, score %v): %s", res.steps, obs.Done, score, clip(detail, 200))
	}
	res.reachable, res.correct = true, true
	return res
}

// referee measures executability, independently of the roles under test:
// the judge runs, scores the untouched state 0, and scores 1 the state
// reached by doing what the instruction means. What the instruction means
// is the proposer's reference when it has one (the builtin grammar, split
// and composed tasks): its inputs must exist, its key values must be stated,
// and the planner reaches its goal from the candidate's setup. Without a
// reference (a model's proposal) the checker's dry run is all there is.
func referee(w *worker, c *Candidate, chk checkResult, seed int64) (bool, string) {
	if c.ref == nil {
		if !chk.ran {
			return false, "not dry-run"
		}
		return chk.reachable && chk.correct, "the checker's dry run"
	}
	j, err := judge.Compile(c.Judge)
	if err != nil {
		return false, "the judge does not compile"
	}
	// The inputs are the files the intended setup leaves in place.
	d := w.sim.Desktop()
	d.Reset(seed)
	var inputs []string
	if err := d.ApplySetup(c.ref.setup); err == nil {
		for p := range setupFiles(c.ref.setup) {
			if ok, _, _ := d.Stat(p); ok {
				inputs = append(inputs, p)
			}
		}
	}
	task := schemas.Task{TaskID: "referee", Setup: c.Setup, Judge: c.Judge}
	if _, err := w.sim.Reset(task, seed); err != nil {
		return false, "the setup fails"
	}
	score, _, err := w.sim.Evaluate()
	if err != nil {
		return false, "the judge fails on the untouched state"
	}
	if score != 0 {
		return false, "the untouched state already scores 1"
	}
	for _, p := range inputs {
		if ok, _, _ := d.Stat(p); !ok {
			return false, "an input file the instruction presupposes is missing"
		}
	}
	ins := normText(c.Instruction)
	for _, lit := range c.ref.conveys {
		if !containsNorm(ins, lit) {
			return false, fmt.Sprintf("the instruction does not state %q", clip(lit, 40))
		}
	}
	refTask := schemas.Task{TaskID: "referee", Setup: c.Setup, Judge: c.ref.judge}
	pol, err := simdesk.Oracle(refTask)
	if err != nil {
		return false, "the intended goal cannot be planned"
	}
	ep, err := simdesk.Run(w.sim, pol, refTask, seed, simdesk.MaxOracleSteps)
	if err != nil || ep.Score != 1 {
		return false, "the intended goal is not reachable from this setup"
	}
	r, err := j.Evaluate(w.sim.Desktop())
	if err != nil {
		return false, "the judge fails on the intended outcome"
	}
	if r.Score != 1 {
		return false, "the judge scores the intended outcome 0"
	}
	return true, "the judge scores the intended outcome 1 and the untouched state 0"
}

func containsNorm(normHay, lit string) bool {
	n := normText(lit)
	return n == "" || strings.Contains(normHay, n)
}
