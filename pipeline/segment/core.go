package segment

import (
	"errors"
	"math"
	"slices"
)

// Turn is one turn of a prepared trajectory: the screenshot the policy saw
// and the response it gave, in the forms the modes need.
type Turn struct {
	// Step is the turn's step number in the steps table.
	Step int32
	// Image is the screenshot's blob hash (steps.observation; "" when none
	// was recorded).
	Image string
	// Fresh is the observation (a user message with the screenshot, then
	// the assistant header) following closed context: the prefix, a summary
	// or a closed turn. Live is the same observation appended right after
	// the previous turn's response, which it first closes.
	Fresh, Live Piece
	// Resp are the response tokens, trained once; Logp their rollout
	// log-probabilities (nil when the rollout recorded none).
	Resp []int32
	Logp []float32
	// Ctx is the whole turn, closed, re-tokenized as context, and Summary
	// its compact text once its screenshot is dropped. Prepared.Fill sets
	// them on first use, since trajectory mode never needs them.
	Ctx, Summary Piece
	ready        bool
}

// Prepared is a trajectory rendered into pieces: the prefix (system prompt
// and instruction) and its turns, in step order. Every turn holds exactly
// one screenshot.
type Prepared struct {
	Prefix Piece
	Turns  []Turn
	// Fill sets Turns[i].Ctx and Summary; nil when they are set already.
	Fill func(i int, t *Turn) error
}

func (g *segmenter) ctx(i int) *Piece {
	g.ensure(i)
	return &g.p.Turns[i].Ctx
}

func (g *segmenter) summary(i int) *Piece {
	g.ensure(i)
	return &g.p.Turns[i].Summary
}

func (g *segmenter) ensure(i int) {
	t := &g.p.Turns[i]
	if !t.ready && g.p.Fill != nil {
		if err := g.p.Fill(i, t); err != nil && g.err == nil {
			g.err = err
		}
	}
	t.ready = true
}

// Item is one training item: a token stream and which turns it trains.
type Item struct {
	IDs  []int32
	Mask []int8
	Logp []float32
	// HasLogprobs is false when a trained token has no recorded
	// log-probability (its Logp is 0).
	HasLogprobs bool
	// Images, ImageTokens and Trainable count screenshots, their pad
	// tokens and mask-1 tokens.
	Images, ImageTokens, Trainable int
	// First and Last index the turns whose responses are trained here.
	First, Last int
	// ImageTurns holds, for each screenshot of the stream in order, the
	// index of the turn it belongs to.
	ImageTurns []int
}

// Segment cuts a prepared trajectory into items under the mode of prm
// (which must be valid). It returns the items in order and the number of
// observation appends whose boundary merged under re-tokenization.
func Segment(c *Codec, p *Prepared, prm Params) ([]Item, int, error) {
	return (*Pool)(nil).Segment(c, p, prm)
}

// Segment is Segment with the items' arrays taken from the pool; give them
// back with Release once consumed.
func (pool *Pool) Segment(c *Codec, p *Prepared, prm Params) ([]Item, int, error) {
	if len(p.Turns) == 0 {
		return nil, 0, nil
	}
	g := segmenter{c: c, p: p, pool: pool}
	g.run(prm)
	if g.err != nil {
		return nil, 0, g.err
	}
	return g.items, g.s.Merges, nil
}

// Context is the stream the policy reads before it writes the last turn's
// response, under the mode of prm: the item that will train that response,
// up to its observation. The last turn's Resp is not read (a rollout does
// not have it yet). A rollout that builds its context with Context and
// records each turn's observation (steps.prompt_ids) and response gets,
// from Segment, items whose every trained token was scored in exactly the
// context it was sampled in.
func Context(c *Codec, p *Prepared, prm Params) (*Item, error) {
	if len(p.Turns) == 0 {
		return nil, errors.New("segment context: no turns")
	}
	g := segmenter{c: c, p: p, open: true}
	g.run(prm)
	if g.err != nil {
		return nil, g.err
	}
	it := g.items[len(g.items)-1]
	return &it, nil
}

func (g *segmenter) run(prm Params) {
	switch prm.Mode {
	case ModeStep:
		g.step(prm.Window)
	case ModeWindow:
		g.window(prm.K+prm.Delta, prm.Delta)
	default:
		g.window(math.MaxInt, 1)
	}
}

type segmenter struct {
	pool  *Pool
	c     *Codec
	p     *Prepared
	s     Stream
	items []Item
	err   error
	// open withholds the last turn's response (Context).
	open bool
	// images are the turns of the stream's screenshots so far.
	images []int
}

func (g *segmenter) emit(first, last int) {
	s := &g.s
	g.items = append(g.items, Item{IDs: s.IDs(), Mask: s.Mask(), Logp: s.Logp(), HasLogprobs: s.NoLogprobs == 0,
		Images: s.Images, ImageTokens: s.ImageTokens, Trainable: s.Trainable, First: first, Last: last,
		ImageTurns: slices.Clone(g.images)})
}

// reset starts a fresh stream of about n tokens.
func (g *segmenter) reset(n int) {
	g.s.reset(g.pool, n)
	g.images = g.images[:0]
}

// context appends piece p with mask 0; turn is the turn whose screenshot it
// holds (-1 for none).
func (g *segmenter) context(p *Piece, turn int) {
	g.s.AppendContext(g.c, p)
	if turn >= 0 && p.Images > 0 {
		g.images = append(g.images, turn)
	}
}

// respond appends turn t's response, unless it is the withheld last one.
func (g *segmenter) respond(t int) bool {
	if g.open && t == len(g.p.Turns)-1 {
		return false
	}
	g.s.AppendResponse(g.c, g.p.Turns[t].Resp, g.p.Turns[t].Logp)
	return true
}

// window is Algorithm 2 with limit = K + Delta: after each response the
// next screenshot arrives; if the history would then hold more than limit
// screenshots, the stream is saved, the oldest delta turns lose their
// screenshots (keeping their summaries) and the retained history is
// re-tokenized with mask 0; otherwise the observation is appended as a
// token diff. Trajectory mode is the same with no limit.
func (g *segmenter) window(limit, delta int) {
	p := g.p
	T := len(p.Turns)
	first, start := 0, 0 // first turn kept in full; first turn trained in this item
	g.reset(g.sizeHint(p.Prefix.Len+p.Turns[0].Fresh.Len, 0, 1, limit))
	g.context(&p.Prefix, -1)
	g.context(&p.Turns[0].Fresh, 0)
	n := 1 // screenshots in the history
	for t := 0; t < T; t++ {
		if !g.respond(t) || t == T-1 {
			break
		}
		if n+1 <= limit {
			g.context(&p.Turns[t+1].Live, t+1)
			n++
			continue
		}
		g.emit(start, t)
		first += delta
		n = n + 1 - delta
		start = t + 1
		head := p.Prefix.Len + p.Turns[start].Fresh.Len
		for i := 0; i < first; i++ {
			head += g.summary(i).Len
		}
		for i := first; i < start; i++ {
			head += g.ctx(i).Len
		}
		g.reset(g.sizeHint(head, start, n, limit))
		g.context(&p.Prefix, -1)
		for i := 0; i < first; i++ {
			g.context(g.summary(i), -1)
		}
		for i := first; i < start; i++ {
			g.context(g.ctx(i), i)
		}
		g.context(&p.Turns[start].Fresh, start)
	}
	g.emit(start, T-1)
}

// sizeHint is the exact length of the item that starts training turn start
// with n screenshots and head context tokens, when every boundary is hard.
func (g *segmenter) sizeHint(head, start, n, limit int) int {
	T := len(g.p.Turns)
	end := T - 1
	if limit != math.MaxInt && start+limit-n < end {
		end = start + limit - n
	}
	size := head
	for t := start; t <= end; t++ {
		size += len(g.p.Turns[t].Resp)
		if t > start {
			size += g.p.Turns[t].Live.Len
		}
	}
	return size
}

// step makes one item per turn t: the prefix, summaries of turns before
// t - w, turns t - w .. t - 1 in full, then turn t's observation and its
// response, the only trained tokens (EvoCUA-1.5 eq. 4).
func (g *segmenter) step(w int) {
	p := g.p
	for t := range p.Turns {
		if g.open && t < len(p.Turns)-1 {
			continue // only the last turn's context is wanted
		}
		lo := max(0, t-w)
		size := p.Prefix.Len + p.Turns[t].Fresh.Len + len(p.Turns[t].Resp)
		for i := 0; i < t; i++ {
			if i < lo {
				size += g.summary(i).Len
			} else {
				size += g.ctx(i).Len
			}
		}
		g.reset(size)
		g.context(&p.Prefix, -1)
		for i := 0; i < lo; i++ {
			g.context(g.summary(i), -1)
		}
		for i := lo; i < t; i++ {
			g.context(g.ctx(i), i)
		}
		g.context(&p.Turns[t].Fresh, t)
		g.respond(t)
		g.emit(t, t)
	}
}
