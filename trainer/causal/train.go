package causal

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/sugarme/gotch/ts"

	"github.com/cualake/cualake/trainer"
	"github.com/cualake/cualake/trainer/internal/tx"
)

// Item is one training item exactly as a segments row holds it: the token
// stream in tokenizer ids, its loss mask (1 on trained tokens), the
// rollout's log-probabilities (0 where the mask is 0), the advantage, and
// the patches of the screenshots its vision blocks show. SFT and GRPO read
// the same items.
type Item struct {
	// ID names the item in errors (the segment id).
	ID string
	// Group is the rollout group, for mini-batches of whole groups.
	Group     string
	IDs       []int32
	Mask      []int8
	Logp      []float32
	HasLogp   bool
	Advantage float32
	Images    [][][]float32
	// RefLogp, when set by (*Model).FillRefLogp, holds the reference
	// policy's log-probabilities of the trainable tokens at temperature
	// RefTemp. The reference is frozen, so GRPOStep reads them instead of
	// running the reference again each time a mini-batch comes round; it
	// cannot tell which model filled them, so fill them with the ref it is
	// given.
	RefLogp []float32
	RefTemp float64
}

// Trainable returns the positions of the item's trained tokens.
func (it *Item) Trainable() []int {
	var at []int
	for k, v := range it.Mask {
		if v == 1 {
			at = append(at, k)
		}
	}
	return at
}

// Check validates what the model does not check itself: equal lengths, a
// 0/1 mask with at least one trained token and none at position 0, and
// recorded log-probabilities that are finite and <= 0.
func (it *Item) Check() error {
	if len(it.Mask) != len(it.IDs) || len(it.Logp) != len(it.IDs) {
		return fmt.Errorf("segment %q: input_ids, loss_mask and logprobs have lengths %d, %d, %d; want equal",
			it.ID, len(it.IDs), len(it.Mask), len(it.Logp))
	}
	n := 0
	for k, v := range it.Mask {
		switch v {
		case 0:
		case 1:
			if k == 0 {
				return fmt.Errorf("segment %q: the first token is marked trainable, but nothing predicts it", it.ID)
			}
			n++
			if lp := float64(it.Logp[k]); math.IsNaN(lp) || math.IsInf(lp, 0) || lp > 1e-3 {
				return fmt.Errorf("segment %q: log-probability %v at token %d, want finite and <= 0", it.ID, lp, k)
			}
		default:
			return fmt.Errorf("segment %q: loss_mask[%d] is %d, want 0 or 1", it.ID, k, v)
		}
	}
	if n == 0 {
		return fmt.Errorf("segment %q has no trainable token", it.ID)
	}
	if a := float64(it.Advantage); math.IsNaN(a) || math.IsInf(a, 0) {
		return fmt.Errorf("segment %q: advantage %v", it.ID, a)
	}
	return nil
}

// Input is the item's stream as the model reads it.
func (it *Item) Input() Input { return Input{IDs: it.IDs, Images: it.Images} }

func checkBatch(batch []Item) (int, error) {
	if len(batch) == 0 {
		return 0, errors.New("empty batch")
	}
	total := 0
	for i := range batch {
		if err := batch[i].Check(); err != nil {
			return 0, err
		}
		total += len(batch[i].Trainable())
	}
	return total, nil
}

// SFTOptions are a supervised step's settings.
type SFTOptions struct {
	// MaxGradNorm clips the global gradient norm (0: none).
	MaxGradNorm float64
	// ContextWeight weighs an auxiliary next-token loss on the context
	// tokens (loss mask 0: instruction, screen text, template) against the
	// trained tokens' loss: the batch's context cross-entropy, averaged over
	// its scorable context tokens (mapped ids the model may write), times
	// ContextWeight, is added. 0 trains the masked tokens alone.
	ContextWeight float64
	// Dropout is the probability that a residual-branch activation of the
	// step's forward passes is zeroed (0: none). A training pass only: the
	// policy samples and scores without it. Masks are drawn from
	// DropoutSeed and each item's index in the batch, so a step's bits do
	// not depend on how many items run at once.
	Dropout     float64
	DropoutSeed uint64
}

// SFTStep is one supervised update: the token cross-entropy of the trained
// tokens at temperature 1, averaged over all of the batch's trained tokens
// (each item's backward pass accumulates its share), plus the weighted
// context loss of opts, then Adam with global-norm clipping.
func SFTStep(m *Model, opt *trainer.Optimizer, batch []Item, opts SFTOptions) (sm trainer.StepMetrics, err error) {
	total, err := checkBatch(batch)
	if err != nil {
		return sm, fmt.Errorf("causal sft step: %w", err)
	}
	if w := opts.ContextWeight; w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
		return sm, fmt.Errorf("causal sft step: context weight %v must be finite and >= 0", w)
	}
	if p := opts.Dropout; !(p >= 0 && p < 1) {
		return sm, fmt.Errorf("causal sft step: dropout %v must be in [0, 1)", p)
	}
	ctxAt := make([][]int, len(batch))
	ctxTotal := 0
	if opts.ContextWeight > 0 {
		for i := range batch {
			ctxAt[i] = m.contextTargets(&batch[i])
			ctxTotal += len(ctxAt[i])
		}
	}
	if err := opt.ZeroGrad(); err != nil {
		return sm, fmt.Errorf("causal sft step: %w", err)
	}
	hits := 0
	err = inOrder(len(batch), m.workers(), func(i int) (itemGrads, error) {
		return m.onLeaves(func(v *Model) (r itemGrads, err error) {
			v.drop = newDropout(opts.Dropout, opts.DropoutSeed, i)
			var ctx []int
			if ctxTotal > 0 {
				ctx = ctxAt[i]
			}
			r.loss, r.hits, err = v.sftItem(&batch[i], float64(total), ctx, opts.ContextWeight/float64(max(ctxTotal, 1)))
			return r, err
		})
	}, func(i int, r itemGrads) error {
		defer r.drop()
		sm.Loss += r.loss
		hits += r.hits
		return m.addGrads(r.grads)
	}, itemGrads.drop)
	if err != nil {
		return sm, fmt.Errorf("causal sft step: %w", err)
	}
	sm.Tokens = total
	sm.TokenAccuracy = float64(hits) / float64(total)
	if sm.GradNorm, err = opt.Apply(opts.MaxGradNorm); err != nil {
		return sm, fmt.Errorf("causal sft step: %w", err)
	}
	sm.LR = opt.LR()
	return sm, nil
}

// contextTargets lists the positions k >= 1 outside the loss mask whose
// token the model can score: mapped, and not a template token it never
// writes (image pads, message starts).
func (m *Model) contextTargets(it *Item) []int {
	var at []int
	for k := 1; k < len(it.IDs); k++ {
		if it.Mask[k] == 1 {
			continue
		}
		c := m.ids.Compact(it.IDs[k])
		if c == Unk || slices.Contains(m.never, c) {
			continue
		}
		at = append(at, k)
	}
	return at
}

// sftItem runs one item's forward and backward pass: its trained tokens'
// loss scaled by 1/total, plus ctxScale times the summed cross-entropy at
// the context positions ctxAt (none when empty). It returns its share of
// the trained tokens' loss (the context loss is not reported) and their
// argmax hits.
func (m *Model) sftItem(it *Item, total float64, ctxAt []int, ctxScale float64) (loss float64, hits int, err error) {
	defer tx.Lock()()
	defer tx.Recover(&err, "sft item")
	s := tx.NewScope()
	defer s.Close()
	at := it.Trainable()
	all := at
	if len(ctxAt) > 0 {
		all = append(slices.Clone(at), ctxAt...)
	}
	sc, err := m.score(s, it.Input(), all, 1)
	if err != nil {
		return 0, 0, fmt.Errorf("segment %q: %w", it.ID, err)
	}
	logp := sc.logp
	if len(ctxAt) > 0 {
		logp = s.Narrow(sc.logp, 1, 0, int64(len(at)))
	}
	l := s.MulScalar(s.Sum(logp), -1/total)
	obj := l
	if len(ctxAt) > 0 {
		obj = s.Add(l, s.MulScalar(s.Sum(s.Narrow(sc.logp, 1, int64(len(at)), int64(len(ctxAt)))), -ctxScale))
	}
	if err := s.Err(); err != nil {
		return 0, 0, fmt.Errorf("segment %q: %w", it.ID, err)
	}
	err = tx.NoGrad(func() error {
		var e error
		if loss, e = tx.Scalar(l); e != nil {
			return e
		}
		pred, e := tx.ReadInt64(s.Argmax(sc.lp, -1))
		if e != nil {
			return e
		}
		for i, k := range at {
			if pred[i] == int64(m.ids.Compact(it.IDs[k])) {
				hits++
			}
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("segment %q: %w", it.ID, err)
	}
	s.Backward(obj)
	if err := s.Err(); err != nil {
		return 0, 0, fmt.Errorf("segment %q: backward: %w", it.ID, err)
	}
	return loss, hits, nil
}

// GRPOStep is one clipped-surrogate update (trainer.LossConfig: DAPO's
// asymmetric clip, the ratio cap, the bounded k3 KL to ref, nil for none)
// on the batch, with each item's recorded log-probabilities as the old
// policy (the current policy's, detached, where an item has none) and
// each item's RefLogp, where FillRefLogp set it, as the reference's, at
// opts.Temperature. The aggregation is the batch's: TokenMean averages
// over all trained tokens, SeqMeanTokenMean over items of their token
// means, ItemSumTokenMean (STEPO's eq. 13) sums the items' token means.
// Items run itemWorkers at a time and their gradients are added in item
// order, so memory holds that many items' activations whatever the batch.
func GRPOStep(m, ref *Model, opt *trainer.Optimizer, batch []Item, opts trainer.GRPOOptions) (gm trainer.GRPOMetrics, err error) {
	if err := opts.LossConfig.Validate(); err != nil {
		return gm, fmt.Errorf("causal grpo step: %w", err)
	}
	if !(opts.Temperature > 0) || math.IsInf(opts.Temperature, 0) {
		return gm, fmt.Errorf("causal grpo step: temperature %v must be positive", opts.Temperature)
	}
	if ref == m {
		return gm, errors.New("causal grpo step: ref must be a separate frozen copy (Clone)")
	}
	total, err := checkBatch(batch)
	if err != nil {
		return gm, fmt.Errorf("causal grpo step: %w", err)
	}
	if err := opt.ZeroGrad(); err != nil {
		return gm, fmt.Errorf("causal grpo step: %w", err)
	}
	per := opts.LossConfig
	per.Agg = trainer.TokenMean // within one item all three are its token mean
	var ratioSum, entSum, lowSum, highSum, capSum float64
	// each item's share of the batch loss, and its trained tokens
	scales, ns := make([]float64, len(batch)), make([]float64, len(batch))
	for i := range batch {
		ns[i], scales[i] = float64(len(batch[i].Trainable())), 1
		switch opts.Agg {
		case trainer.TokenMean:
			scales[i] = ns[i] / float64(total)
		case trainer.SeqMeanTokenMean:
			scales[i] = 1 / float64(len(batch))
		}
	}
	err = inOrder(len(batch), m.workers(), func(i int) (itemGrads, error) {
		return m.onLeaves(func(v *Model) (r itemGrads, err error) {
			r.grpo, err = v.grpoItem(ref, &batch[i], per, opts.Temperature, scales[i])
			return r, err
		})
	}, func(i int, ig itemGrads) error {
		defer ig.drop()
		it, r := &batch[i], ig.grpo
		scale, n := scales[i], ns[i]
		gm.Loss += scale * r.st.Loss
		gm.PolicyLoss += scale * r.st.PolicyLoss
		gm.KL += scale * r.st.KL
		ratioSum += n * r.st.RatioMean
		lowSum += n * r.st.ClipFracLow
		highSum += n * r.st.ClipFracHigh
		capSum += n * r.st.CapFrac
		entSum += r.entropy
		if !it.HasLogp {
			gm.RecomputedOldLogp++
		}
		return m.addGrads(ig.grads)
	}, itemGrads.drop)
	if err != nil {
		return gm, fmt.Errorf("causal grpo step: %w", err)
	}
	t := float64(total)
	gm.Tokens = total
	gm.RatioMean, gm.ClipFracLow, gm.ClipFracHigh, gm.CapFrac, gm.Entropy = ratioSum/t, lowSum/t, highSum/t, capSum/t, entSum/t
	if gm.GradNorm, err = opt.Apply(opts.MaxGradNorm); err != nil {
		return gm, fmt.Errorf("causal grpo step: %w", err)
	}
	gm.LR = opt.LR()
	return gm, nil
}

type itemResult struct {
	st      trainer.LossStats
	entropy float64 // summed over the item's trained tokens
}

// FillRefLogp computes each item's RefLogp under m, the frozen reference,
// at the temperature GRPOStep will train at. Computing them once per
// iteration saves a forward pass per item and step; the values are those
// GRPOStep would compute itself.
// The items run m.workers() at once (inference only reads the weights).
func (m *Model) FillRefLogp(ctx context.Context, items []Item, temperature float64) error {
	return inOrder(len(items), m.workers(), func(i int) ([]float32, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		it := &items[i]
		lp, err := m.LogProbs(it.Input(), it.Trainable(), temperature)
		if err != nil {
			return nil, fmt.Errorf("segment %q: reference: %w", it.ID, err)
		}
		return lp, nil
	}, func(i int, lp []float32) error {
		items[i].RefLogp, items[i].RefTemp = lp, temperature
		return nil
	}, func([]float32) {})
}

func (m *Model) grpoItem(ref *Model, it *Item, cfg trainer.LossConfig, temp, scale float64) (r itemResult, err error) {
	at := it.Trainable()
	var refLogp []float32
	switch {
	case ref == nil:
	case it.RefLogp != nil:
		if len(it.RefLogp) != len(at) || it.RefTemp != temp {
			return r, fmt.Errorf("segment %q: %d reference log-probabilities at temperature %v, want %d at %v",
				it.ID, len(it.RefLogp), it.RefTemp, len(at), temp)
		}
		refLogp = it.RefLogp
	default:
		if refLogp, err = ref.LogProbs(it.Input(), at, temp); err != nil {
			return r, fmt.Errorf("segment %q: reference: %w", it.ID, err)
		}
	}
	defer tx.Lock()()
	defer tx.Recover(&err, "grpo item")
	s := tx.NewScope()
	defer s.Close()
	sc, err := m.score(s, it.Input(), at, temp)
	if err != nil {
		return r, fmt.Errorf("segment %q: %w", it.ID, err)
	}
	L := int64(len(at))
	shape := []int64{1, L}
	old := make([]float32, L)
	adv := make([]float32, L)
	ones := make([]float32, L)
	for i, k := range at {
		old[i], adv[i], ones[i] = it.Logp[k], it.Advantage, 1
	}
	oldT := s.Float32s(old, shape, m.dev)
	if !it.HasLogp {
		oldT = s.Detach(sc.logp) // on-policy: ratio 1
	}
	var refT *ts.Tensor
	if ref != nil {
		refT = s.Float32s(refLogp, shape, m.dev)
	}
	advT, maskT := s.Float32s(adv, shape, m.dev), s.Float32s(ones, shape, m.dev)
	if err := s.Err(); err != nil {
		return r, fmt.Errorf("segment %q: %w", it.ID, err)
	}
	loss, st, err := trainer.SurrogateLoss(sc.logp, oldT, refT, advT, maskT, cfg)
	if err != nil {
		return r, fmt.Errorf("segment %q: %w", it.ID, err)
	}
	s.Track("loss", loss, nil)
	r.st = st
	err = tx.NoGrad(func() error {
		d := s.Detach(sc.lp)
		var e error
		r.entropy, e = tx.Scalar(s.MulScalar(s.Sum(s.Mul(s.Exp(d), d)), -1))
		return e
	})
	if err != nil {
		return r, fmt.Errorf("segment %q: entropy: %w", it.ID, err)
	}
	s.Backward(s.MulScalar(loss, scale))
	if err := s.Err(); err != nil {
		return r, fmt.Errorf("segment %q: backward: %w", it.ID, err)
	}
	return r, nil
}
