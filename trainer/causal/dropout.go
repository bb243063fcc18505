package causal

import (
	"math/rand/v2"

	"github.com/sugarme/gotch/ts"

	"github.com/cualake/cualake/trainer/internal/tx"
)

// dropout zeroes a training pass's residual-branch activations with
// probability p and scales the rest by 1/(1-p) (inverted dropout, as in
// the original transformer: on the embeddings and on each sub-layer's
// output before it joins the residual stream). Its masks are drawn in Go
// from a seeded generator, like the weights, so a step's bits do not
// depend on libtorch's generator or on which thread runs the item.
// Inference never sees it: only a supervised step's leaf views carry one.
type dropout struct {
	p   float64
	rng *rand.Rand
}

// newDropout returns the dropout of one item's pass (nil when p is 0):
// its masks come from (seed, item), so items may run in any order.
func newDropout(p float64, seed uint64, item int) *dropout {
	if p <= 0 {
		return nil
	}
	return &dropout{p: p, rng: rand.New(rand.NewPCG(seed, uint64(item)))}
}

// mask returns n values, each 0 with probability p and 1/(1-p) otherwise.
func (d *dropout) mask(n int64) []float32 {
	keep := float32(1 / (1 - d.p))
	out := make([]float32, n)
	for i := range out {
		if d.rng.Float64() >= d.p {
			out[i] = keep
		}
	}
	return out
}

// dropped returns x with m's dropout applied (x itself when m
// trains without dropout).
func (m *Model) dropped(s *tx.Scope, x *ts.Tensor) *ts.Tensor {
	if m.drop == nil || s.Err() != nil {
		return x
	}
	sh := s.Shape(x)
	if s.Err() != nil {
		return x
	}
	n := int64(1)
	for _, d := range sh {
		n *= d
	}
	return s.Mul(x, s.Float32s(m.drop.mask(n), sh, m.dev))
}
