// Package policy is the small autoregressive computer-use policy trained by
// cualake's train stage: a context encoder (token embeddings, optional
// screenshot patch embeddings, sinusoidal positions, pre-LN transformer
// layers) and a GRU decoder with attention over the encoded context that
// writes an action as a short token sequence, so every action token has a
// log-probability as in an LLM.
//
// All tensor work goes through gotch (libtorch). Exported functions return
// errors instead of panicking, and pin the goroutine to its OS thread while
// they run, because libtorch keeps errors and grad mode per thread.
package policy

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"github.com/cualake/cualake/trainer/internal/tx"
)

// Input is one context: token ids (instruction, compact action history,
// textual observation) and, for a policy with PatchDim > 0, one feature vector
// per <|image_pad|> token, in order. Patch vectors replace the embedding of
// their <|image_pad|> token.
type Input struct {
	Tokens  []int32
	Patches [][]float32
}

// Policy is the model: configuration, vocabulary and weights on a device.
// A Policy is not safe for concurrent use.
type Policy struct {
	cfg    Config
	vocab  *Vocab
	dev    gotch.Device
	params []param
	byName map[string]*ts.Tensor
	pos    *ts.Tensor // [MaxContext, Dim] sinusoidal positions, not trained
}

type param struct {
	name  string
	shape []int64
	t     *ts.Tensor
}

// paramSpec describes one weight and how New initialises it.
type paramSpec struct {
	name  string
	shape []int64
	init  initKind
}

type initKind int

const (
	initZeros   initKind = iota
	initOnes             // layer-norm gains
	initNormal           // N(0, 1), embeddings
	initUniform          // U(-1/sqrt(fan_in), 1/sqrt(fan_in)), weight matrices
)

// specs lists the weights in their fixed order (the checkpoint order).
func (c Config) specs() []paramSpec {
	d, v, f := int64(c.Dim), int64(c.VocabSize), int64(c.FFNDim)
	out := []paramSpec{{"embed", []int64{v, d}, initNormal}}
	if c.PatchDim > 0 {
		out = append(out,
			paramSpec{"vision.w", []int64{d, int64(c.PatchDim)}, initUniform},
			paramSpec{"vision.b", []int64{d}, initZeros})
	}
	for l := 0; l < c.Layers; l++ {
		p := "enc." + strconv.Itoa(l) + "."
		out = append(out,
			paramSpec{p + "ln1.w", []int64{d}, initOnes},
			paramSpec{p + "ln1.b", []int64{d}, initZeros},
			paramSpec{p + "qkv.w", []int64{3 * d, d}, initUniform},
			paramSpec{p + "qkv.b", []int64{3 * d}, initZeros},
			paramSpec{p + "out.w", []int64{d, d}, initUniform},
			paramSpec{p + "out.b", []int64{d}, initZeros},
			paramSpec{p + "ln2.w", []int64{d}, initOnes},
			paramSpec{p + "ln2.b", []int64{d}, initZeros},
			paramSpec{p + "ff1.w", []int64{f, d}, initUniform},
			paramSpec{p + "ff1.b", []int64{f}, initZeros},
			paramSpec{p + "ff2.w", []int64{d, f}, initUniform},
			paramSpec{p + "ff2.b", []int64{d}, initZeros})
	}
	out = append(out,
		paramSpec{"enc.lnf.w", []int64{d}, initOnes},
		paramSpec{"enc.lnf.b", []int64{d}, initZeros},
		paramSpec{"dec.init.w", []int64{d, c.poolWidth()}, initUniform},
		paramSpec{"dec.init.b", []int64{d}, initZeros},
		paramSpec{"dec.gru.wih", []int64{3 * d, 2 * d}, initUniform},
		paramSpec{"dec.gru.whh", []int64{3 * d, d}, initUniform},
		paramSpec{"dec.gru.bih", []int64{3 * d}, initZeros},
		paramSpec{"dec.gru.bhh", []int64{3 * d}, initZeros},
		paramSpec{"dec.comb.w", []int64{d, 2 * d}, initUniform},
		paramSpec{"dec.comb.b", []int64{d}, initZeros},
		paramSpec{"dec.out.w", []int64{v, d}, initUniform},
		paramSpec{"dec.out.b", []int64{v}, initZeros})
	if c.AttnPool {
		out = append(out, paramSpec{"dec.pool.q", []int64{d, 1}, initUniform})
	}
	if c.Copy {
		out = append(out,
			paramSpec{"dec.gen.w", []int64{1, d}, initUniform},
			paramSpec{"dec.gen.b", []int64{1}, initZeros})
	}
	return out
}

// poolWidth is the width of the pooled context the decoder starts from.
func (c Config) poolWidth() int64 {
	if c.AttnPool {
		return 2 * int64(c.Dim)
	}
	return int64(c.Dim)
}

// New creates a policy with weights drawn from a PCG generator seeded with
// seed (in Go, so the initial weights do not depend on libtorch's RNG).
func New(cfg Config, vocab *Vocab, dev gotch.Device, seed uint64) (p *Policy, err error) {
	if vocab == nil {
		return nil, errors.New("new policy: nil vocabulary")
	}
	if cfg.VocabSize != vocab.VocabSize() {
		return nil, fmt.Errorf("new policy: config vocab_size %d != vocabulary size %d", cfg.VocabSize, vocab.VocabSize())
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new policy: %w", err)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed_c0a1_a4e0_0001))
	values := map[string][]float32{}
	for _, sp := range cfg.specs() {
		values[sp.name] = initValues(sp, rng)
	}
	return build(cfg, vocab, dev, values)
}

func initValues(sp paramSpec, rng *rand.Rand) []float32 {
	n := 1
	for _, d := range sp.shape {
		n *= int(d)
	}
	out := make([]float32, n)
	switch sp.init {
	case initOnes:
		for i := range out {
			out[i] = 1
		}
	case initNormal:
		for i := range out {
			out[i] = float32(rng.NormFloat64())
		}
	case initUniform:
		fanIn := sp.shape[len(sp.shape)-1]
		bound := 1 / math.Sqrt(float64(fanIn))
		for i := range out {
			out[i] = float32((2*rng.Float64() - 1) * bound)
		}
	}
	return out
}

// build creates the tensors of a policy from per-name values.
func build(cfg Config, vocab *Vocab, dev gotch.Device, values map[string][]float32) (p *Policy, err error) {
	defer tx.Lock()()
	defer tx.Recover(&err, "build policy")
	p = &Policy{cfg: cfg, vocab: vocab, dev: dev, byName: map[string]*ts.Tensor{}}
	fail := func(e error) (*Policy, error) {
		p.Close()
		return nil, e
	}
	for _, sp := range cfg.specs() {
		vals, ok := values[sp.name]
		if !ok {
			return fail(fmt.Errorf("build policy: missing weight %q", sp.name))
		}
		t, err := tx.NewFloat32(vals, sp.shape, dev)
		if err != nil {
			return fail(fmt.Errorf("build policy: weight %q: %w", sp.name, err))
		}
		if err := t.RequiresGrad_(true); err != nil {
			_ = t.Drop()
			return fail(fmt.Errorf("build policy: weight %q: requires grad: %w", sp.name, err))
		}
		p.params = append(p.params, param{name: sp.name, shape: sp.shape, t: t})
		p.byName[sp.name] = t
	}
	pos, err := tx.NewFloat32(sinusoid(cfg.MaxContext, cfg.Dim), []int64{int64(cfg.MaxContext), int64(cfg.Dim)}, dev)
	if err != nil {
		return fail(fmt.Errorf("build policy: positions: %w", err))
	}
	p.pos = pos
	return p, nil
}

// sinusoid returns the transformer sinusoidal position table [n, d].
func sinusoid(n, d int) []float32 {
	out := make([]float32, n*d)
	for pos := 0; pos < n; pos++ {
		for i := 0; i < d; i++ {
			freq := math.Pow(10000, -float64(2*(i/2))/float64(d))
			a := float64(pos) * freq
			if i%2 == 0 {
				out[pos*d+i] = float32(math.Sin(a))
			} else {
				out[pos*d+i] = float32(math.Cos(a))
			}
		}
	}
	return out
}

// Config returns the policy's configuration.
func (p *Policy) Config() Config { return p.cfg }

// Vocab returns the policy's vocabulary.
func (p *Policy) Vocab() *Vocab { return p.vocab }

// Device returns the device holding the weights.
func (p *Policy) Device() gotch.Device { return p.dev }

// Parameters returns the trainable weights in their fixed order.
func (p *Policy) Parameters() []*ts.Tensor {
	out := make([]*ts.Tensor, len(p.params))
	for i, q := range p.params {
		out[i] = q.t
	}
	return out
}

// ParamNames returns the weight names in the same order as Parameters.
func (p *Policy) ParamNames() []string {
	out := make([]string, len(p.params))
	for i, q := range p.params {
		out[i] = q.name
	}
	return out
}

// NumParams returns the number of scalar weights.
func (p *Policy) NumParams() int {
	n := 0
	for _, q := range p.params {
		k := 1
		for _, d := range q.shape {
			k *= int(d)
		}
		n += k
	}
	return n
}

// Weights copies every weight into Go memory, by name.
func (p *Policy) Weights() (map[string][]float32, error) {
	defer tx.Lock()()
	out := make(map[string][]float32, len(p.params))
	for _, q := range p.params {
		v, err := tx.ReadFloat32(q.t)
		if err != nil {
			return nil, fmt.Errorf("read weight %q: %w", q.name, err)
		}
		out[q.name] = v
	}
	return out, nil
}

// Clone returns an independent copy of the policy (e.g. a frozen reference
// for the KL penalty).
func (p *Policy) Clone() (*Policy, error) {
	w, err := p.Weights()
	if err != nil {
		return nil, fmt.Errorf("clone policy: %w", err)
	}
	return build(p.cfg, p.vocab, p.dev, w)
}

// Close releases the weights' memory now instead of at garbage collection.
func (p *Policy) Close() {
	for _, q := range p.params {
		_ = q.t.Drop()
	}
	if p.pos != nil {
		_ = p.pos.Drop()
	}
	p.params, p.byName, p.pos = nil, nil, nil
}

func (p *Policy) w(name string) *ts.Tensor { return p.byName[name] }

// ------------------------------------------------------------------ forward --

// batchInput is a padded batch of contexts in Go memory.
type batchInput struct {
	b, t      int64
	ids       []int64   // [B,T], PadID beyond each context
	keyMask   []float32 // [B,T,1]: 1 for real tokens
	keyBias   []float32 // [B,T]: 0 for real tokens, NegInf for padding
	counts    []float32 // [B,1]: number of real tokens
	feats     []float32 // [B,T,PatchDim] patch vectors at <|image_pad|> positions
	patchMask []float32 // [B,T,1]: 1 at <|image_pad|> positions
	anyPatch  bool
}

// checkInput validates one context against the configuration.
func (p *Policy) checkInput(in Input) error {
	if len(in.Tokens) == 0 {
		return errors.New("empty context")
	}
	if len(in.Tokens) > p.cfg.MaxContext {
		return fmt.Errorf("context has %d tokens, max_context is %d", len(in.Tokens), p.cfg.MaxContext)
	}
	pads := 0
	for i, id := range in.Tokens {
		if id < 0 || int(id) >= p.cfg.VocabSize {
			return fmt.Errorf("context token %d: id %d outside vocabulary [0,%d)", i, id, p.cfg.VocabSize)
		}
		if id == ImagePadID {
			pads++
		}
	}
	if p.cfg.PatchDim == 0 {
		if len(in.Patches) > 0 {
			return fmt.Errorf("context has %d patches but the policy reads text only (patch_dim 0)", len(in.Patches))
		}
		return nil
	}
	if len(in.Patches) != pads {
		return fmt.Errorf("context has %d %s tokens but %d patches", pads, TokImagePad, len(in.Patches))
	}
	for i, f := range in.Patches {
		if len(f) != p.cfg.PatchDim {
			return fmt.Errorf("patch %d has %d values, patch_dim is %d", i, len(f), p.cfg.PatchDim)
		}
		for _, x := range f {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fmt.Errorf("patch %d has a non-finite value", i)
			}
		}
	}
	return nil
}

func (p *Policy) makeBatch(inputs []Input) (*batchInput, error) {
	if len(inputs) == 0 {
		return nil, errors.New("empty batch")
	}
	t := 0
	for i, in := range inputs {
		if err := p.checkInput(in); err != nil {
			return nil, fmt.Errorf("input %d: %w", i, err)
		}
		t = max(t, len(in.Tokens))
	}
	b := len(inputs)
	bi := &batchInput{
		b: int64(b), t: int64(t),
		ids:     make([]int64, b*t),
		keyMask: make([]float32, b*t),
		keyBias: make([]float32, b*t),
		counts:  make([]float32, b),
	}
	pd := p.cfg.PatchDim
	if pd > 0 {
		bi.feats = make([]float32, b*t*pd)
		bi.patchMask = make([]float32, b*t)
	}
	for i, in := range inputs {
		k := 0
		for j := 0; j < t; j++ {
			o := i*t + j
			if j >= len(in.Tokens) {
				bi.keyBias[o] = tx.NegInf
				continue
			}
			id := in.Tokens[j]
			bi.ids[o] = int64(id)
			bi.keyMask[o] = 1
			if pd > 0 && id == ImagePadID {
				copy(bi.feats[o*pd:(o+1)*pd], in.Patches[k])
				bi.patchMask[o] = 1
				bi.anyPatch = true
				k++
			}
		}
		bi.counts[i] = float32(len(in.Tokens))
	}
	return bi, nil
}

// encoded is the encoder's output for a batch.
type encoded struct {
	h      *ts.Tensor // [B,T,D]
	ht     *ts.Tensor // [B,D,T]
	bias   *ts.Tensor // [B,1,T] additive attention mask
	state  *ts.Tensor // [B,D] initial decoder state
	onehot *ts.Tensor // [B,T,V] context tokens as one-hot rows (Copy only)
}

func (p *Policy) encode(s *tx.Scope, bi *batchInput) *encoded {
	c := p.cfg
	B, T, D := bi.b, bi.t, int64(c.Dim)
	H := int64(c.Heads)
	dh := D / H
	ids := s.Int64s(bi.ids, []int64{B, T}, p.dev)
	x := s.Embedding(p.w("embed"), ids)
	if c.PatchDim > 0 && bi.anyPatch {
		f := s.Float32s(bi.feats, []int64{B, T, int64(c.PatchDim)}, p.dev)
		m := s.Float32s(bi.patchMask, []int64{B, T, 1}, p.dev)
		proj := s.Linear(f, p.w("vision.w"), p.w("vision.b"))
		x = s.Add(x, s.Mul(m, s.Sub(proj, x)))
	}
	x = s.Add(x, s.Narrow(p.pos, 0, 0, T))
	bias := s.Float32s(bi.keyBias, []int64{B, 1, 1, T}, p.dev)
	for l := 0; l < c.Layers; l++ {
		pre := "enc." + strconv.Itoa(l) + "."
		h := s.LayerNorm(x, p.w(pre+"ln1.w"), p.w(pre+"ln1.b"), D)
		qkv := s.Linear(h, p.w(pre+"qkv.w"), p.w(pre+"qkv.b"))
		qkv = s.Permute(s.Reshape(qkv, B, T, 3, H, dh), 2, 0, 3, 1, 4) // [3,B,H,T,dh]
		q, k, v := s.Select(qkv, 0, 0), s.Select(qkv, 0, 1), s.Select(qkv, 0, 2)
		sc := s.MulScalar(s.Matmul(q, s.Transpose(k, -2, -1)), 1/math.Sqrt(float64(dh)))
		a := s.Softmax(s.Add(sc, bias), -1)
		o := s.Reshape(s.Permute(s.Matmul(a, v), 0, 2, 1, 3), B, T, D)
		x = s.Add(x, s.Linear(o, p.w(pre+"out.w"), p.w(pre+"out.b")))
		h = s.LayerNorm(x, p.w(pre+"ln2.w"), p.w(pre+"ln2.b"), D)
		x = s.Add(x, s.Linear(s.Gelu(s.Linear(h, p.w(pre+"ff1.w"), p.w(pre+"ff1.b"))), p.w(pre+"ff2.w"), p.w(pre+"ff2.b")))
	}
	hs := s.LayerNorm(x, p.w("enc.lnf.w"), p.w("enc.lnf.b"), D)
	mask := s.Float32s(bi.keyMask, []int64{B, T, 1}, p.dev)
	counts := s.Float32s(bi.counts, []int64{B, 1}, p.dev)
	pooled := s.Div(s.SumDim(s.Mul(hs, mask), 1, false), counts)
	if c.AttnPool {
		sc := s.MulScalar(s.Matmul(hs, p.w("dec.pool.q")), 1/math.Sqrt(float64(D))) // [B,T,1]
		a := s.Softmax(s.Add(sc, s.Reshape(bias, B, T, 1)), 1)
		pooled = s.Cat([]*ts.Tensor{pooled, s.SumDim(s.Mul(a, hs), 1, false)}, 1)
	}
	enc := &encoded{
		h:     hs,
		ht:    s.Transpose(hs, 1, 2),
		bias:  s.Reshape(bias, B, 1, T),
		state: s.Tanh(s.Linear(pooled, p.w("dec.init.w"), p.w("dec.init.b"))),
	}
	if c.Copy {
		V := int64(c.VocabSize)
		oh := make([]float32, B*T*V)
		for i := int64(0); i < B*T; i++ {
			if bi.keyMask[i] != 0 {
				oh[i*V+bi.ids[i]] = 1
			}
		}
		enc.onehot = s.Float32s(oh, []int64{B, T, V}, p.dev)
	}
	return enc
}

// decState is the decoder's recurrent state: the GRU hidden state and the
// previous attentional output (fed back as input).
type decState struct {
	h, o *ts.Tensor // [B,D]
	a    *ts.Tensor // [B,1,T] the attention that produced o
}

func (p *Policy) initState(s *tx.Scope, enc *encoded, b int64) decState {
	return decState{h: enc.state, o: s.Zeros([]int64{b, int64(p.cfg.Dim)}, p.dev)}
}

// step feeds tok [B] (int64) and returns the new state; st.o of the result
// is the attentional output that the output layer turns into logits.
func (p *Policy) step(s *tx.Scope, enc *encoded, st decState, tok *ts.Tensor) decState {
	e := s.Embedding(p.w("embed"), tok)
	h := s.GRUCell(s.Cat([]*ts.Tensor{e, st.o}, 1), st.h,
		p.w("dec.gru.wih"), p.w("dec.gru.whh"), p.w("dec.gru.bih"), p.w("dec.gru.bhh"))
	sc := s.MulScalar(s.Matmul(s.Unsqueeze(h, 1), enc.ht), 1/math.Sqrt(float64(p.cfg.Dim)))
	a := s.Softmax(s.Add(sc, enc.bias), -1)
	ctx := s.Squeeze(s.Matmul(a, enc.h), 1)
	o := s.Tanh(s.Linear(s.Cat([]*ts.Tensor{h, ctx}, 1), p.w("dec.comb.w"), p.w("dec.comb.b")))
	return decState{h: h, o: o, a: a}
}

// project turns attentional outputs o ([B,D] or [B,L,D]) into next-token
// scores. Without Copy they are logits; with Copy they are the
// log-probabilities of the pointer-generator mixture
// g*softmax(W o) + (1-g)*(attention @ one-hot context), which are logits of
// the same distribution (log-softmax leaves them unchanged), so callers
// treat both alike. a is the attention ([B,1,T] or [B,L,T]).
func (p *Policy) project(s *tx.Scope, enc *encoded, o, a *ts.Tensor) *ts.Tensor {
	z := s.Linear(o, p.w("dec.out.w"), p.w("dec.out.b"))
	if !p.cfg.Copy {
		return z
	}
	copied := s.Matmul(a, enc.onehot) // [B,1|L,V]
	g := s.Sigmoid(s.Linear(o, p.w("dec.gen.w"), p.w("dec.gen.b")))
	if len(s.Shape(o)) == 2 {
		copied = s.Squeeze(copied, 1)
	}
	mix := s.Add(s.Mul(g, s.Softmax(z, -1)), s.Mul(s.RSubScalar(1, g), copied))
	return s.Log(s.ClampMin(mix, 1e-12))
}

// checkActions validates teacher-forced actions.
func (p *Policy) checkActions(actions [][]int32, n int) (int, error) {
	if len(actions) != n {
		return 0, fmt.Errorf("%d actions for %d inputs", len(actions), n)
	}
	l := 0
	for i, a := range actions {
		if len(a) == 0 {
			return 0, fmt.Errorf("action %d is empty", i)
		}
		if len(a) > p.cfg.MaxAction {
			return 0, fmt.Errorf("action %d has %d tokens, max_action is %d", i, len(a), p.cfg.MaxAction)
		}
		for j, id := range a {
			if id < 0 || int(id) >= p.cfg.VocabSize {
				return 0, fmt.Errorf("action %d token %d: id %d outside vocabulary [0,%d)", i, j, id, p.cfg.VocabSize)
			}
		}
		l = max(l, len(a))
	}
	return l, nil
}

// logits is the teacher-forced forward pass inside a scope: [B, L, V] logits
// where position k predicts actions[b][k] from <bos> and actions[b][:k].
func (p *Policy) logits(s *tx.Scope, inputs []Input, actions [][]int32) (*ts.Tensor, error) {
	bi, err := p.makeBatch(inputs)
	if err != nil {
		return nil, err
	}
	L, err := p.checkActions(actions, len(inputs))
	if err != nil {
		return nil, err
	}
	B := bi.b
	dec := make([]int64, int(B)*L)
	for i, a := range actions {
		dec[i*L] = int64(BOSID)
		for k := 1; k < L; k++ {
			if k-1 < len(a) {
				dec[i*L+k] = int64(a[k-1])
			} // else PadID (0): masked out by the caller
		}
	}
	enc := p.encode(s, bi)
	decIDs := s.Int64s(dec, []int64{B, int64(L)}, p.dev)
	st := p.initState(s, enc, B)
	outs := make([]*ts.Tensor, L)
	attn := make([]*ts.Tensor, L)
	for k := 0; k < L; k++ {
		st = p.step(s, enc, st, s.Select(decIDs, 1, int64(k)))
		outs[k], attn[k] = st.o, st.a
	}
	out := p.project(s, enc, s.Stack(outs, 1), s.Cat(attn, 1))
	return out, s.Err()
}

// Logits runs the teacher-forced forward pass with gradient tracking and
// returns next-token logits [B, L, V] (L = longest action): position k scores
// actions[b][k] given the context, <bos> and actions[b][:k]. The caller owns
// the returned tensor.
func (p *Policy) Logits(inputs []Input, actions [][]int32) (out *ts.Tensor, err error) {
	defer tx.Lock()()
	defer tx.Recover(&err, "policy logits")
	s := tx.NewScope()
	defer s.Close()
	out, err = p.logits(s, inputs, actions)
	if err != nil {
		return nil, fmt.Errorf("policy logits: %w", err)
	}
	return s.Keep(out), nil
}

// LogProbs returns, without gradient tracking, the log-probability of every
// token of every action under the temperature-scaled policy (temperature 1 is
// the plain policy; use the sampling temperature to compare with Sample).
func (p *Policy) LogProbs(inputs []Input, actions [][]int32, temperature float64) (out [][]float32, err error) {
	defer tx.Lock()()
	defer tx.Recover(&err, "policy log-probs")
	s := tx.NewScope()
	defer s.Close()
	err = tx.NoGrad(func() error {
		lg, err := p.logits(s, inputs, actions)
		if err != nil {
			return err
		}
		lp := s.TokenLogProbs(lg, actions, temperature, p.dev)
		if s.Err() != nil {
			return s.Err()
		}
		flat, err := tx.ReadFloat32(lp)
		if err != nil {
			return err
		}
		L := len(flat) / len(actions)
		out = make([][]float32, len(actions))
		for i, a := range actions {
			out[i] = append([]float32(nil), flat[i*L:i*L+len(a)]...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("policy log-probs: %w", err)
	}
	return out, nil
}
