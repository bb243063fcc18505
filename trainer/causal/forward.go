package causal

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"github.com/cualake/cualake/trainer/internal/tx"
)

// Input is one token stream in tokenizer ids and, for each
// <|vision_start|> ... <|vision_end|> block in it, in order, the
// screenshot's patches: Config.ImageTokens vectors of Config.PatchDim
// values (Patches makes them from a PNG).
type Input struct {
	IDs    []int32
	Images [][][]float32
}

// stream is an Input checked and turned into what the forward pass reads.
type stream struct {
	ids    []int64   // compact ids
	padPos []int64   // positions of the <|image_pad|> tokens
	padIdx []int64   // each pad's index within its screenshot
	feats  []float32 // [len(padPos), PatchDim] the pads' patches
}

// prepare checks in (starting at absolute position pos0) and converts it.
// Vision blocks must be whole: every <|vision_start|> is closed by a
// <|vision_end|> after exactly ImageTokens pads, and pads occur only there.
func (m *Model) prepare(in Input, pos0 int) (*stream, error) {
	c := m.cfg
	if len(in.IDs) == 0 {
		return nil, errors.New("empty stream")
	}
	if pos0+len(in.IDs) > c.MaxContext {
		return nil, fmt.Errorf("stream reaches %d tokens, max_context is %d", pos0+len(in.IDs), c.MaxContext)
	}
	st := &stream{ids: make([]int64, len(in.IDs))}
	sp, n, pd := m.special, c.ImageTokens(), c.PatchDim()
	block, pads := -1, 0 // block: index of the open vision block, -1 when none
	blocks := 0
	for i, id := range in.IDs {
		if id < 0 {
			return nil, fmt.Errorf("token %d: negative id %d", pos0+i, id)
		}
		st.ids[i] = int64(m.ids.Compact(id))
		switch id {
		case sp.VisionStart:
			if block >= 0 {
				return nil, fmt.Errorf("token %d: vision block opened inside another", pos0+i)
			}
			if blocks >= len(in.Images) {
				return nil, fmt.Errorf("token %d: vision block %d has no screenshot (%d given)", pos0+i, blocks, len(in.Images))
			}
			block, pads = blocks, 0
			blocks++
		case sp.ImagePad:
			if block < 0 {
				return nil, fmt.Errorf("token %d: image pad outside a vision block", pos0+i)
			}
			if pads >= n {
				return nil, fmt.Errorf("token %d: vision block %d has more than %d image pads", pos0+i, block, n)
			}
			img := in.Images[block]
			if len(img) != n {
				return nil, fmt.Errorf("screenshot %d has %d patches, the model reads %d", block, len(img), n)
			}
			f := img[pads]
			if len(f) != pd {
				return nil, fmt.Errorf("screenshot %d patch %d has %d values, patch_dim is %d", block, pads, len(f), pd)
			}
			for _, x := range f {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					return nil, fmt.Errorf("screenshot %d patch %d has a non-finite value", block, pads)
				}
			}
			st.padPos = append(st.padPos, int64(i))
			st.padIdx = append(st.padIdx, int64(pads))
			st.feats = append(st.feats, f...)
			pads++
		case sp.VisionEnd:
			if block < 0 {
				return nil, fmt.Errorf("token %d: vision block closed but never opened", pos0+i)
			}
			if pads != n {
				return nil, fmt.Errorf("token %d: vision block %d holds %d image pads, the model reads %d per screenshot", pos0+i, block, pads, n)
			}
			block = -1
		}
	}
	if block >= 0 {
		return nil, fmt.Errorf("vision block %d is not closed by the end of the stream", block)
	}
	if blocks != len(in.Images) {
		return nil, fmt.Errorf("%d screenshots for %d vision blocks", len(in.Images), blocks)
	}
	return st, nil
}

// cache holds each layer's keys and values of the tokens seen so far, for
// incremental decoding: buffers [H, capacity, dh] whose first n positions
// hold them. A new token's keys are written in place, so a decoding step
// copies one token's keys, not the whole cache (which concatenation would,
// per token and layer), and truncating is forgetting positions.
type cache struct {
	k, v []*ts.Tensor
	n    int
}

// minCacheTokens is a cache's first capacity; it doubles when outgrown.
const minCacheTokens = 512

// put writes layer l's keys and values of the T new tokens (k, v:
// [H, T, dh]) at positions P.. of the buffers, growing them when full, and
// returns views of positions 0..P+T: what attention reads.
func (c *cache) put(s *tx.Scope, l int, k, v *ts.Tensor, P, T int64, dev gotch.Device) (*ts.Tensor, *ts.Tensor) {
	sh := s.Shape(k) // [H, T, dh]
	if s.Err() != nil {
		return nil, nil
	}
	have := int64(0)
	if c.k[l] != nil {
		have = s.Shape(c.k[l])[1]
	}
	if need := P + T; need > have {
		capacity := max(2*have, need, minCacheTokens)
		for _, buf := range []*[]*ts.Tensor{&c.k, &c.v} {
			grown := s.Zeros([]int64{sh[0], capacity, sh[2]}, dev)
			if old := (*buf)[l]; old != nil && P > 0 {
				s.CopyInto(s.Narrow(grown, 1, 0, P), s.Narrow(old, 1, 0, P))
			}
			if s.Err() != nil {
				return nil, nil
			}
			if old := (*buf)[l]; old != nil {
				_ = old.Drop()
			}
			(*buf)[l] = s.Keep(grown)
		}
	}
	s.CopyInto(s.Narrow(c.k[l], 1, P, T), k)
	s.CopyInto(s.Narrow(c.v[l], 1, P, T), v)
	return s.Narrow(c.k[l], 1, 0, P+T), s.Narrow(c.v[l], 1, 0, P+T)
}

func (c *cache) drop() {
	for _, t := range append(c.k, c.v...) {
		if t != nil {
			_ = t.Drop()
		}
	}
	c.k, c.v, c.n = nil, nil, 0
}

// hidden runs the stack over st (at absolute positions from the cache's
// length on, or 0 without a cache) and returns the final-LN'd hidden states
// of the rows keep (indices into st, in that order): [len(keep), D]. With a
// cache, the stream's keys and values are appended to it and attention
// covers the cached tokens too.
//
// Only the last layer's keys and values are needed at every row; its
// attention, output projection and feed-forward block run at the rows keep
// alone (its fused query-key-value projection still runs at every row). A
// loss reads a few dozen rows of a window of about 1,300 tokens, and a
// decoding step one, so that layer costs a small fraction of the others.
func (m *Model) hidden(s *tx.Scope, st *stream, c *cache, keep []int64) *ts.Tensor {
	cfg := m.cfg
	T, D, H := int64(len(st.ids)), int64(cfg.Dim), int64(cfg.Heads)
	dh := D / H
	P := int64(0)
	if c != nil {
		P = int64(c.n)
		if c.k == nil {
			c.k, c.v = make([]*ts.Tensor, cfg.Layers), make([]*ts.Tensor, cfg.Layers)
		}
	}
	x := s.Embedding(m.w("embed"), s.Int64s(st.ids, []int64{T}, m.dev))
	if n := int64(len(st.padPos)); n > 0 {
		f := s.Float32s(st.feats, []int64{n, int64(cfg.PatchDim())}, m.dev)
		proj := s.Add(s.Linear(f, m.w("vision.w"), m.w("vision.b")),
			s.IndexSelect(m.w("vision.pos"), 0, s.Int64s(st.padIdx, []int64{n}, m.dev)))
		x = s.IndexCopy(x, 0, s.Int64s(st.padPos, []int64{n}, m.dev), proj)
	}
	x = m.dropped(s, s.Add(x, s.Narrow(m.pos, 0, P, T)))
	// Attention runs in blocks of queryBlock queries, each over the keys its
	// last query may see: no [H, T, T] tensor is ever made (tens of MB per
	// op at a few thousand tokens), and the keys after a block, which the
	// causal mask would zero, cost nothing.
	type block struct {
		q0, n, keys int64
		mask        *ts.Tensor // [n, keys]: query i (absolute P+q0+i) may not see keys j > P+q0+i
	}
	// every: the last layer runs at every row too, and the kept rows are
	// selected after it; cheaper than lastLayer when most rows are kept (the
	// warm start's context loss reads nearly all of them).
	every := allRowsLastLayer || float64(len(keep)) > denseKeep*float64(T)
	var blocks []block // for every layer but the last (lastLayer), unless every
	for q0 := int64(0); q0 < T && (cfg.Layers > 1 || every); q0 += queryBlock {
		b := block{q0: q0, n: min(queryBlock, T-q0)}
		b.keys = P + q0 + b.n
		if b.n > 1 {
			b.mask = s.MulScalar(s.Triu(s.Ones([]int64{b.n, b.keys}, m.dev), P+q0+1), tx.NegInf)
		}
		blocks = append(blocks, b)
	}
	scale := 1 / math.Sqrt(float64(dh))
	for l := 0; l < cfg.Layers; l++ {
		pre := "layer." + strconv.Itoa(l) + "."
		h := s.LayerNorm(x, m.w(pre+"ln1.w"), m.w(pre+"ln1.b"), D)
		qkv := s.Permute(s.Reshape(s.Linear(h, m.w(pre+"qkv.w"), m.w(pre+"qkv.b")), T, 3, H, dh), 1, 2, 0, 3) // [3,H,T,dh]
		q, k, v := s.Select(qkv, 0, 0), s.Select(qkv, 0, 1), s.Select(qkv, 0, 2)
		if c != nil {
			k, v = c.put(s, l, k, v, P, T, m.dev)
		}
		if l == cfg.Layers-1 && !every {
			x = m.lastLayer(s, pre, x, q, k, v, P, T, keep, scale)
			break
		}
		outs := make([]*ts.Tensor, len(blocks))
		for i, b := range blocks {
			qb, kb, vb := q, k, v
			if len(blocks) > 1 || b.keys < P+T {
				qb, kb, vb = s.Narrow(q, 1, b.q0, b.n), s.Narrow(k, 1, 0, b.keys), s.Narrow(v, 1, 0, b.keys)
			}
			sc := s.MulScalar(s.Matmul(qb, s.Transpose(kb, -2, -1)), scale) // [H,n,keys]
			if b.mask != nil {
				sc = s.Add(sc, b.mask)
			}
			outs[i] = s.Matmul(s.Softmax(sc, -1), vb) // [H,n,dh]
		}
		att := outs[0]
		if len(outs) > 1 {
			att = s.Cat(outs, 1)
		}
		o := s.Reshape(s.Permute(att, 1, 0, 2), T, D)
		x = s.Add(x, m.dropped(s, s.Linear(o, m.w(pre+"out.w"), m.w(pre+"out.b"))))
		x = m.feedForward(s, pre, x)
	}
	if c != nil && s.Err() == nil {
		c.n += int(T)
	}
	if every {
		x = s.IndexSelect(x, 0, s.Int64s(keep, []int64{int64(len(keep))}, m.dev))
	}
	return s.LayerNorm(x, m.w("lnf.w"), m.w("lnf.b"), D)
}

// feedForward adds the layer's attention-free half to the residual x.
func (m *Model) feedForward(s *tx.Scope, pre string, x *ts.Tensor) *ts.Tensor {
	h := s.LayerNorm(x, m.w(pre+"ln2.w"), m.w(pre+"ln2.b"), int64(m.cfg.Dim))
	return s.Add(x, m.dropped(s, s.Linear(s.Gelu(s.Linear(h, m.w(pre+"ff1.w"), m.w(pre+"ff1.b"))), m.w(pre+"ff2.w"), m.w(pre+"ff2.b"))))
}

// lastLayer finishes the last layer at the rows keep of the residual x
// [T, D] and returns them, [len(keep), D], from the queries q [H, T, dh]
// and every row's keys and values k, v [H, P+T, dh] (P of them cached
// before the stream). The kept queries go in blocks of queryBlock, each
// over the keys its furthest query may see, with each query's own causal
// mask.
func (m *Model) lastLayer(s *tx.Scope, pre string, x, q, k, v *ts.Tensor, P, T int64, keep []int64, scale float64) *ts.Tensor {
	D, n := int64(m.cfg.Dim), int64(len(keep))
	if n == 0 {
		s.Fail("last layer", errors.New("no rows to compute"))
		return nil
	}
	for _, r := range keep {
		if r < 0 || r >= T {
			s.Fail("last layer", fmt.Errorf("row %d outside the stream's %d", r, T))
			return nil
		}
	}
	// In position order, so that a block's queries are neighbours and its
	// keys stop where its last query's do; the rows go back to keep's order
	// at the end.
	sorted := slices.Clone(keep)
	slices.Sort(sorted)
	rows := s.Int64s(sorted, []int64{n}, m.dev)
	qk := s.IndexSelect(q, 1, rows) // [H, n, dh]
	var outs []*ts.Tensor
	for b0 := int64(0); b0 < n; b0 += queryBlock {
		bk := sorted[b0:min(b0+queryBlock, n)]
		keys := P + slices.Max(bk) + 1
		qb := s.Narrow(qk, 1, b0, int64(len(bk)))
		sc := s.MulScalar(s.Matmul(qb, s.Transpose(s.Narrow(k, 1, 0, keys), -2, -1)), scale) // [H, nb, keys]
		if mask, masked := causalMask(bk, P, keys); masked {
			sc = s.Add(sc, s.Float32s(mask, []int64{int64(len(bk)), keys}, m.dev))
		}
		outs = append(outs, s.Matmul(s.Softmax(sc, -1), s.Narrow(v, 1, 0, keys))) // [H, nb, dh]
	}
	att := outs[0]
	if len(outs) > 1 {
		att = s.Cat(outs, 1)
	}
	o := s.Reshape(s.Permute(att, 1, 0, 2), n, D)
	xk := s.Add(s.IndexSelect(x, 0, rows), m.dropped(s, s.Linear(o, m.w(pre+"out.w"), m.w(pre+"out.b"))))
	out := m.feedForward(s, pre, xk)
	if slices.Equal(sorted, keep) {
		return out
	}
	back := make([]int64, n) // keep[i] is sorted[back[i]]
	for i, r := range keep {
		j, _ := slices.BinarySearch(sorted, r)
		back[i] = int64(j)
	}
	return s.IndexSelect(out, 0, s.Int64s(back, []int64{n}, m.dev))
}

// causalMask is the additive mask [len(rows), keys] of queries at the rows
// (absolute positions P+row): key j is hidden from a query before it. It
// reports whether any key is hidden.
func causalMask(rows []int64, P, keys int64) ([]float32, bool) {
	mask := make([]float32, int64(len(rows))*keys)
	hidden := false
	for i, r := range rows {
		for j := P + r + 1; j < keys; j++ {
			mask[int64(i)*keys+j] = tx.NegInf
			hidden = true
		}
	}
	return mask, hidden
}

// queryBlock is the number of queries whose attention is computed at once
// (a variable so tests can compare against one block for the whole stream).
var queryBlock int64 = 256

// allRowsLastLayer makes the last layer run as the others do, at every
// row, and selects the kept rows afterwards: the reference tests compare
// lastLayer against.
var allRowsLastLayer = false

// denseKeep is the share of a stream's rows above which the last layer runs
// at every row (a variable so tests can send every pass through lastLayer).
var denseKeep = 0.5

// logits scores the next token after each row of hidden states h: [L, V],
// with the scores of the ids the model never writes (<unk>, template tokens
// other than <|im_end|>) fixed at -1e9.
func (m *Model) logits(s *tx.Scope, h *ts.Tensor) *ts.Tensor {
	return s.Add(s.Linear(h, m.w("head.w"), m.w("head.b")), m.outMask)
}

// targets returns the hidden-state rows (k-1) and compact targets of the
// positions at (each k >= 1 with a mapped token).
func (m *Model) targets(ids []int32, at []int) ([]int64, [][]int32, error) {
	rows := make([]int64, len(at))
	tg := make([]int32, len(at))
	for i, k := range at {
		if k < 1 || k >= len(ids) {
			return nil, nil, fmt.Errorf("position %d outside 1..%d (the first token has no prediction)", k, len(ids)-1)
		}
		c := m.ids.Compact(ids[k])
		if c == Unk {
			return nil, nil, fmt.Errorf("token %d (id %d) is not in the model's id map, so it cannot be scored", k, ids[k])
		}
		if slices.Contains(m.never, c) {
			return nil, nil, fmt.Errorf("token %d (id %d) is a template token the policy never writes, so it cannot be scored", k, ids[k])
		}
		rows[i], tg[i] = int64(k-1), c
	}
	return rows, [][]int32{tg}, nil
}

// scored is one stream's forward pass at the positions it scores.
type scored struct {
	lp   *ts.Tensor // [1, L, V] log-softmax at the temperature
	logp *ts.Tensor // [1, L] log-probability of each target
}

// score runs the forward pass of in and the log-probabilities of its tokens
// at positions at, under the temperature-scaled distribution.
func (m *Model) score(s *tx.Scope, in Input, at []int, temperature float64) (*scored, error) {
	st, err := m.prepare(in, 0)
	if err != nil {
		return nil, err
	}
	rows, tg, err := m.targets(in.IDs, at)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, errors.New("no positions to score")
	}
	h := m.hidden(s, st, nil, rows)
	lp := s.Unsqueeze(s.LogSoftmaxT(m.logits(s, h), temperature), 0)
	return &scored{lp: lp, logp: s.PickActions(lp, tg, m.dev)}, s.Err()
}

// LogProbs returns log p(IDs[k] | IDs[:k]) for every position k in at, under
// the temperature-scaled distribution (1: the plain model), without gradient
// tracking. A position must be >= 1 and hold a token of the id map.
func (m *Model) LogProbs(in Input, at []int, temperature float64) (out []float32, err error) {
	defer tx.Lock()()
	defer tx.Recover(&err, "causal log-probs")
	s := tx.NewScope()
	defer s.Close()
	err = tx.NoGrad(func() error {
		sc, err := m.score(s, in, at, temperature)
		if err != nil {
			return err
		}
		out, err = tx.ReadFloat32(sc.logp)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("causal log-probs: %w", err)
	}
	return out, nil
}

// Decoder feeds a stream to the model piece by piece, keeping every
// layer's keys and values, so that each new token costs attention over the
// stream once instead of a forward pass over all of it. A Decoder belongs to
// its model and is not safe for concurrent use.
type Decoder struct {
	m   *Model
	c   cache
	ids []int32
}

// NewDecoder returns an empty decoder.
func (m *Model) NewDecoder() *Decoder { return &Decoder{m: m} }

// Tokens returns the stream fed so far.
func (d *Decoder) Tokens() []int32 { return d.ids }

// Reset empties the decoder; its buffers stay for the next stream.
func (d *Decoder) Reset() {
	d.c.n = 0
	d.ids = d.ids[:0]
}

// Close empties the decoder and releases its buffers.
func (d *Decoder) Close() {
	defer tx.Lock()()
	d.c.drop()
	d.ids = d.ids[:0]
}

// Truncate drops the stream after its first n tokens, keeping the keys and
// values before them, so that a response can be redrawn from the same
// context without feeding the context again. n must not fall inside a
// vision block (the caller truncates to the end of a context).
func (d *Decoder) Truncate(n int) (err error) {
	switch {
	case n < 0 || n > len(d.ids):
		return fmt.Errorf("causal decode: truncate to %d tokens, the stream has %d", n, len(d.ids))
	case n == len(d.ids):
		return nil
	case n == 0:
		d.Reset()
		return nil
	}
	d.c.n = n // the positions after n are overwritten by the next Feed
	d.ids = d.ids[:n]
	return nil
}

// Feed appends ids (whole vision blocks only, with their screenshots'
// patches in images) and returns the log-probabilities of the next token
// over the compact vocabulary at the temperature (about -1e9 for the ids
// the model never writes).
func (d *Decoder) Feed(ids []int32, images [][][]float32, temperature float64) (out []float32, err error) {
	defer tx.Lock()()
	defer tx.Recover(&err, "causal decode")
	m := d.m
	st, err := m.prepare(Input{IDs: ids, Images: images}, d.c.n)
	if err != nil {
		return nil, fmt.Errorf("causal decode: %w", err)
	}
	s := tx.NewScope()
	defer s.Close()
	err = tx.NoGrad(func() error {
		h := m.hidden(s, st, &d.c, []int64{int64(len(ids) - 1)})
		lp := s.LogSoftmaxT(m.logits(s, h), temperature)
		if err := s.Err(); err != nil {
			return err
		}
		out, err = tx.ReadFloat32(lp)
		return err
	})
	if err != nil {
		// the cache may hold part of this chunk: start over on the next use
		d.c.drop()
		d.ids = d.ids[:0]
		return nil, fmt.Errorf("causal decode: %w", err)
	}
	d.ids = append(d.ids, ids...)
	return out, nil
}
