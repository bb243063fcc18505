package agent

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"image"
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
// the decoder starts over on the re-tokenized history. Episodes decode at
// once, each with its own decoder over the shared weights (the rollout
// stage's workers), with the bits they would have one after another.
//
// Each step records the observation message (prompt_ids), the response ids
// and their log-probabilities at the sampling temperature.
type Causal struct {
	m       *causal.Model
	version int32
	codec   *segment.Codec
	tpl     *chat.Template
	prm     segment.Params
	temp    float64
	greedy  bool
	redraws int // more responses drawn in a turn whose response is no action

	// Screens repeat within and across episodes (the same app states), and
	// decoding a 1280x800 PNG costs more than the model's turn, so patches
	// are cached by the screenshot's hash (up to maxCachedScreens).
	pmu     sync.Mutex
	patches map[[32]byte][][]float32
}

const maxCachedScreens = 8192

// screenPatches returns the patches of a PNG screenshot, cached. frame,
// when the environment gives it, is the image the PNG encodes: its patches
// equal the decoded PNG's (TestFramePatchesEqualPNG), without the decode.
func (c *Causal) screenPatches(png []byte, frame image.Image) ([][]float32, error) {
	key := sha256.Sum256(png)
	c.pmu.Lock()
	p, ok := c.patches[key]
	c.pmu.Unlock()
	if ok {
		return p, nil
	}
	var err error
	if frame != nil {
		p, err = c.m.Config().ImagePatches(frame)
	} else {
		p, err = c.m.Config().Patches(png)
	}
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
// prompt. Sampling is at temperature, or greedy; a response that is no
// action on the screen is drawn again up to redraws more times (see
// generate; loop.DefaultRedraws).
func NewCausal(m *causal.Model, v int32, tok tokenizer.Encoder, tokName string, prm segment.Params, temperature float64, greedy bool, redraws int) (*Causal, error) {
	if redraws < 0 {
		return nil, fmt.Errorf("causal policy: %d redraws, want >= 0", redraws)
	}
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
	return &Causal{m: m, version: v, codec: codec, tpl: tpl, prm: prm, temp: temperature, greedy: greedy, redraws: redraws,
		patches: map[[32]byte][][]float32{}}, nil
}

// Redraws is how many more responses a turn may draw (recorded in the
// rollout's commit params).
func (c *Causal) Redraws() int { return c.redraws }

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
	pat, err := c.screenPatches(obs.Screenshot, obs.Frame)
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
	action := func(resp []int32) (string, schemas.Action) {
		if n := len(resp); n > 0 && resp[n-1] == c.codec.ImEnd {
			resp = resp[:n-1]
		}
		text := c.codec.Enc.Decode(resp)
		return text, featurize.Decode(text, elems, task.Instruction)
	}
	valid := func(resp []int32) bool {
		_, a := action(resp)
		return a.Kind != "" && a.Kind != schemas.ActionUnknown
	}
	resp, logp, draws, err := e.generate(ctxItem, turnSeed(e.seed, turn), valid)
	if err != nil {
		return rollout.Decision{}, fmt.Errorf("causal policy v%d at turn %d: %w", c.version, turn, err)
	}
	text, a := action(resp)
	d := rollout.Decision{Action: a, Response: text, RawAction: text, ResponseIDs: resp, Logprobs: logp,
		PromptTokens: int32(len(ctxItem.IDs)), PromptIDs: obsIDs, Draws: int32(draws)}
	row := schemas.Step{TrajectoryID: task.TaskID, Step: int32(turn), RawAction: d.RawAction, Response: d.Response,
		ResponseIDs: d.ResponseIDs, Logprobs: d.Logprobs, PromptIDs: d.PromptIDs}
	row.SetAction(d.Action)
	if row.ActionKind == "" {
		row.ActionKind = schemas.ActionUnknown
	}
	e.rows = append(e.rows, row)
	return d, nil
}

// generate feeds the context to the decoder (the part it does not hold yet,
// or all of it after a pruning) and decodes a response up to <|im_end|> or
// the model's MaxResponse tokens. A response that valid refuses (text that
// is no action on this screen) is drawn again, up to c.redraws more times,
// from the same context: sampling draws afresh, so the executed response
// follows the policy's distribution restricted to executable responses (up
// to the redraw limit); greedy decoding takes, among the one-token
// deviations from the responses tried, the one whose prefix (up to and
// including the deviating token) is most probable, and continues greedily
// after it (a best-first search over prefixes). If none is valid, the
// first response is executed as written. The log-probabilities are the
// model's own at the temperature, unchanged by the redraws, so the
// trainer's recomputation matches them. It returns the response, its
// log-probabilities and the responses drawn. The decoder is left holding a
// prefix of the next turn's context: the context and the response but its
// last token (or, after a whole-response start, the context only).
func (e *causalEpisode) generate(ctxItem *segment.Item, seed uint64, valid func([]int32) bool) ([]int32, []float32, int, error) {
	c := e.c
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
		return nil, nil, 0, err
	}
	rng := rand.New(rand.NewPCG(seed, 0xca05a1))
	n0 := len(e.dec.Tokens())
	first, err := e.decode(lp, draft{}, rng)
	if err != nil {
		return nil, nil, 0, err
	}
	draws := 1
	if c.redraws == 0 || valid(first.ids) {
		return first.ids, first.logp, draws, nil
	}
	var alts []draft // greedy: the untried one-token deviations, ranked by score
	if c.greedy {
		alts = e.deviations(alts, first, 0)
	}
	for ; draws <= c.redraws; draws++ {
		start := draft{}
		if c.greedy {
			if len(alts) == 0 {
				break
			}
			start, alts = popBest(alts)
		}
		if err := e.dec.Truncate(n0); err != nil {
			return nil, nil, 0, err
		}
		r, err := e.decode(lp, start, rng)
		if err != nil {
			return nil, nil, 0, err
		}
		if valid(r.ids) {
			return r.ids, r.logp, draws + 1, nil
		}
		if c.greedy {
			alts = e.deviations(alts, r, len(start.ids))
		}
	}
	// None is an action: the first response stands, and the decoder holds
	// it again (all but its last token).
	if err := e.dec.Truncate(n0); err != nil {
		return nil, nil, 0, err
	}
	if n := len(first.ids); n > 1 {
		if _, err := e.dec.Feed(first.ids[:n-1], nil, c.temp); err != nil {
			return nil, nil, 0, err
		}
	}
	return first.ids, first.logp, draws, nil
}

// draft is a response, or the forced start of one: its token ids, their
// log-probabilities, and (greedy) the distribution each decoded position
// was drawn from.
type draft struct {
	ids   []int32
	logp  []float32
	dists [][]float32
	score float64 // a deviation start's log-probability (sum of logp); 0 on decoded responses
}

// decode continues a response from the decoder's state after the context
// (next-token distribution lp): it feeds start's tokens, then decodes up to
// <|im_end|> or MaxResponse tokens. The decoder is left holding the context
// and every token of the response but the last, or only the context when
// start is already a whole response (the next turn feeds the rest).
func (e *causalEpisode) decode(lp []float32, start draft, rng *rand.Rand) (draft, error) {
	c := e.c
	maxTok := c.m.Config().MaxResponse
	r := draft{ids: slices.Clone(start.ids), logp: slices.Clone(start.logp)}
	if n := len(r.ids); n > 0 {
		if r.ids[n-1] == c.codec.ImEnd || n >= maxTok {
			return r, nil
		}
		var err error
		if lp, err = e.dec.Feed(r.ids, nil, c.temp); err != nil {
			return draft{}, err
		}
	}
	for len(r.ids) < maxTok {
		k := argmax(lp)
		if !c.greedy {
			k = sample(lp, rng)
		}
		tok, ok := c.m.IDs().Token(int32(k))
		if !ok {
			return draft{}, fmt.Errorf("sampled compact id %d, which maps to no token", k)
		}
		r.ids = append(r.ids, tok)
		r.logp = append(r.logp, lp[k])
		if c.greedy {
			r.dists = append(r.dists, lp)
		}
		if tok == c.codec.ImEnd || len(r.ids) == maxTok {
			break
		}
		var err error
		if lp, err = e.dec.Feed([]int32{tok}, nil, c.temp); err != nil {
			return draft{}, err
		}
	}
	return r, nil
}

// deviations adds to alts, for each position of r from its decoded part
// on (r.dists[i] is position from+i's distribution), the starts that keep
// r before that position and take another token there: the c.redraws most
// probable other tokens, which are all a search of c.redraws draws can
// reach at that position.
func (e *causalEpisode) deviations(alts []draft, r draft, from int) []draft {
	c := e.c
	score := 0.0
	for i := 0; i < from; i++ {
		score += float64(r.logp[i])
	}
	for j, dist := range r.dists {
		i := from + j
		chosen := c.m.IDs().Compact(r.ids[i])
		for _, k := range topK(dist, c.redraws+1) {
			if int32(k) == chosen || dist[k] < minLogProb {
				continue
			}
			tok, ok := c.m.IDs().Token(int32(k))
			if !ok {
				continue
			}
			alts = append(alts, draft{
				ids:   append(slices.Clone(r.ids[:i]), tok),
				logp:  append(slices.Clone(r.logp[:i]), dist[k]),
				score: score + float64(dist[k]),
			})
		}
		score += float64(r.logp[i])
	}
	return alts
}

// minLogProb bounds the tokens a search may take: the ids the model never
// writes score about -1e9.
const minLogProb = -1e8

// popBest removes and returns the most probable start (the first of equals,
// so the search is deterministic).
func popBest(alts []draft) (draft, []draft) {
	best := 0
	for i, a := range alts {
		if a.score > alts[best].score {
			best = i
		}
	}
	d := alts[best]
	return d, slices.Delete(alts, best, best+1)
}

// topK returns the indices of the k largest values, largest first (lower
// index first among equals).
func topK(v []float32, k int) []int {
	idx := make([]int, 0, k+1)
	for i, x := range v {
		at := len(idx)
		for at > 0 && x > v[idx[at-1]] {
			at--
		}
		if at < k {
			idx = slices.Insert(idx, at, i)
			if len(idx) > k {
				idx = idx[:k]
			}
		}
	}
	return idx
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
