package agent

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/cualake/cualake/pipeline/chat"
	"github.com/cualake/cualake/pipeline/rollout"
	"github.com/cualake/cualake/pipeline/segment"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/tokenizer"
	"github.com/cualake/cualake/schemas"
	"github.com/cualake/cualake/trainer/causal"
	"github.com/cualake/cualake/trainer/featurize"
)

// Causal serves a causal checkpoint as a rollout.AgentFactory. Each turn
// the episode's context is segment.Context over the turns so far, under
// the context mode it was given (window: ScaleCUA's K + Delta screenshots,
// pruned by Delta; step; trajectory), in the pointer view with the model's
// image tokens: exactly the stream the segment stage will cut from the
// recorded steps, so GRPO scores every response in the context it was
// sampled in. The model reads that stream through a KV-cache decoder: a
// turn feeds only what the context gained since the last one (the closing
// of the response, the new observation) unless the window was pruned, when
// the decoder starts over on the re-tokenized history.
//
// Each step records the observation message (prompt_ids), the response ids
// and their log-probabilities at the sampling temperature.
type Causal struct {
	mu      sync.Mutex // a model is not safe for concurrent use
	m       *causal.Model
	version int32
	codec   *segment.Codec
	tpl     *chat.Template
	prm     segment.Params
	temp    float64
	greedy  bool

	// Screens repeat within and across episodes (the same app states), and
	// decoding a 1280x800 PNG costs more than the model's turn, so patches
	// are cached by the screenshot's hash (up to maxCachedScreens).
	pmu     sync.Mutex
	patches map[[32]byte][][]float32
}

const maxCachedScreens = 8192

// screenPatches returns the patches of a PNG screenshot, cached.
func (c *Causal) screenPatches(png []byte) ([][]float32, error) {
	key := sha256.Sum256(png)
	c.pmu.Lock()
	p, ok := c.patches[key]
	c.pmu.Unlock()
	if ok {
		return p, nil
	}
	p, err := c.m.Config().Patches(png)
	if err != nil {
		return nil, err
	}
	c.pmu.Lock()
	if len(c.patches) >= maxCachedScreens {
		clear(c.patches)
	}
	c.patches[key] = p
	c.pmu.Unlock()
	return p, nil
}

// NewCausal serves m as policy version v. tok must be the tokenizer the
// model reads (tokName, compared with the checkpoint's); prm gives the
// context mode (Mode, K, Delta, Window), the rest is set from the model:
// the pointer view, a fixed ImageTokens per screenshot, the default system
// prompt. Sampling is at temperature, or greedy.
func NewCausal(m *causal.Model, v int32, tok tokenizer.Encoder, tokName string, prm segment.Params, temperature float64, greedy bool) (*Causal, error) {
	if tokName != m.Tokenizer() {
		return nil, fmt.Errorf("causal policy v%d reads tokenizer %q, the rollout has %q", v, m.Tokenizer(), tokName)
	}
	if !greedy && (!(temperature > 0) || math.IsInf(temperature, 0)) {
		return nil, fmt.Errorf("causal policy: temperature %v must be positive (or decode greedily)", temperature)
	}
	prm.View = segment.ViewPointer
	prm.Image = chat.ImageSpec{FixedTokens: m.Config().ImageTokens()}
	if prm.System == "" {
		prm.System = segment.DefaultSystem
	}
	if err := prm.Validate(); err != nil {
		return nil, fmt.Errorf("causal policy context: %w", err)
	}
	codec, err := segment.NewCodec(tok)
	if err != nil {
		return nil, err
	}
	tpl, err := chat.New(tok, prm.Image)
	if err != nil {
		return nil, err
	}
	sp := m.Special()
	if sp.ImEnd != codec.ImEnd || sp.ImagePad != codec.ImagePad || sp.VisionStart != codec.VisionStart {
		return nil, errors.New("causal policy: the tokenizer's template tokens differ from the checkpoint's")
	}
	if greedy {
		temperature = 1
	}
	return &Causal{m: m, version: v, codec: codec, tpl: tpl, prm: prm, temp: temperature, greedy: greedy,
		patches: map[[32]byte][][]float32{}}, nil
}

// Context returns the context parameters the rollouts use (what `segment`
// must be run with to rebuild them).
func (c *Causal) Context() segment.Params { return c.prm }

// Name implements rollout.AgentFactory.
func (c *Causal) Name() string { return "checkpoint" }

// Version implements rollout.AgentFactory.
func (c *Causal) Version() int32 { return c.version }

// New implements rollout.AgentFactory.
func (c *Causal) New(task schemas.Task, seed int64) (rollout.Agent, error) {
	b, err := segment.NewBuilder(c.codec, c.tpl, c.prm.System)
	if err != nil {
		return nil, err
	}
	b.WithView(segment.ViewPointer)
	return &causalEpisode{c: c, b: b, seed: seed, dec: c.m.NewDecoder()}, nil
}

type causalEpisode struct {
	c       *Causal
	b       *segment.Builder
	seed    int64
	dec     *causal.Decoder
	rows    []schemas.Step // the turns so far, as the steps table will hold them
	patches [][][]float32  // each turn's screenshot patches
}

// Close releases the decoder's cached keys and values.
func (e *causalEpisode) Close() {
	e.c.mu.Lock()
	defer e.c.mu.Unlock()
	e.dec.Close()
}

// Act implements rollout.Agent.
func (e *causalEpisode) Act(_ context.Context, task schemas.Task, obs simdesk.Obs, history []rollout.Turn) (rollout.Decision, error) {
	c := e.c
	turn := len(history)
	if turn != len(e.rows) {
		return rollout.Decision{}, fmt.Errorf("causal policy: turn %d, but the episode has %d turns recorded", turn, len(e.rows))
	}
	if obs.Screenshot == nil {
		return rollout.Decision{}, errors.New("causal policy: the observation has no screenshot (it reads pixels: roll out without --tree-only)")
	}
	screen, elems, err := segment.ScreenText(int32(turn), obs.Tree, task.Instruction)
	if err != nil {
		return rollout.Decision{}, fmt.Errorf("causal policy: %w", err)
	}
	obsIDs, err := e.b.ObservationIDs(0, 0, screen)
	if err != nil {
		return rollout.Decision{}, fmt.Errorf("causal policy: %w", err)
	}
	pat, err := c.screenPatches(obs.Screenshot)
	if err != nil {
		return rollout.Decision{}, fmt.Errorf("causal policy: %w", err)
	}
	pending := schemas.Step{TrajectoryID: task.TaskID, Step: int32(turn), PromptIDs: obsIDs, ResponseIDs: []int32{c.codec.ImEnd}}
	prep, err := e.b.Prepare(segment.Input{Trajectory: &schemas.Trajectory{TrajectoryID: task.TaskID}, Steps: append(slices.Clone(e.rows), pending),
		Instruction: task.Instruction})
	if err != nil {
		return rollout.Decision{}, fmt.Errorf("causal policy: %w", err)
	}
	ctxItem, err := segment.Context(c.codec, prep, c.prm)
	if err != nil {
		return rollout.Decision{}, fmt.Errorf("causal policy: %w", err)
	}
	e.patches = append(e.patches, pat)
	resp, logp, err := e.generate(ctxItem, turnSeed(e.seed, turn))
	if err != nil {
		return rollout.Decision{}, fmt.Errorf("causal policy v%d at turn %d: %w", c.version, turn, err)
	}
	ids := resp
	if n := len(ids); n > 0 && ids[n-1] == c.codec.ImEnd {
		ids = ids[:n-1]
	}
	text := c.codec.Enc.Decode(ids)
	a := featurize.Decode(text, elems, task.Instruction)
	d := rollout.Decision{Action: a, Response: text, RawAction: text, ResponseIDs: resp, Logprobs: logp,
		PromptTokens: int32(len(ctxItem.IDs)), PromptIDs: obsIDs}
	row := schemas.Step{TrajectoryID: task.TaskID, Step: int32(turn), RawAction: d.RawAction, Response: d.Response,
		ResponseIDs: d.ResponseIDs, Logprobs: d.Logprobs, PromptIDs: d.PromptIDs}
	row.SetAction(d.Action)
	if row.ActionKind == "" {
		row.ActionKind = "unknown"
	}
	e.rows = append(e.rows, row)
	return d, nil
}

// generate feeds the context to the decoder (the part it does not hold yet,
// or all of it after a pruning) and samples a response up to <|im_end|> or
// the model's MaxResponse tokens.
func (e *causalEpisode) generate(ctxItem *segment.Item, seed uint64) ([]int32, []float32, error) {
	c := e.c
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := ctxItem.IDs
	cached := e.dec.Tokens()
	from := len(cached)
	if len(cached) > len(ids) || !slices.Equal(ids[:len(cached)], cached) {
		e.dec.Reset()
		from = 0
	}
	// the screenshots of the part fed: those after the vision blocks cached
	seen := 0
	for _, id := range ids[:from] {
		if id == c.codec.VisionStart {
			seen++
		}
	}
	var imgs [][][]float32
	for _, turn := range ctxItem.ImageTurns[seen:] {
		imgs = append(imgs, e.patches[turn])
	}
	lp, err := e.dec.Feed(ids[from:], imgs, c.temp)
	if err != nil {
		return nil, nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0xca05a1))
	maxTok := c.m.Config().MaxResponse
	var resp []int32
	var logp []float32
	for len(resp) < maxTok {
		k := argmax(lp)
		if !c.greedy {
			k = sample(lp, rng)
		}
		tok, ok := c.m.IDs().Token(int32(k))
		if !ok {
			return nil, nil, fmt.Errorf("sampled compact id %d, which maps to no token", k)
		}
		resp = append(resp, tok)
		logp = append(logp, lp[k])
		if tok == c.codec.ImEnd || len(resp) == maxTok {
			break
		}
		if lp, err = e.dec.Feed([]int32{tok}, nil, c.temp); err != nil {
			return nil, nil, err
		}
	}
	return resp, logp, nil
}

func argmax(lp []float32) int {
	best := 0
	for i, v := range lp {
		if v > lp[best] {
			best = i
		}
	}
	return best
}

// sample draws an index from log-probabilities.
func sample(lp []float32, rng *rand.Rand) int {
	total := 0.0
	for _, v := range lp {
		total += math.Exp(float64(v))
	}
	u := rng.Float64() * total
	last := 0
	for i, v := range lp {
		p := math.Exp(float64(v))
		if p == 0 {
			continue
		}
		last = i
		if u -= p; u < 0 {
			return i
		}
	}
	return last
}
