// Package causal is the decoder-only policy: a causal transformer over the
// very token stream the segment stage writes (Qwen's chat template:
// system turn, user turns with the instruction, the screenshot as
// <|vision_start|> N x <|image_pad|> <|vision_end|> and the screen text,
// assistant turns with the response), so a segments row is a training item
// as it stands and a rollout's context is a segment in the making.
//
// Token ids are the tokenizer's (Qwen3), read through a compact embedding
// (IDMap): the ids the warm start saw, plus <unk> for all others. The
// <|image_pad|> positions carry pixel features of the real screenshot: the
// PNG shrunk to a small thumbnail, cut into N patches, each linearly
// embedded with a learned patch-position vector (Qwen-VL style, without a
// vision tower). Positions are sinusoidal, layers pre-LN; the model gives
// the log-probability of the next token at every position.
//
// All tensor work goes through gotch (libtorch). Exported functions return
// errors instead of panicking and pin the goroutine to its OS thread while
// they call libtorch (its error state and grad mode are thread-local).
// Weights are drawn in Go from the seed; nothing uses libtorch's random
// generator, so on the CPU with a fixed thread count the same inputs give
// the same bytes. Inference on one Model may run on several goroutines at
// once (LogProbs, one Decoder each: they only read the weights); a training
// step must have the model to itself.
package causal

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

// Special holds the tokenizer ids of the template tokens the model treats
// specially: image pads carry patches (numbered from each <|vision_start|>),
// <|im_end|> ends a response.
type Special struct {
	ImStart     int32 `json:"im_start"`
	ImEnd       int32 `json:"im_end"`
	VisionStart int32 `json:"vision_start"`
	VisionEnd   int32 `json:"vision_end"`
	ImagePad    int32 `json:"image_pad"`
}

func (sp Special) ids() []int32 {
	return []int32{sp.ImStart, sp.ImEnd, sp.VisionStart, sp.VisionEnd, sp.ImagePad}
}

// Model is the causal policy: configuration, id map, weights on a device.
type Model struct {
	cfg       Config
	ids       *IDMap
	special   Special
	tokenizer string
	dev       gotch.Device
	params    []param
	byName    map[string]*ts.Tensor
	pos       *ts.Tensor // [MaxContext, Dim] sinusoidal positions, not trained
	outMask   *ts.Tensor // [VocabSize]: -1e9 at the ids the model never writes, 0 elsewhere
	never     []int32    // those compact ids
	drop      *dropout   // a supervised step's leaf view only (SFTOptions.Dropout); nil elsewhere
}

type param struct {
	name  string
	shape []int64
	t     *ts.Tensor
}

type initKind int

const (
	initZeros   initKind = iota
	initOnes             // layer-norm gains
	initNormal           // N(0, 1): token embeddings (LayerNorm follows)
	initSmall            // N(0, 0.02): patch-position vectors
	initUniform          // U(-1/sqrt(fan_in), 1/sqrt(fan_in)): weight matrices
)

type paramSpec struct {
	name  string
	shape []int64
	init  initKind
}

// specs lists the weights in their fixed (checkpoint) order.
func (c Config) specs() []paramSpec {
	d, v, f := int64(c.Dim), int64(c.VocabSize), int64(c.FFNDim)
	out := []paramSpec{
		{"embed", []int64{v, d}, initNormal},
		{"vision.w", []int64{d, int64(c.PatchDim())}, initUniform},
		{"vision.b", []int64{d}, initZeros},
		{"vision.pos", []int64{int64(c.ImageTokens()), d}, initSmall},
	}
	for l := 0; l < c.Layers; l++ {
		p := "layer." + strconv.Itoa(l) + "."
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
	return append(out,
		paramSpec{"lnf.w", []int64{d}, initOnes},
		paramSpec{"lnf.b", []int64{d}, initZeros},
		paramSpec{"head.w", []int64{v, d}, initUniform},
		paramSpec{"head.b", []int64{v}, initZeros})
}

// New creates a model with weights drawn from a PCG generator seeded with
// seed (in Go, so they do not depend on libtorch's generator). ids maps the
// tokenizer named tokenizer (recorded in checkpoints and compared with the
// segments' tokenizer) onto the vocabulary; it must hold the special ids.
func New(cfg Config, ids *IDMap, special Special, tokenizer string, dev gotch.Device, seed uint64) (*Model, error) {
	if err := check(cfg, ids, special); err != nil {
		return nil, fmt.Errorf("new causal model: %w", err)
	}
	rng := rand.New(rand.NewPCG(seed, 0xca05a1_0001))
	values := map[string][]float32{}
	for _, sp := range cfg.specs() {
		values[sp.name] = initValues(sp, rng)
	}
	return build(cfg, ids, special, tokenizer, dev, values)
}

func check(cfg Config, ids *IDMap, special Special) error {
	if ids == nil {
		return errors.New("nil id map")
	}
	if cfg.VocabSize != ids.Size() {
		return fmt.Errorf("config vocab_size %d != id map size %d", cfg.VocabSize, ids.Size())
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	for _, id := range special.ids() {
		if !ids.Known(id) {
			return fmt.Errorf("the id map lacks the template token %d", id)
		}
	}
	return nil
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
	case initSmall:
		for i := range out {
			out[i] = float32(0.02 * rng.NormFloat64())
		}
	case initUniform:
		bound := 1 / math.Sqrt(float64(sp.shape[len(sp.shape)-1]))
		for i := range out {
			out[i] = float32((2*rng.Float64() - 1) * bound)
		}
	}
	return out
}

func build(cfg Config, ids *IDMap, special Special, tokenizer string, dev gotch.Device, values map[string][]float32) (m *Model, err error) {
	defer tx.Lock()()
	defer tx.Recover(&err, "build causal model")
	m = &Model{cfg: cfg, ids: ids, special: special, tokenizer: tokenizer, dev: dev, byName: map[string]*ts.Tensor{}}
	fail := func(e error) (*Model, error) {
		m.Close()
		return nil, e
	}
	for _, sp := range cfg.specs() {
		vals, ok := values[sp.name]
		if !ok {
			return fail(fmt.Errorf("build causal model: missing weight %q", sp.name))
		}
		t, err := tx.NewFloat32(vals, sp.shape, dev)
		if err != nil {
			return fail(fmt.Errorf("build causal model: weight %q: %w", sp.name, err))
		}
		if err := t.RequiresGrad_(true); err != nil {
			_ = t.Drop()
			return fail(fmt.Errorf("build causal model: weight %q: requires grad: %w", sp.name, err))
		}
		m.params = append(m.params, param{name: sp.name, shape: sp.shape, t: t})
		m.byName[sp.name] = t
	}
	if m.pos, err = tx.NewFloat32(sinusoid(cfg.MaxContext, cfg.Dim), []int64{int64(cfg.MaxContext), int64(cfg.Dim)}, dev); err != nil {
		return fail(fmt.Errorf("build causal model: positions: %w", err))
	}
	mask := make([]float32, cfg.VocabSize)
	m.never = m.unwritable()
	for _, c := range m.never {
		mask[c] = tx.NegInf
	}
	if m.outMask, err = tx.NewFloat32(mask, []int64{int64(cfg.VocabSize)}, dev); err != nil {
		return fail(fmt.Errorf("build causal model: output mask: %w", err))
	}
	return m, nil
}

// unwritable lists the compact ids the model never writes: <unk>, and the
// template tokens a response cannot hold (message starts and vision
// tokens); of the template only <|im_end|>, which ends a response, remains.
func (m *Model) unwritable() []int32 {
	sp := m.special
	return []int32{Unk, m.ids.Compact(sp.ImStart), m.ids.Compact(sp.VisionStart), m.ids.Compact(sp.VisionEnd), m.ids.Compact(sp.ImagePad)}
}

// sinusoid is the transformer's sinusoidal position table [n, d].
func sinusoid(n, d int) []float32 {
	out := make([]float32, n*d)
	for p := 0; p < n; p++ {
		for i := 0; i < d; i++ {
			a := float64(p) * math.Pow(10000, -float64(2*(i/2))/float64(d))
			if i%2 == 0 {
				out[p*d+i] = float32(math.Sin(a))
			} else {
				out[p*d+i] = float32(math.Cos(a))
			}
		}
	}
	return out
}

// Config returns the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// IDs returns the model's id map.
func (m *Model) IDs() *IDMap { return m.ids }

// Special returns the template tokens' ids.
func (m *Model) Special() Special { return m.special }

// Tokenizer names the tokenizer whose ids the model reads
// ("<file>@sha256:<16 hex>", as segments.tokenizer writes it).
func (m *Model) Tokenizer() string { return m.tokenizer }

// Device returns the device holding the weights.
func (m *Model) Device() gotch.Device { return m.dev }

// Parameters returns the trainable weights in their fixed order.
func (m *Model) Parameters() []*ts.Tensor {
	out := make([]*ts.Tensor, len(m.params))
	for i, q := range m.params {
		out[i] = q.t
	}
	return out
}

// NumParams returns the number of scalar weights.
func (m *Model) NumParams() int {
	n := 0
	for _, q := range m.params {
		k := 1
		for _, d := range q.shape {
			k *= int(d)
		}
		n += k
	}
	return n
}

// Weights copies every weight into Go memory, by name.
func (m *Model) Weights() (map[string][]float32, error) {
	defer tx.Lock()()
	out := make(map[string][]float32, len(m.params))
	for _, q := range m.params {
		v, err := tx.ReadFloat32(q.t)
		if err != nil {
			return nil, fmt.Errorf("read weight %q: %w", q.name, err)
		}
		out[q.name] = v
	}
	return out, nil
}

// Clone returns an independent copy (a frozen reference for the KL term).
func (m *Model) Clone() (*Model, error) {
	w, err := m.Weights()
	if err != nil {
		return nil, fmt.Errorf("clone causal model: %w", err)
	}
	return build(m.cfg, m.ids, m.special, m.tokenizer, m.dev, w)
}

// Close releases the weights now instead of at garbage collection.
func (m *Model) Close() {
	for _, q := range m.params {
		_ = q.t.Drop()
	}
	for _, t := range []*ts.Tensor{m.pos, m.outMask} {
		if t != nil {
			_ = t.Drop()
		}
	}
	m.params, m.byName, m.pos, m.outMask = nil, nil, nil, nil
}

func (m *Model) w(name string) *ts.Tensor { return m.byName[name] }
