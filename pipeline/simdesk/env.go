package simdesk

import (
	"fmt"
	"image"

	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/schemas"
)

// Obs is what an environment shows the agent after Reset and after each
// Step.
type Obs struct {
	// Screenshot is a PNG of the screen; nil when the environment was asked
	// for accessibility trees only.
	Screenshot []byte
	// Frame is the rendered screen that Screenshot encodes, so an agent
	// that reads pixels need not decode the PNG again. The simulator reuses
	// it: read it before the next Step or Reset. nil where only the bytes
	// are known (tree-only, remote environments).
	Frame image.Image
	// Tree is the accessibility tree: simdesk's JSON (see Desktop.Tree), or
	// the text an OSWorld server returned under "AT" (XML on real VMs).
	Tree []byte
	// Width and Height are the screen size in pixels; actions use the
	// 1000x1000 grid whatever the size.
	Width, Height int
	// Step counts the actions taken since Reset.
	Step int
	// Done is set once the agent answered done or fail; further steps are
	// refused.
	Done bool
	// ActionError says why the last action was refused as a no-op ("" when
	// it ran). Refused actions are normal agent mistakes, not Go errors.
	ActionError string
	// Desktop is the live in-process simulator, for privileged policies
	// such as the oracle; nil for remote environments. Policies must not
	// modify it.
	Desktop *Desktop
}

// Kept returns the observation without its frame, to keep past the next
// Step (an agent's history): the simulator renders into the same frame.
func (o Obs) Kept() Obs {
	o.Frame = nil
	return o
}

// Env is an environment episode driver. The embedded simulator (Sim) and
// the OSWorld HTTP client (package osworld) both implement it, so the
// rollout stage can use either:
//
//	obs, err := env.Reset(task, seed)
//	for !obs.Done && obs.Step < maxTurns {
//		a, err := policy.Next(obs)
//		obs, err = env.Step(a)
//	}
//	score, detail, err := env.Evaluate()
//
// Go errors mean the environment itself failed (a bad task, a dead server);
// invalid actions are reported in Obs.ActionError and cost a step. An Env
// is used by one goroutine at a time.
type Env interface {
	// Reset prepares a fresh episode of task (its setup applied) for seed
	// and returns the first observation.
	Reset(task schemas.Task, seed int64) (Obs, error)
	// Step executes one action and returns the next observation.
	Step(a schemas.Action) (Obs, error)
	// Evaluate runs the task's judge on the current state: the score (0 or
	// 1) and a JSON detail for the trajectories table.
	Evaluate() (score float64, detail string, err error)
	// Close releases the environment.
	Close() error
}

// Policy chooses the next action from an observation. A policy instance
// serves one episode.
type Policy interface {
	Next(obs Obs) (schemas.Action, error)
}

// PolicyFunc adapts a function to Policy.
type PolicyFunc func(Obs) (schemas.Action, error)

// Next implements Policy.
func (f PolicyFunc) Next(o Obs) (schemas.Action, error) { return f(o) }

// Options configure a Sim.
type Options struct {
	Width, Height int  // screen size; 0 means 1280x800
	TreeOnly      bool // skip screenshots (much faster); Obs.Screenshot stays nil
}

// Sim is the embedded simulator as an Env.
type Sim struct {
	opts  Options
	d     *Desktop
	task  *schemas.Task
	judge *judge.Judge
	last  string
}

var _ Env = (*Sim)(nil)

// NewSim returns a simulator environment.
func NewSim(opts Options) (*Sim, error) {
	if opts.Width == 0 && opts.Height == 0 {
		opts.Width, opts.Height = DefaultWidth, DefaultHeight
	}
	d, err := New(opts.Width, opts.Height, 0)
	if err != nil {
		return nil, err
	}
	return &Sim{opts: opts, d: d}, nil
}

// Desktop returns the simulator behind the environment.
func (s *Sim) Desktop() *Desktop { return s.d }

// Judge returns the compiled judge of the current task (nil before Reset).
func (s *Sim) Judge() *judge.Judge { return s.judge }

// Reset implements Env.
func (s *Sim) Reset(task schemas.Task, seed int64) (Obs, error) {
	j, err := judge.Compile(task.Judge)
	if err != nil {
		return Obs{}, fmt.Errorf("simdesk: task %s: %w", task.TaskID, err)
	}
	s.d.Reset(seed)
	if err := s.d.ApplySetup(task.Setup); err != nil {
		return Obs{}, fmt.Errorf("simdesk: task %s: %w", task.TaskID, err)
	}
	// Setup steps count as no agent steps.
	s.d.S.Steps = 0
	s.task, s.judge, s.last = &task, j, ""
	return s.Observe()
}

// Step implements Env.
func (s *Sim) Step(a schemas.Action) (Obs, error) {
	if s.task == nil {
		return Obs{}, fmt.Errorf("simdesk: Step before Reset")
	}
	s.last = s.d.Apply(a)
	return s.Observe()
}

// Observe returns the observation of the current state.
func (s *Sim) Observe() (Obs, error) {
	o := Obs{Tree: s.d.Tree(), Width: s.d.S.Width, Height: s.d.S.Height, Step: s.d.S.Steps,
		Done: s.d.S.Terminal != "", ActionError: s.last, Desktop: s.d}
	if !s.opts.TreeOnly {
		png, frame, err := s.d.screenshot()
		if err != nil {
			return Obs{}, err
		}
		o.Screenshot, o.Frame = png, frame
	}
	return o, nil
}

// Evaluate implements Env.
func (s *Sim) Evaluate() (float64, string, error) {
	if s.judge == nil {
		return 0, "", fmt.Errorf("simdesk: Evaluate before Reset")
	}
	if err := s.d.ApplyPostconfig(s.judge.Postconfig); err != nil {
		return 0, "", fmt.Errorf("simdesk: task %s: evaluator.postconfig: %w", s.task.TaskID, err)
	}
	r, err := s.judge.Evaluate(s.d)
	if err != nil {
		return 0, "", fmt.Errorf("simdesk: task %s: %w", s.task.TaskID, err)
	}
	return r.Score, r.JSON(), nil
}

// Close implements Env.
func (s *Sim) Close() error { return nil }

// Episode is the record of one run of a policy.
type Episode struct {
	Actions []schemas.Action
	Errors  []string // ActionError after each action
	Score   float64
	Detail  string
	Done    bool // the policy answered done or fail
}

// Run plays one episode of pol on env for at most maxSteps actions and
// evaluates it.
func Run(env Env, pol Policy, task schemas.Task, seed int64, maxSteps int) (Episode, error) {
	var ep Episode
	obs, err := env.Reset(task, seed)
	if err != nil {
		return ep, err
	}
	for !obs.Done && len(ep.Actions) < maxSteps {
		a, err := pol.Next(obs)
		if err != nil {
			return ep, fmt.Errorf("simdesk: policy on %s step %d: %w", task.TaskID, len(ep.Actions), err)
		}
		if obs, err = env.Step(a); err != nil {
			return ep, err
		}
		ep.Actions = append(ep.Actions, a)
		ep.Errors = append(ep.Errors, obs.ActionError)
	}
	ep.Done = obs.Done
	ep.Score, ep.Detail, err = env.Evaluate()
	return ep, err
}
