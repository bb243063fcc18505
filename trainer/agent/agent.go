// Package agent serves a trained checkpoint as a rollout policy and turns
// recorded episodes back into training items: both sides build the policy's
// context the same way (trainer/featurize), so training sees exactly what
// the policy saw.
package agent

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"sync"

	"github.com/cualake/cualake/pipeline/rollout"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/schemas"
	"github.com/cualake/cualake/trainer/featurize"
	"github.com/cualake/cualake/trainer/policy"
)

// BuildContext returns the policy's context ids for one turn; history is
// every action taken so far (the context shows the count and the last
// featurize.HistoryTurns).
func BuildContext(v *policy.Vocab, maxContext int, instruction string, tree []byte, history []string) ([]int32, []featurize.Element, error) {
	elems, err := featurize.Elements(tree)
	if err != nil {
		return nil, nil, err
	}
	ids := v.Encode(featurize.Context(instruction, elems, history))
	if len(ids) > maxContext {
		ids = ids[:maxContext] // the task and history come first; far elements go
	}
	return ids, elems, nil
}

// Checkpoint is a trained policy as a rollout.AgentFactory.
type Checkpoint struct {
	mu      sync.Mutex // a policy is not safe for concurrent use
	p       *policy.Policy
	version int32
	opts    policy.SampleOptions
	greedy  bool
}

// NewCheckpoint serves p as policy version v, sampling with opts (greedy
// decoding when greedy is set).
func NewCheckpoint(p *policy.Policy, v int32, opts policy.SampleOptions, greedy bool) *Checkpoint {
	return &Checkpoint{p: p, version: v, opts: opts, greedy: greedy}
}

// Name implements rollout.AgentFactory.
func (c *Checkpoint) Name() string { return "checkpoint" }

// Version implements rollout.AgentFactory.
func (c *Checkpoint) Version() int32 { return c.version }

// New implements rollout.AgentFactory.
func (c *Checkpoint) New(task schemas.Task, seed int64) (rollout.Agent, error) {
	return &episode{c: c, seed: seed}, nil
}

type episode struct {
	c    *Checkpoint
	seed int64
}

// Act implements rollout.Agent: featurize, sample action tokens with their
// log-probabilities, and resolve them against the screen.
func (e *episode) Act(_ context.Context, task schemas.Task, obs simdesk.Obs, history []rollout.Turn) (rollout.Decision, error) {
	var hist []string
	for _, t := range history {
		hist = append(hist, t.Decision.RawAction)
	}
	c := e.c
	ids, elems, err := BuildContext(c.p.Vocab(), c.p.Config().MaxContext, task.Instruction, obs.Tree, hist)
	if err != nil {
		return rollout.Decision{}, err
	}
	opts := c.opts
	opts.Seed = turnSeed(e.seed, len(history))
	c.mu.Lock()
	var acts []policy.Action
	if c.greedy {
		acts, err = c.p.Greedy([]policy.Input{{Tokens: ids}}, 0)
	} else {
		acts, err = c.p.Sample([]policy.Input{{Tokens: ids}}, opts)
	}
	var text string
	if err == nil {
		text = c.p.Text(acts[0])
	}
	c.mu.Unlock()
	if err != nil {
		return rollout.Decision{}, fmt.Errorf("checkpoint v%d: %w", c.version, err)
	}
	a := featurize.Decode(text, elems, task.Instruction)
	return rollout.Decision{Action: a, Response: text, RawAction: text, ResponseIDs: acts[0].Tokens, Logprobs: acts[0].Logp,
		PromptTokens: int32(len(ids))}, nil
}

func turnSeed(seed int64, turn int) uint64 {
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(seed))
	binary.LittleEndian.PutUint64(b[8:], uint64(turn))
	h.Write(b[:])
	return h.Sum64()
}
