package verify

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/cualake/cualake/pipeline/advantage"
	"github.com/cualake/cualake/schemas"
)

// TrainParams configure Train.
type TrainParams struct {
	Iterations int     // policy updates; 0 means as many as the source yields batches (FixedSource) or 12
	LR         float64 // Adam step size (default 0.1)
	Eps        float64 // REINFORCE++'s epsilon under the square root (default advantage.DefaultBatchEps)
	MaxGrad    float64 // gradient-norm clip before Adam (default 5)
	Seed       int64
	Workers    int // parallel attempts (output does not depend on it)
	// Validation, when set, are held-out terminal states the greedy
	// strategy is scored on after every update; Train returns the iterate
	// (the initial strategy included) with the best mean reward there.
	Validation []*Input
}

// adam is the optimiser state over the concatenated weights. Adam's
// per-weight scaling matters here: a feature that is rare in a batch (an
// infeasible-task claim) gets small but consistent gradients that plain
// steps would drown under the common ones.
type adam struct {
	m, v []float64
	t    int
}

func (o *adam) step(w, g []float64, lr float64) {
	const b1, b2, eps = 0.9, 0.999, 1e-8
	if o.m == nil {
		o.m, o.v = make([]float64, len(w)), make([]float64, len(w))
	}
	o.t++
	c1, c2 := 1-math.Pow(b1, float64(o.t)), 1-math.Pow(b2, float64(o.t))
	for i := range w {
		o.m[i] = b1*o.m[i] + (1-b1)*g[i]
		o.v[i] = b2*o.v[i] + (1-b2)*g[i]*g[i]
		w[i] += lr * (o.m[i] / c1) / (math.Sqrt(o.v[i]/c2) + eps) // ascent: the gradient is of the expected return
	}
}

func (p *TrainParams) defaults() {
	if p.LR == 0 {
		p.LR = 0.1
	}
	if p.Eps == 0 {
		p.Eps = advantage.DefaultBatchEps
	}
	if p.MaxGrad == 0 {
		p.MaxGrad = 5
	}
	if p.Workers <= 0 {
		p.Workers = runtime.NumCPU()
	}
}

// Source yields the terminal states of one training iteration. Each state
// is verified exactly once (VeriCUA's single-attempt constraint); it
// returns nil when it has nothing more.
type Source interface {
	Batch(ctx context.Context, iteration int) ([]*Input, error)
	Name() string
}

// BenchSource rolls the Perturbed actor out on batch tasks drawn (seeded)
// from the pool at every iteration, each at a fresh seed, so every
// iteration verifies new terminal states.
type BenchSource struct {
	Tasks   []schemas.Task
	Size    int // episodes per iteration
	Seed    int64
	Workers int
}

// Name implements Source.
func (b *BenchSource) Name() string { return "bench" }

// Batch implements Source.
func (b *BenchSource) Batch(ctx context.Context, it int) ([]*Input, error) {
	if len(b.Tasks) == 0 {
		return nil, errors.New("verify bench: no tasks")
	}
	rng := rand.New(rand.NewPCG(uint64(b.Seed), uint64(it)+1))
	idx := rng.Perm(len(b.Tasks))[:min(b.Size, len(b.Tasks))]
	tasks := make([]schemas.Task, len(idx))
	for i, k := range idx {
		tasks[i] = b.Tasks[k]
	}
	return BenchInputs(ctx, tasks, mix(b.Seed, "bench", it), int32(it), b.Workers, true)
}

// FixedSource serves recorded terminal states (a snapshot's trajectories)
// in batches, each once.
type FixedSource struct {
	Inputs []*Input
	Size   int
}

// Name implements Source.
func (f *FixedSource) Name() string { return "lake" }

// Batch implements Source.
func (f *FixedSource) Batch(_ context.Context, it int) ([]*Input, error) {
	size := max(f.Size, 1)
	lo := it * size
	if lo >= len(f.Inputs) {
		return nil, nil
	}
	return f.Inputs[lo:min(lo+size, len(f.Inputs))], nil
}

// IterationStats reports one training iteration: the sampled attempts it
// learned from and, with validation states, the greedy strategy after it.
type IterationStats struct {
	Iteration           int     `json:"iteration"`
	Attempts            int     `json:"attempts"`
	Decisions           int     `json:"decisions"`
	MeanReward          float64 `json:"mean_reward"`
	Agreement           float64 `json:"agreement"`
	ProbeRate           float64 `json:"probe_rate"`
	ValidationReward    float64 `json:"validation_reward,omitempty"`
	ValidationAgreement float64 `json:"validation_agreement,omitempty"`
	ValidationProbeRate float64 `json:"validation_probe_rate,omitempty"`
}

// TrainReport is what Train did.
type TrainReport struct {
	Iterations []IterationStats `json:"iterations"`
	Attempts   int              `json:"attempts"`
	Best       int              `json:"best_iteration"` // the iterate returned; -1 is the initial strategy
}

// mix derives a seed from a base seed and a key.
func mix(seed int64, key string, i int) int64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seed))
	h.Write(b[:])
	h.Write([]byte(key))
	binary.LittleEndian.PutUint64(b[:], uint64(i))
	h.Write(b[:])
	return int64(h.Sum64() & (1<<62 - 1))
}

// Train learns the builtin Judge's check and guess choices from
// single verification attempts (VeriCUA section 2.4): each iteration
// verifies a batch of terminal states once with choices sampled from the
// current strategy, scores each attempt with the terminal reward schedule,
// normalises the returns over the batch's decisions with REINFORCE++
// (A = (r - mean) / sqrt(var + eps), every decision of an attempt sharing
// its attempt's return) and takes a policy-gradient step. An attempt on a
// state without an executable outcome is unresolved (-1.0, table 9);
// attempts without any choice add nothing to the gradient. The Probe is
// frozen. Output is deterministic for a seed.
func Train(ctx context.Context, init *Strategy, src Source, p TrainParams) (*Strategy, *TrainReport, error) {
	p.defaults()
	if err := init.Validate(); err != nil {
		return nil, nil, err
	}
	s := init.Clone()
	s.Name = StrategyTrained
	rep := &TrainReport{}
	iters := p.Iterations
	if iters <= 0 {
		iters = 1 << 30
		if _, ok := src.(*BenchSource); ok {
			iters = 12
		}
	}
	opt := &adam{}
	best, bestReward := s.Clone(), math.Inf(-1)
	rep.Best = -1
	if p.Validation != nil {
		m, err := validate(ctx, s, p.Validation, p.Workers)
		if err != nil {
			return nil, nil, err
		}
		bestReward = m.MeanReward
	}
	for it := 0; it < iters; it++ {
		inputs, err := src.Batch(ctx, it)
		if err != nil {
			return nil, nil, fmt.Errorf("verify train: iteration %d: %w", it, err)
		}
		if len(inputs) == 0 {
			break
		}
		atts, err := attempts(ctx, s, inputs, p.Seed, it, p.Workers)
		if err != nil {
			return nil, nil, fmt.Errorf("verify train: iteration %d: %w", it, err)
		}
		st, err := update(s, inputs, atts, p, opt)
		if err != nil {
			return nil, nil, fmt.Errorf("verify train: iteration %d: %w", it, err)
		}
		st.Iteration = it
		if p.Validation != nil {
			m, err := validate(ctx, s, p.Validation, p.Workers)
			if err != nil {
				return nil, nil, err
			}
			st.ValidationReward, st.ValidationAgreement, st.ValidationProbeRate = m.MeanReward, m.Agreement, m.ProbeRate
			if m.MeanReward > bestReward {
				best, bestReward, rep.Best = s.Clone(), m.MeanReward, it
			}
		}
		rep.Iterations = append(rep.Iterations, st)
		rep.Attempts += st.Attempts
	}
	if p.Validation != nil {
		s = best
		s.Name = StrategyTrained
	} else {
		rep.Best = len(rep.Iterations) - 1
	}
	batch := 0
	for _, it := range rep.Iterations {
		batch = max(batch, it.Attempts)
	}
	s.Trained = &TrainInfo{From: init.Name, Iterations: len(rep.Iterations), Batch: batch, Attempts: rep.Attempts, LR: p.LR, Seed: p.Seed, Source: src.Name()}
	return s, rep, nil
}

// validate scores the greedy strategy on held-out states.
func validate(ctx context.Context, s *Strategy, inputs []*Input, workers int) (Metrics, error) {
	rows, err := Evaluate(ctx, inputs, []*Strategy{s}, workers)
	if err != nil {
		return Metrics{}, fmt.Errorf("verify train: validation: %w", err)
	}
	for _, m := range Summarize(rows) {
		if m.Domain == AllDomains {
			return m, nil
		}
	}
	return Metrics{}, nil
}

// attempts verifies every input once with sampled choices, in parallel;
// each attempt's random choices derive from (seed, iteration, index).
func attempts(ctx context.Context, s *Strategy, inputs []*Input, seed int64, it, workers int) ([]*Attempt, error) {
	out := make([]*Attempt, len(inputs))
	errs := make([]error, len(inputs))
	var wg sync.WaitGroup
	jobs := make(chan int)
	for w := 0; w < max(1, workers); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				rng := rand.New(rand.NewPCG(uint64(mix(seed, "attempt", it)), uint64(i)))
				out[i], errs[i] = NewRunner(s, rng, false).Run(ctx, inputs[i])
			}
		}()
	}
	for i := range inputs {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return out, errors.Join(errs...)
}

// update takes one REINFORCE++ step on s from a batch of attempts.
func update(s *Strategy, inputs []*Input, atts []*Attempt, p TrainParams, opt *adam) (IterationStats, error) {
	var st IterationStats
	var rewards, weights []float64
	var used []int
	for i, a := range atts {
		// A state without an executable outcome is not skipped: its
		// attempt is unresolved and scores -1.0 like any other (table 9).
		r := Reward(a.Verdict, inputs[i].Outcome, a.ProbeUsed)
		st.Attempts++
		st.MeanReward += r
		if a.Verdict == inputs[i].Outcome {
			st.Agreement++
		}
		if a.ProbeUsed {
			st.ProbeRate++
		}
		if len(a.decisions) == 0 {
			continue
		}
		rewards = append(rewards, r)
		weights = append(weights, float64(len(a.decisions)))
		used = append(used, i)
	}
	if st.Attempts > 0 {
		n := float64(st.Attempts)
		st.MeanReward, st.Agreement, st.ProbeRate = st.MeanReward/n, st.Agreement/n, st.ProbeRate/n
	}
	if len(used) == 0 {
		return st, nil
	}
	adv, err := advantage.BatchNormalize(rewards, weights, p.Eps)
	if err != nil {
		return st, err
	}
	gCheck := make([]float64, len(s.Check))
	gGuess := make([]float64, len(s.Guess))
	tokens := 0
	for k, i := range used {
		for _, d := range atts[i].decisions {
			tokens++
			w, g := s.Check, gCheck
			if d.kind == decGuess {
				w, g = s.Guess, gGuess
			}
			coef := adv[k] * (float64(d.a) - sigmoid(dot(w, d.x)))
			for j := range g {
				g[j] += coef * d.x[j]
			}
		}
	}
	st.Decisions = tokens
	norm := 0.0
	for _, g := range [][]float64{gCheck, gGuess} {
		for j := range g {
			g[j] /= float64(tokens)
			norm += g[j] * g[j]
		}
	}
	scale := 1.0
	if norm = math.Sqrt(norm); norm > p.MaxGrad {
		scale = p.MaxGrad / norm
	}
	w := append(append([]float64(nil), s.Check...), s.Guess...)
	g := append(append([]float64(nil), gCheck...), gGuess...)
	for j := range g {
		g[j] *= scale
	}
	opt.step(w, g, p.LR)
	copy(s.Check, w[:len(s.Check)])
	copy(s.Guess, w[len(s.Check):])
	return st, s.Validate()
}

// Evaluate verifies inputs with each strategy greedily and returns the
// rows (input order, then strategy order).
func Evaluate(ctx context.Context, inputs []*Input, strategies []*Strategy, workers int) ([]schemas.Verification, error) {
	var out []schemas.Verification
	for _, s := range strategies {
		rows := make([]schemas.Verification, len(inputs))
		errs := make([]error, len(inputs))
		var wg sync.WaitGroup
		jobs := make(chan int)
		for w := 0; w < max(1, workers); w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range jobs {
					a, err := NewRunner(s, nil, false).Run(ctx, inputs[i])
					if err != nil {
						errs[i] = err
						continue
					}
					rows[i] = a.Row(inputs[i], s.Name)
				}
			}()
		}
		for i := range inputs {
			jobs <- i
		}
		close(jobs)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}
