package trainer

import (
	"github.com/cualake/cualake/trainer/internal/tx"
)

// DefaultTemperature is the rollout sampling temperature (ScaleCUA
// appendix D); GRPO computes log-probabilities at it.
const DefaultTemperature = 0.8

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

// GRPOOptions control a GRPO step (trainer/causal.GRPOStep).
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
	return GRPOOptions{LossConfig: DefaultLossConfig(), Temperature: DefaultTemperature, MaxGradNorm: DefaultMaxGradNorm}
}

// GRPOMetrics reports one GRPO update.
type GRPOMetrics struct {
	LossStats
	// Entropy is the mean entropy (nats) of the temperature-scaled
	// next-token distribution over masked tokens.
	Entropy float64
	// GradNorm is the global gradient L2 norm before clipping.
	GradNorm float64
	// RecomputedOldLogp counts items whose old log-probabilities were
	// missing and taken from the current policy.
	RecomputedOldLogp int
	// LR is the learning rate used.
	LR float64
}

// SetThreads sets libtorch's intra-op thread count for the whole process.
// Bit-identical results across runs need the same count on both; 1 is the
// safe choice for reproducible CPU training of these small models.
func SetThreads(n int) error { return tx.SetThreads(n) }
