package sample

import (
	"container/heap"
	"fmt"
	"math"
	"slices"

	"github.com/cualake/cualake/schemas"
)

// FrontierParams are Frontier Sampling's constants (ScaleCUA eq. 2 and
// appendix D).
type FrontierParams struct {
	// Mu is the target success rate, the Gaussian's peak (0.5).
	Mu float64
	// Sigma is the Gaussian's bandwidth (0.25).
	Sigma float64
	// Gamma is the share of the batch drawn uniformly from outside the
	// frontier pool (0.2).
	Gamma float64
	// PoolFactor times B is the frontier pool's size (3).
	PoolFactor int
}

// DefaultFrontier returns ScaleCUA's constants.
func DefaultFrontier() FrontierParams {
	return FrontierParams{Mu: 0.5, Sigma: 0.25, Gamma: 0.2, PoolFactor: 3}
}

// Validate checks the parameters' domains.
func (p FrontierParams) Validate() error {
	if !(p.Mu >= 0 && p.Mu <= 1) || !(p.Sigma > 0) || math.IsInf(p.Sigma, 0) || !(p.Gamma >= 0 && p.Gamma <= 1) || p.PoolFactor < 1 {
		return fmt.Errorf("%w: frontier mu %v sigma %v gamma %v pool factor %d; want mu in [0,1], sigma > 0, gamma in [0,1], factor >= 1",
			ErrBadParams, p.Mu, p.Sigma, p.Gamma, p.PoolFactor)
	}
	return nil
}

// Frontier is ScaleCUA's Frontier Sampling.
//
// Each rated task gets w = exp(-(p - mu)^2 / (2 sigma^2)) on its EMA p. The
// PoolFactor*B rated tasks of largest w form the frontier pool (ties: smaller
// task id first). B - round(gamma B) tasks are drawn from the pool without
// replacement, each successive draw proportional to w; round(gamma B) are
// drawn uniformly from the eligible tasks outside the pool. Tasks with no
// rate (never tried) cannot enter the frontier pool, which ranks by a rate,
// but are eligible for the uniform channel. When the pool or the outside
// holds fewer tasks than its channel's share, the other channel takes the
// rest, so a batch always has B distinct tasks.
type Frontier struct {
	Params FrontierParams
}

// NewFrontier returns a Frontier sampler with ScaleCUA's defaults.
func NewFrontier() *Frontier { return &Frontier{Params: DefaultFrontier()} }

// Name implements Sampler.
func (f *Frontier) Name() string { return NameFrontier }

// FrontierWeight is eq. 2: exp(-(p - mu)^2 / (2 sigma^2)).
func FrontierWeight(p, mu, sigma float64) float64 {
	d := p - mu
	return math.Exp(-d * d / (2 * sigma * sigma))
}

// Weight implements Sampler: eq. 2 on the EMA; none for a task never tried.
func (f *Frontier) Weight(r *schemas.PassRate) (float64, bool) {
	if r.EMA == nil {
		return 0, false
	}
	return FrontierWeight(*r.EMA, f.Params.Mu, f.Params.Sigma), true
}

// FrontierSplit returns how many of B tasks the frontier and the uniform
// channel take: uniform = round(gamma B) (half away from zero), frontier =
// B - uniform.
func FrontierSplit(b int, gamma float64) (frontier, uniform int) {
	u := roundCount(gamma * float64(b))
	return b - u, u
}

// frontierPool returns the view positions of the frontier pool: the k rated
// tasks of largest weight, ties broken by smaller task id, ordered by weight
// (largest first), with their weights. It ranks by -(p - mu)^2, which
// orders tasks exactly as w does (w is a decreasing function of it) without
// an exp per task, keeps a k-sized heap (O(n log k)) and computes w for the
// k winners only.
func (f *Frontier) frontierPool(v *view, k int) ([]int, []float64) {
	h := make(minKeys, 0, k)
	mu := f.Params.Mu
	for i := 0; i < v.n(); i++ {
		r := v.row(i)
		if r.EMA == nil {
			continue
		}
		d := *r.EMA - mu
		key := -d * d
		if len(h) < k {
			heap.Push(&h, keyed{key, i})
			continue
		}
		// i is larger than every index in the heap, so an equal key loses.
		if k > 0 && key > h[0].key {
			h[0] = keyed{key, i}
			heap.Fix(&h, 0)
		}
	}
	top := drainDesc(&h)
	pos := make([]int, len(top))
	ws := make([]float64, len(top))
	for j, t := range top {
		pos[j] = t.idx
		ws[j] = FrontierWeight(*v.row(t.idx).EMA, mu, f.Params.Sigma)
	}
	return pos, ws
}

// FrontierPoolIDs returns the task ids of the frontier pool for batch size
// b, in weight order: for tests, audits and the docs' worked example.
func (f *Frontier) FrontierPoolIDs(pool []schemas.PassRate, b int) ([]string, error) {
	if err := f.Params.Validate(); err != nil {
		return nil, err
	}
	v, err := newView(pool, Request{BatchSize: 1})
	if err != nil {
		return nil, err
	}
	pos, _ := f.frontierPool(v, f.Params.PoolFactor*b)
	ids := make([]string, len(pos))
	for i, p := range pos {
		ids[i] = v.row(p).TaskID
	}
	return ids, nil
}

// Select implements Sampler. Rows: frontier picks first, in draw order
// (channel "frontier", weight w), then uniform picks (channel "uniform",
// weight 1).
func (f *Frontier) Select(pool []schemas.PassRate, req Request) ([]schemas.Batch, error) {
	if err := f.Params.Validate(); err != nil {
		return nil, err
	}
	v, err := newView(pool, req)
	if err != nil {
		return nil, err
	}
	b := req.BatchSize
	rng := newRNG(req.Seed, NameFrontier, req.Iteration, req.Round)
	fpos, fw := f.frontierPool(v, f.Params.PoolFactor*b)
	nF, nU := FrontierSplit(b, f.Params.Gamma)
	outside := v.n() - len(fpos)
	if nU > outside { // too few tasks outside the pool: the pool fills in
		nU, nF = outside, b-outside
	}
	if nF > len(fpos) { // too few rated tasks: the uniform channel fills in
		nF, nU = len(fpos), b-len(fpos)
	}
	picks := make([]pick, 0, b)
	for _, j := range weightedSample(rng, len(fpos), nF, func(i int) float64 { return fw[i] }) {
		picks = append(picks, pick{pos: fpos[j], channel: ChannelFrontier, weight: fw[j]})
	}
	// Uniform draw of ranks among the outside tasks, mapped to view
	// positions by skipping the (sorted) pool positions.
	inPool := slices.Clone(fpos)
	slices.Sort(inPool)
	for _, r := range uniformSample(rng, outside, nU) {
		p := r
		for _, q := range inPool {
			if q <= p {
				p++
			} else {
				break
			}
		}
		picks = append(picks, pick{pos: p, channel: ChannelUniform, weight: 1})
	}
	return v.rows(picks, NameFrontier, req), nil
}
