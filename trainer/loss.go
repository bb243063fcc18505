package trainer

import (
	"errors"
	"fmt"

	"github.com/sugarme/gotch/ts"

	"github.com/cualake/cualake/trainer/internal/tx"
)

// Aggregation says how per-token losses are averaged.
type Aggregation int

const (
	// TokenMean averages over all masked tokens of the batch (DAPO's
	// token-level loss; ScaleCUA eq. 3 sums over tokens).
	TokenMean Aggregation = iota
	// SeqMeanTokenMean averages each item's masked tokens, then the items.
	SeqMeanTokenMean
	// ItemSumTokenMean averages each item's masked tokens and sums over the
	// items: EvoCUA-1.5's eq. 13, sum_i sum_t 1/|y_{i,t}| sum_k. With STEPO's
	// A_i/|T_i| per step item, a trajectory's items then weigh exactly A_i
	// together (eq. 11), however many steps it was cut into.
	ItemSumTokenMean
)

// String names the aggregation.
func (a Aggregation) String() string {
	switch a {
	case TokenMean:
		return "token-mean"
	case SeqMeanTokenMean:
		return "seq-mean-token-mean"
	case ItemSumTokenMean:
		return "item-sum-token-mean"
	}
	return fmt.Sprintf("Aggregation(%d)", int(a))
}

// LossConfig is the clipped-surrogate objective (ScaleCUA appendix D, eq. 3).
type LossConfig struct {
	// ClipLow and ClipHigh are DAPO's asymmetric clip: the ratio is clipped to
	// [1-ClipLow, 1+ClipHigh].
	ClipLow, ClipHigh float64
	// RatioCap is the ratio cap c: the unclipped branch uses min(r, c)·A.
	// This equals the dual clip (verl's clip_ratio_c): for A < 0 the loss is
	// bounded by c·|A|; for A > 0 the clipped branch already bounds it.
	RatioCap float64
	// KLCoef weights the bounded k3 estimate of KL(pi_theta || pi_ref)
	// (verl's low_var_kl: see KLLogRatioBound and KLTokenBound).
	KLCoef float64
	// Agg chooses the token averaging.
	Agg Aggregation
}

// DefaultLossConfig returns ScaleCUA's values: eps_low 0.2, eps_high 0.28,
// c 3.0, lambda 1e-4, token-level averaging.
func DefaultLossConfig() LossConfig {
	return LossConfig{ClipLow: 0.2, ClipHigh: 0.28, RatioCap: 3.0, KLCoef: 1e-4, Agg: TokenMean}
}

// Validate reports whether the configuration is usable.
func (c LossConfig) Validate() error {
	var errs []error
	if !(c.ClipLow >= 0 && c.ClipLow < 1) {
		errs = append(errs, fmt.Errorf("clip_low %v outside [0,1)", c.ClipLow))
	}
	if !(c.ClipHigh >= 0) {
		errs = append(errs, fmt.Errorf("clip_high %v negative", c.ClipHigh))
	}
	if !(c.RatioCap > 1+c.ClipHigh) {
		errs = append(errs, fmt.Errorf("ratio cap %v must exceed 1+clip_high", c.RatioCap))
	}
	if !(c.KLCoef >= 0) {
		errs = append(errs, fmt.Errorf("kl coef %v negative", c.KLCoef))
	}
	if c.Agg != TokenMean && c.Agg != SeqMeanTokenMean && c.Agg != ItemSumTokenMean {
		errs = append(errs, fmt.Errorf("unknown aggregation %d", int(c.Agg)))
	}
	return errors.Join(errs...)
}

// LossStats describes one evaluation of the surrogate, over masked tokens.
type LossStats struct {
	// Loss is the total objective: PolicyLoss + KLCoef·KL.
	Loss float64
	// PolicyLoss is the clipped-surrogate term alone.
	PolicyLoss float64
	// KL is the aggregated bounded k3 estimate (0 without a reference).
	KL float64
	// ClipFracLow is the share of tokens with A < 0 and r < 1-ClipLow (the
	// low clip is active, the token gives no gradient).
	ClipFracLow float64
	// ClipFracHigh is the share of tokens with A > 0 and r > 1+ClipHigh.
	ClipFracHigh float64
	// CapFrac is the share of tokens with r > RatioCap.
	CapFrac float64
	// RatioMean is the mean importance ratio.
	RatioMean float64
	// Tokens is the number of masked (trainable) tokens.
	Tokens int
}

// aggregate averages per-token values [B, L] under mask [B, L].
func aggregate(s *tx.Scope, v, mask *ts.Tensor, agg Aggregation) *ts.Tensor {
	vm := s.Mul(v, mask)
	switch agg {
	case SeqMeanTokenMean:
		per := s.Div(s.SumDim(vm, 1, false), s.ClampMin(s.SumDim(mask, 1, false), 1)) // [B]
		items := s.SumDim(s.Float(s.GtScalar(s.SumDim(mask, 1, false), 0)), 0, false)
		return s.Div(s.Sum(per), s.ClampMin(items, 1))
	case ItemSumTokenMean:
		return s.Sum(s.Div(s.SumDim(vm, 1, false), s.ClampMin(s.SumDim(mask, 1, false), 1)))
	}
	return s.Div(s.Sum(vm), s.ClampMin(s.Sum(mask), 1))
}

// The k3 estimate exp(d) - d - 1, d = ref - logp, grows exponentially in d:
// one token the reference finds 12 nats likelier than the policy does gives
// 1.6e5, which swamped the surrogate (a demo logged a loss of 76,000). verl's
// low_var_kl bounds it twice, and so do we: d is clamped to
// [-KLLogRatioBound, KLLogRatioBound] before exp, the estimate to
// [-KLTokenBound, KLTokenBound] after (k3 >= 0, so only the upper bound binds).
// Where a bound binds the token gives no KL gradient.
const (
	KLLogRatioBound = 20.0
	KLTokenBound    = 10.0
)

// boundedK3 is verl's low_var_kl per token: clamp(exp(d') - d' - 1, -10, 10)
// with d' = clamp(ref - logp, -20, 20).
func boundedK3(s *tx.Scope, refLogp, logp *ts.Tensor) *ts.Tensor {
	d := s.Clamp(s.Sub(refLogp, logp), -KLLogRatioBound, KLLogRatioBound)
	return s.Clamp(s.AddScalar(s.Sub(s.Exp(d), d), -1), -KLTokenBound, KLTokenBound)
}

// surrogate builds the GRPO/DAPO loss inside a scope. logp [B, L] carries the
// gradient; oldLogp, adv and mask are [B, L]; refLogp may be nil.
func surrogate(s *tx.Scope, logp, oldLogp, refLogp, adv, mask *ts.Tensor, cfg LossConfig) (loss, policyLoss, kl, ratio *ts.Tensor) {
	ratio = s.Exp(s.Sub(logp, oldLogp))
	capped := s.ClampMax(ratio, cfg.RatioCap)
	clipped := s.Clamp(ratio, 1-cfg.ClipLow, 1+cfg.ClipHigh)
	obj := s.Minimum(s.Mul(capped, adv), s.Mul(clipped, adv))
	policyLoss = aggregate(s, s.MulScalar(obj, -1), mask, cfg.Agg)
	loss = policyLoss
	if refLogp != nil {
		kl = aggregate(s, boundedK3(s, refLogp, logp), mask, cfg.Agg)
		if cfg.KLCoef != 0 {
			loss = s.Add(policyLoss, s.MulScalar(kl, cfg.KLCoef))
		}
	}
	return loss, policyLoss, kl, ratio
}

// surrogateStats reads the statistics of a surrogate evaluation.
func surrogateStats(s *tx.Scope, loss, policyLoss, kl, ratio, adv, mask *ts.Tensor, cfg LossConfig) (LossStats, error) {
	var st LossStats
	var err error
	frac := func(cond *ts.Tensor) float64 {
		if err != nil {
			return 0
		}
		var v float64
		v, err = tx.Scalar(s.Div(s.Sum(s.Mul(s.Float(cond), mask)), s.ClampMin(s.Sum(mask), 1)))
		return v
	}
	var tokens float64
	tokens, err = tx.Scalar(s.Sum(mask))
	if err == nil && s.Err() != nil {
		err = s.Err()
	}
	st.Tokens = int(tokens)
	st.ClipFracLow = frac(s.And(s.LtScalar(adv, 0), s.LtScalar(ratio, 1-cfg.ClipLow)))
	st.ClipFracHigh = frac(s.And(s.GtScalar(adv, 0), s.GtScalar(ratio, 1+cfg.ClipHigh)))
	st.CapFrac = frac(s.GtScalar(ratio, cfg.RatioCap))
	if err == nil {
		st.RatioMean, err = tx.Scalar(s.Div(s.Sum(s.Mul(ratio, mask)), s.ClampMin(s.Sum(mask), 1)))
	}
	if err == nil {
		st.Loss, err = tx.Scalar(loss)
	}
	if err == nil {
		st.PolicyLoss, err = tx.Scalar(policyLoss)
	}
	if err == nil && kl != nil {
		st.KL, err = tx.Scalar(kl)
	}
	if err == nil {
		err = s.Err()
	}
	return st, err
}

// SurrogateLoss returns the token-level GRPO/DAPO loss of ScaleCUA eq. 3,
//
//	-min(min(r, c)·A, clip(r, 1-eps_low, 1+eps_high)·A) + lambda·k3,
//	r = exp(logp - oldLogp), k3 = clamp(exp(d) - d - 1, -10, 10),
//	d = clamp(ref - logp, -20, 20) (verl's low_var_kl),
//
// averaged over masked tokens as cfg.Agg says. logp [B, L] carries the
// gradient; oldLogp, adv (per-token advantages) and mask (0/1) are [B, L];
// refLogp may be nil (no KL term). The caller owns the returned loss.
func SurrogateLoss(logp, oldLogp, refLogp, adv, mask *ts.Tensor, cfg LossConfig) (loss *ts.Tensor, st LossStats, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, LossStats{}, fmt.Errorf("surrogate loss: %w", err)
	}
	defer tx.Lock()()
	defer tx.Recover(&err, "surrogate loss")
	s := tx.NewScope()
	defer s.Close()
	loss, pl, kl, ratio := surrogate(s, logp, oldLogp, refLogp, adv, mask, cfg)
	if err := s.Err(); err != nil {
		return nil, LossStats{}, fmt.Errorf("surrogate loss: %w", err)
	}
	var st2 LossStats
	err = tx.NoGrad(func() error {
		var e error
		st2, e = surrogateStats(s, loss, pl, kl, ratio, adv, mask, cfg)
		return e
	})
	if err != nil {
		return nil, LossStats{}, fmt.Errorf("surrogate loss: %w", err)
	}
	return s.Keep(loss), st2, nil
}

// crossEntropy is the masked token cross-entropy -sum(mask·logp)/sum(mask)
// given picked log-probabilities [B, L].
func crossEntropy(s *tx.Scope, logp, mask *ts.Tensor) *ts.Tensor {
	return s.MulScalar(aggregate(s, logp, mask, TokenMean), -1)
}

// CrossEntropyLoss returns the SFT loss: the mean over masked positions of
// -log softmax(logits)[target]. logits is [B, L, V]; targets[b] and mask[b]
// (0/1, nil = all 1) have one entry per scored position (at most L). The
// caller owns the returned loss.
func CrossEntropyLoss(logits *ts.Tensor, targets [][]int32, mask [][]uint8) (loss *ts.Tensor, err error) {
	defer tx.Lock()()
	defer tx.Recover(&err, "cross-entropy loss")
	s := tx.NewScope()
	defer s.Close()
	dev, err := logits.Device()
	if err != nil {
		return nil, fmt.Errorf("cross-entropy loss: %w", err)
	}
	sh := s.Shape(logits)
	if s.Err() != nil || len(sh) != 3 {
		return nil, fmt.Errorf("cross-entropy loss: logits must be [B, L, V], got %v (%v)", sh, s.Err())
	}
	m, err := maskMatrix(targets, mask, int(sh[1]))
	if err != nil {
		return nil, fmt.Errorf("cross-entropy loss: %w", err)
	}
	lp := s.PickActions(s.LogSoftmax(logits, -1), targets, dev)
	loss = crossEntropy(s, lp, s.Float32s(m, []int64{sh[0], sh[1]}, dev))
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("cross-entropy loss: %w", err)
	}
	return s.Keep(loss), nil
}

// maskMatrix flattens per-item masks into [B, L] (nil mask = all ones over
// the item's targets).
func maskMatrix(targets [][]int32, mask [][]uint8, L int) ([]float32, error) {
	if mask != nil && len(mask) != len(targets) {
		return nil, fmt.Errorf("%d masks for %d items", len(mask), len(targets))
	}
	out := make([]float32, len(targets)*L)
	for i, t := range targets {
		if len(t) > L {
			return nil, fmt.Errorf("item %d has %d targets, logits cover %d", i, len(t), L)
		}
		var m []uint8
		if mask != nil {
			m = mask[i]
			if m != nil && len(m) != len(t) {
				return nil, fmt.Errorf("item %d: mask has %d entries for %d targets", i, len(m), len(t))
			}
		}
		for k := range t {
			if m == nil || m[k] != 0 {
				out[i*L+k] = 1
			}
		}
	}
	return out, nil
}
