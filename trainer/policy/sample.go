package policy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/cualake/cualake/trainer/internal/tx"
)

// DefaultTemperature is the rollout sampling temperature (ScaleCUA
// appendix D).
const DefaultTemperature = 0.8

// SampleOptions control Sample.
type SampleOptions struct {
	// Temperature scales logits before sampling; must be > 0 (use Greedy for
	// argmax decoding).
	Temperature float64
	// TopP keeps the smallest set of most likely tokens whose probability
	// reaches TopP; 1 disables the cut.
	TopP float64
	// MaxTokens bounds the action length; 0 means the config's MaxAction.
	MaxTokens int
	// Seed fixes the draw: input i uses a PCG generator seeded with
	// (Seed, i), so a result does not depend on the batch it came with.
	Seed uint64
}

// DefaultSampleOptions returns temperature 0.8, no top-p cut.
func DefaultSampleOptions() SampleOptions {
	return SampleOptions{Temperature: DefaultTemperature, TopP: 1}
}

// Action is a decoded action: its token ids (ending with <eos> unless the
// length bound was hit) and the log-probability of each token.
//
// For Sample the log-probabilities are under the temperature-scaled
// distribution before the top-p cut (what vLLM reports as processed
// log-probabilities without truncation), which is what GRPO's importance
// ratio needs when training uses the same temperature. For Greedy they are
// under the plain (temperature 1) policy.
type Action struct {
	Tokens []int32
	Logp   []float32
}

// text renders the action's tokens without the trailing <eos>.
func (a Action) text(v *Vocab) string {
	toks := a.Tokens
	if n := len(toks); n > 0 && toks[n-1] == EOSID {
		toks = toks[:n-1]
	}
	return v.Decode(toks)
}

// Text renders an action's tokens (without the trailing <eos>) with the
// policy's vocabulary.
func (p *Policy) Text(a Action) string { return a.text(p.vocab) }

// Sample draws one action per input.
func (p *Policy) Sample(inputs []Input, opts SampleOptions) ([]Action, error) {
	if !(opts.Temperature > 0) || math.IsInf(opts.Temperature, 0) {
		return nil, fmt.Errorf("sample: temperature %v must be positive and finite (use Greedy for argmax)", opts.Temperature)
	}
	if !(opts.TopP > 0 && opts.TopP <= 1) {
		return nil, fmt.Errorf("sample: top_p %v outside (0, 1]", opts.TopP)
	}
	out, err := p.decode(inputs, opts, false)
	if err != nil {
		return nil, fmt.Errorf("sample: %w", err)
	}
	return out, nil
}

// Greedy decodes the most likely token at every step.
func (p *Policy) Greedy(inputs []Input, maxTokens int) ([]Action, error) {
	out, err := p.decode(inputs, SampleOptions{Temperature: 1, TopP: 1, MaxTokens: maxTokens}, true)
	if err != nil {
		return nil, fmt.Errorf("greedy: %w", err)
	}
	return out, nil
}

func (p *Policy) decode(inputs []Input, opts SampleOptions, greedy bool) (out []Action, err error) {
	maxTok := opts.MaxTokens
	if maxTok == 0 {
		maxTok = p.cfg.MaxAction
	}
	if maxTok < 0 || maxTok > p.cfg.MaxAction {
		return nil, fmt.Errorf("max tokens %d outside 1..%d", maxTok, p.cfg.MaxAction)
	}
	bi, err := p.makeBatch(inputs)
	if err != nil {
		return nil, err
	}
	defer tx.Lock()()
	defer tx.Recover(&err, "decode")
	s := tx.NewScope()
	defer s.Close()
	B, V := int(bi.b), p.cfg.VocabSize
	rngs := make([]*rand.Rand, B)
	for i := range rngs {
		rngs[i] = rand.New(rand.NewPCG(opts.Seed, uint64(i)))
	}
	out = make([]Action, B)
	err = tx.NoGrad(func() error {
		enc := p.encode(s, bi)
		st := p.initState(s, enc, bi.b)
		prev := make([]int64, B)
		for i := range prev {
			prev[i] = int64(BOSID)
		}
		done := make([]bool, B)
		for k := 0; k < maxTok; k++ {
			// each step's tensors are dropped as soon as the next exists
			step := tx.NewScope()
			tok := step.Int64s(prev, []int64{bi.b}, p.dev)
			if err := step.Err(); err != nil {
				step.Close()
				return err
			}
			next := p.step(s, enc, st, tok)
			logits := p.project(step, enc, next.o, next.a)
			if opts.Temperature != 1 {
				logits = step.MulScalar(logits, 1/opts.Temperature)
			}
			lp := step.LogSoftmax(logits, -1)
			if err := firstErr(s.Err(), step.Err()); err != nil {
				step.Close()
				return err
			}
			flat, err := tx.ReadFloat32(lp)
			step.Close()
			if err != nil {
				return err
			}
			st = next
			left := 0
			for i := 0; i < B; i++ {
				if done[i] {
					prev[i] = int64(PadID)
					continue
				}
				row := flat[i*V : (i+1)*V]
				var id int
				if greedy {
					id = argmax(row)
				} else {
					id = draw(row, opts.TopP, rngs[i])
				}
				out[i].Tokens = append(out[i].Tokens, int32(id))
				out[i].Logp = append(out[i].Logp, row[id])
				prev[i] = int64(id)
				if int32(id) == EOSID {
					done[i] = true
				} else {
					left++
				}
			}
			if left == 0 {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// argmax returns the first index of the largest value.
func argmax(row []float32) int {
	best := 0
	for i, v := range row {
		if v > row[best] {
			best = i
		}
	}
	return best
}

// draw samples an index from log-probabilities after a top-p cut. Ties in
// probability are ordered by id so the nucleus is deterministic.
func draw(logp []float32, topP float64, rng *rand.Rand) int {
	idx := make([]int, len(logp))
	for i := range idx {
		idx[i] = i
	}
	if topP < 1 {
		sort.SliceStable(idx, func(a, b int) bool { return logp[idx[a]] > logp[idx[b]] })
		cum := 0.0
		for n, i := range idx {
			cum += math.Exp(float64(logp[i]))
			if cum >= topP {
				idx = idx[:n+1]
				break
			}
		}
	}
	total := 0.0
	for _, i := range idx {
		total += math.Exp(float64(logp[i]))
	}
	u := rng.Float64() * total
	for _, i := range idx {
		u -= math.Exp(float64(logp[i]))
		if u < 0 {
			return i
		}
	}
	return idx[len(idx)-1] // rounding left u >= 0: take the last candidate
}
