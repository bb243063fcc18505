package trainer

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/sugarme/gotch/ts"

	"github.com/cualake/cualake/trainer/internal/tx"
	"github.com/cualake/cualake/trainer/policy"
)

// Item is one training example: a context and the action tokens the policy
// wrote (or should write) for it.
type Item struct {
	// Context is the token-id context (instruction, history, observation).
	Context []int32
	// Patches holds one feature vector per <|image_pad|> in Context, for a
	// policy with a vision input.
	Patches [][]float32
	// Action is the action's token ids, ending with <eos> when the policy
	// emitted it.
	Action []int32
	// LossMask marks trainable action tokens (1) per Action token; nil means
	// all are trainable.
	LossMask []uint8
	// OldLogp holds the rollout policy's log-probability of each Action token
	// (at the sampling temperature); nil means "not recorded": GRPOStep then
	// uses the current policy's values, i.e. treats the item as on-policy.
	OldLogp []float32
	// Advantage is the item's advantage (GroupAdvantages or STEPOAdvantages);
	// ignored by SFT.
	Advantage float32
}

func (it Item) input() policy.Input { return policy.Input{Tokens: it.Context, Patches: it.Patches} }

// checkItems validates the parts of a batch the model does not check itself.
func checkItems(items []Item, needOld bool) error {
	if len(items) == 0 {
		return errors.New("empty batch")
	}
	for i, it := range items {
		if len(it.Action) == 0 {
			return fmt.Errorf("item %d: empty action", i)
		}
		if it.LossMask != nil && len(it.LossMask) != len(it.Action) {
			return fmt.Errorf("item %d: loss mask has %d entries for %d action tokens", i, len(it.LossMask), len(it.Action))
		}
		if it.OldLogp != nil && len(it.OldLogp) != len(it.Action) {
			return fmt.Errorf("item %d: old logprobs have %d entries for %d action tokens", i, len(it.OldLogp), len(it.Action))
		}
		for k, v := range it.OldLogp {
			if math.IsNaN(float64(v)) || v > 1e-3 || math.IsInf(float64(v), 0) {
				return fmt.Errorf("item %d: old logprob %d is %v (want finite, <= 0)", i, k, v)
			}
		}
		if a := float64(it.Advantage); needOld && (math.IsNaN(a) || math.IsInf(a, 0)) {
			return fmt.Errorf("item %d: advantage is %v", i, a)
		}
	}
	return nil
}

// batchParts splits items into the model's inputs and the padded [B, L]
// per-token arrays.
type batchParts struct {
	inputs  []policy.Input
	actions [][]int32
	masks   [][]uint8
	l       int
	mask    []float32 // [B, L]
	adv     []float32 // [B, L]
	old     []float32 // [B, L], 0 where missing
	hasOld  []float32 // [B, L], 1 where OldLogp was given
	missing int       // items without OldLogp
}

func split(items []Item) *batchParts {
	bp := &batchParts{}
	for _, it := range items {
		bp.inputs = append(bp.inputs, it.input())
		bp.actions = append(bp.actions, it.Action)
		bp.masks = append(bp.masks, it.LossMask)
		bp.l = max(bp.l, len(it.Action))
	}
	n := len(items) * bp.l
	bp.mask, bp.adv = make([]float32, n), make([]float32, n)
	bp.old, bp.hasOld = make([]float32, n), make([]float32, n)
	for i, it := range items {
		if it.OldLogp == nil {
			bp.missing++
		}
		for k := range it.Action {
			o := i*bp.l + k
			if it.LossMask == nil || it.LossMask[k] != 0 {
				bp.mask[o] = 1
			}
			bp.adv[o] = it.Advantage
			if it.OldLogp != nil {
				bp.old[o], bp.hasOld[o] = it.OldLogp[k], 1
			}
		}
	}
	return bp
}

// StepMetrics reports one SFT update.
type StepMetrics struct {
	// Loss is the masked token cross-entropy before the update.
	Loss float64
	// TokenAccuracy is the share of masked tokens whose argmax is the target.
	TokenAccuracy float64
	// Tokens is the number of masked tokens.
	Tokens int
	// GradNorm is the global gradient L2 norm before clipping.
	GradNorm float64
	// LR is the learning rate used.
	LR float64
}

// SFTStep applies one supervised (behaviour-cloning) update on batch:
// masked token cross-entropy at temperature 1, then Adam with gradient-norm
// clipping at maxGradNorm (0 disables it).
func SFTStep(model *policy.Policy, opt *Optimizer, batch []Item, maxGradNorm float64) (m StepMetrics, err error) {
	if err := checkOwner(model, opt); err != nil {
		return m, fmt.Errorf("sft step: %w", err)
	}
	if err := checkItems(batch, false); err != nil {
		return m, fmt.Errorf("sft step: %w", err)
	}
	bp := split(batch)
	logits, err := model.Logits(bp.inputs, bp.actions)
	if err != nil {
		return m, fmt.Errorf("sft step: %w", err)
	}
	defer tx.Lock()()
	defer tx.Recover(&err, "sft step")
	s := tx.NewScope()
	defer s.Close()
	s.Track("logits", logits, nil)
	dev := model.Device()
	B, L := int64(len(batch)), int64(bp.l)
	mask := s.Float32s(bp.mask, []int64{B, L}, dev)
	lp := s.LogSoftmax(logits, -1)
	loss := crossEntropy(s, s.PickActions(lp, bp.actions, dev), mask)
	if err := s.Err(); err != nil {
		return m, fmt.Errorf("sft step: %w", err)
	}
	err = tx.NoGrad(func() error {
		var e error
		if m.Loss, e = tx.Scalar(loss); e != nil {
			return e
		}
		m.TokenAccuracy, m.Tokens, e = tokenAccuracy(lp, bp)
		return e
	})
	if err != nil {
		return m, fmt.Errorf("sft step: %w", err)
	}
	if m.GradNorm, err = opt.update(s, loss, maxGradNorm); err != nil {
		return m, fmt.Errorf("sft step: %w", err)
	}
	m.LR = opt.lr
	return m, nil
}

// tokenAccuracy compares argmax predictions with the targets on masked
// positions (in Go: the batch is small).
func tokenAccuracy(lp *ts.Tensor, bp *batchParts) (float64, int, error) {
	s := tx.NewScope()
	defer s.Close()
	t, err := lp.Argmax([]int64{-1}, false, false)
	am := s.Track("argmax", t, err)
	if s.Err() != nil {
		return 0, 0, s.Err()
	}
	pred, err := tx.ReadInt64(am)
	if err != nil {
		return 0, 0, err
	}
	hit, n := 0, 0
	for i, a := range bp.actions {
		for k, id := range a {
			if bp.mask[i*bp.l+k] == 0 {
				continue
			}
			n++
			if pred[i*bp.l+k] == int64(id) {
				hit++
			}
		}
	}
	if n == 0 {
		return 0, 0, nil
	}
	return float64(hit) / float64(n), n, nil
}

func checkOwner(model *policy.Policy, opt *Optimizer) error {
	if model == nil || opt == nil {
		return errors.New("nil model or optimizer")
	}
	if opt.model != model {
		return errors.New("optimizer was created for another model")
	}
	return nil
}

// SFTOptions control SFT.
type SFTOptions struct {
	// LR is Adam's learning rate; 0 means DefaultSFTLR.
	LR float64
	// Epochs is the number of passes over the batches; 0 means 1.
	Epochs int
	// MaxGradNorm clips the gradient norm; 0 means DefaultMaxGradNorm, < 0
	// disables clipping.
	MaxGradNorm float64
	// Seed orders the batches in each epoch (a seeded shuffle).
	Seed uint64
}

// SFT trains model on batches for opts.Epochs epochs with a fresh Adam and
// returns the metrics of every step. Same model, batches and options give the
// same weights (on the CPU with a fixed thread count, see SetThreads).
func SFT(model *policy.Policy, batches [][]Item, opts SFTOptions) ([]StepMetrics, error) {
	if opts.LR == 0 {
		opts.LR = DefaultSFTLR
	}
	if opts.Epochs == 0 {
		opts.Epochs = 1
	}
	if opts.Epochs < 0 {
		return nil, fmt.Errorf("sft: epochs %d negative", opts.Epochs)
	}
	if opts.MaxGradNorm == 0 {
		opts.MaxGradNorm = DefaultMaxGradNorm
	}
	if len(batches) == 0 {
		return nil, errors.New("sft: no batches")
	}
	opt, err := NewOptimizer(model, opts.LR)
	if err != nil {
		return nil, fmt.Errorf("sft: %w", err)
	}
	defer opt.Close()
	rng := rand.New(rand.NewPCG(opts.Seed, 0x5f7))
	var out []StepMetrics
	for e := 0; e < opts.Epochs; e++ {
		for _, b := range rng.Perm(len(batches)) {
			m, err := SFTStep(model, opt, batches[b], max(opts.MaxGradNorm, 0))
			if err != nil {
				return out, fmt.Errorf("sft: epoch %d batch %d: %w", e, b, err)
			}
			out = append(out, m)
		}
	}
	return out, nil
}

// GRPOOptions control GRPOStep.
type GRPOOptions struct {
	LossConfig
	// Temperature is the rollout sampling temperature; log-probabilities are
	// computed at it so that ratios are exactly 1 for on-policy tokens.
	Temperature float64
	// MaxGradNorm clips the gradient norm; 0 disables clipping.
	MaxGradNorm float64
}

// DefaultGRPOOptions returns ScaleCUA's objective, temperature 0.8 and
// gradient clipping at 1.0.
func DefaultGRPOOptions() GRPOOptions {
	return GRPOOptions{LossConfig: DefaultLossConfig(), Temperature: policy.DefaultTemperature, MaxGradNorm: DefaultMaxGradNorm}
}

// GRPOMetrics reports one GRPO update.
type GRPOMetrics struct {
	LossStats
	// Entropy is the mean entropy (nats) of the temperature-scaled
	// next-token distribution over masked tokens.
	Entropy float64
	// GradNorm is the global gradient L2 norm before clipping.
	GradNorm float64
	// RecomputedOldLogp counts items whose OldLogp was missing and taken from
	// the current policy.
	RecomputedOldLogp int
	// LR is the learning rate used.
	LR float64
}

// GRPOStep applies one clipped-surrogate update (LossConfig) on batch, with
// the KL penalty measured against ref (nil: no KL term). Calling it several
// times on the same batch with the recorded OldLogp gives PPO-style epochs;
// the clip then bounds how far they move.
func GRPOStep(model, ref *policy.Policy, opt *Optimizer, batch []Item, opts GRPOOptions) (m GRPOMetrics, err error) {
	if err := checkOwner(model, opt); err != nil {
		return m, fmt.Errorf("grpo step: %w", err)
	}
	if err := opts.LossConfig.Validate(); err != nil {
		return m, fmt.Errorf("grpo step: %w", err)
	}
	if !(opts.Temperature > 0) || math.IsInf(opts.Temperature, 0) {
		return m, fmt.Errorf("grpo step: temperature %v must be positive", opts.Temperature)
	}
	if err := checkItems(batch, true); err != nil {
		return m, fmt.Errorf("grpo step: %w", err)
	}
	if ref == model {
		return m, errors.New("grpo step: ref must be a separate frozen copy (policy.Clone)")
	}
	bp := split(batch)
	var refLogp [][]float32
	if ref != nil {
		if refLogp, err = ref.LogProbs(bp.inputs, bp.actions, opts.Temperature); err != nil {
			return m, fmt.Errorf("grpo step: reference: %w", err)
		}
	}
	logits, err := model.Logits(bp.inputs, bp.actions)
	if err != nil {
		return m, fmt.Errorf("grpo step: %w", err)
	}
	defer tx.Lock()()
	defer tx.Recover(&err, "grpo step")
	s := tx.NewScope()
	defer s.Close()
	s.Track("logits", logits, nil)
	dev := model.Device()
	B, L := int64(len(batch)), int64(bp.l)
	shape := []int64{B, L}
	lp := s.LogSoftmaxT(logits, opts.Temperature)
	logp := s.PickActions(lp, bp.actions, dev)
	mask := s.Float32s(bp.mask, shape, dev)
	adv := s.Float32s(bp.adv, shape, dev)
	old := s.Float32s(bp.old, shape, dev)
	if bp.missing > 0 {
		// on-policy items: old = current (detached), so their ratio is 1
		has := s.GtScalar(s.Float32s(bp.hasOld, shape, dev), 0.5)
		old = s.Where(has, old, s.Detach(logp))
	}
	var refT *ts.Tensor
	if ref != nil {
		flat := make([]float32, B*L)
		for i, r := range refLogp {
			copy(flat[i*bp.l:], r)
		}
		refT = s.Float32s(flat, shape, dev)
	}
	loss, pl, kl, ratio := surrogate(s, logp, old, refT, adv, mask, opts.LossConfig)
	if err := s.Err(); err != nil {
		return m, fmt.Errorf("grpo step: %w", err)
	}
	err = tx.NoGrad(func() error {
		var e error
		if m.LossStats, e = surrogateStats(s, loss, pl, kl, ratio, adv, mask, opts.LossConfig); e != nil {
			return e
		}
		d := s.Detach(lp)
		ent := s.MulScalar(s.SumDim(s.Mul(s.Exp(d), d), 2, false), -1) // [B, L]
		m.Entropy, e = tx.Scalar(aggregate(s, ent, mask, TokenMean))
		return e
	})
	if err != nil {
		return m, fmt.Errorf("grpo step: %w", err)
	}
	m.RecomputedOldLogp = bp.missing
	if m.GradNorm, err = opt.update(s, loss, opts.MaxGradNorm); err != nil {
		return m, fmt.Errorf("grpo step: %w", err)
	}
	m.LR = opt.lr
	return m, nil
}

// SetThreads sets libtorch's intra-op thread count for the whole process.
// Bit-identical results across runs need the same count on both; 1 is the
// safe choice for reproducible CPU training of this small model.
func SetThreads(n int) error { return tx.SetThreads(n) }
