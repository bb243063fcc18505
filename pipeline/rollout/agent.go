// Package rollout runs policies in environments: n rollouts (a group) per
// task, each a sequence of observation, response and action, scored by the
// task's judge, as trajectories, steps and content-addressed blobs.
package rollout

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/schemas"
)

// Decision is one turn of a policy: what it wrote and the action parsed
// from it, with the tokens and log-probabilities when the policy has them.
type Decision struct {
	Action       schemas.Action
	Response     string    // the policy's full reply
	RawAction    string    // the action as written
	ResponseIDs  []int32   // token ids of the reply (empty when unknown)
	Logprobs     []float32 // their log-probabilities (empty when unknown)
	PromptTokens int32
	// PromptIDs is the turn's observation as the policy's context holds it
	// (steps.prompt_ids; empty when the policy does not say).
	PromptIDs []int32
	// Draws is how many responses the policy drew this turn: more than 1
	// when it redrew a response that was no action (0 when it does not say).
	Draws int32
}

// Turn is one past step, the history a policy's context is built from.
type Turn struct {
	Obs      simdesk.Obs
	Decision Decision
}

// Agent acts in one episode. Context management (which screenshots and how
// much history a policy sees) is the agent's own business.
type Agent interface {
	Act(ctx context.Context, task schemas.Task, obs simdesk.Obs, history []Turn) (Decision, error)
}

// AgentFactory makes the agent of one episode; seed is the episode's seed.
type AgentFactory interface {
	// Name is recorded as the trajectories' policy.
	Name() string
	// Version is recorded as the trajectories' policy_version.
	Version() int32
	New(task schemas.Task, seed int64) (Agent, error)
}

// policyAgent adapts a simdesk.Policy (actions only) to an Agent; its
// response is the action in compact text form.
type policyAgent struct{ p simdesk.Policy }

func (a policyAgent) Act(_ context.Context, _ schemas.Task, obs simdesk.Obs, _ []Turn) (Decision, error) {
	act, err := a.p.Next(obs)
	if err != nil {
		return Decision{}, err
	}
	text, err := action.Format(act)
	if err != nil {
		text = act.Kind
	}
	return Decision{Action: act, Response: text, RawAction: text}, nil
}

// Oracle is the simulator's goal-directed planner as a policy.
type Oracle struct{}

// Name implements AgentFactory.
func (Oracle) Name() string { return "oracle" }

// Version implements AgentFactory.
func (Oracle) Version() int32 { return 0 }

// New implements AgentFactory.
func (Oracle) New(task schemas.Task, _ int64) (Agent, error) {
	p, err := simdesk.Oracle(task)
	if err != nil {
		return nil, err
	}
	return policyAgent{p}, nil
}

// Random acts uniformly at random over the action space: clicks anywhere,
// typing short words, common keys, and stopping with a small probability.
type Random struct{}

// Name implements AgentFactory.
func (Random) Name() string { return "random" }

// Version implements AgentFactory.
func (Random) Version() int32 { return 0 }

// New implements AgentFactory.
func (Random) New(_ schemas.Task, seed int64) (Agent, error) {
	return &randomAgent{rng: rand.New(rand.NewPCG(uint64(seed), 0x5eed))}, nil
}

type randomAgent struct{ rng *rand.Rand }

var randomWords = []string{"hello", "report", "42", "total", "notes.txt", "yes", "budget"}
var randomKeys = []string{"enter", "tab", "escape", "backspace", "down", "up"}

func (a *randomAgent) Act(_ context.Context, _ schemas.Task, _ simdesk.Obs, _ []Turn) (Decision, error) {
	r := a.rng
	var act schemas.Action
	switch k := r.IntN(20); {
	case k < 10:
		act = action.At([]string{"click", "click", "double_click", "right_click"}[r.IntN(4)], r.IntN(1000), r.IntN(1000))
	case k < 13:
		act = action.TypeAction(randomWords[r.IntN(len(randomWords))])
	case k < 15:
		act = action.KeyAction(randomKeys[r.IntN(len(randomKeys))], 1)
	case k < 16:
		act = action.HotkeyAction("ctrl", "s")
	case k < 18:
		act = action.ScrollAction([]string{"up", "down"}[r.IntN(2)], 1+r.IntN(3))
	case k < 19:
		act = action.Simple("done")
	default:
		act = action.Simple("wait")
	}
	text, err := action.Format(act)
	if err != nil {
		return Decision{}, fmt.Errorf("random policy: %w", err)
	}
	return Decision{Action: act, Response: text, RawAction: text}, nil
}
