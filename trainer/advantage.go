package trainer

import (
	"errors"
	"fmt"
	"math"
)

// DefaultAdvantageEps is the epsilon in the advantage's denominator.
const DefaultAdvantageEps = 1e-6

// GroupAdvantages returns the group-relative advantages of one rollout group
// (EvoCUA-1.5 eq. 5): A_i = (R_i - mean(R)) / (std(R) + eps), with the
// sample standard deviation (n-1 in the denominator, as torch.std and verl).
// A group whose rewards are all equal gets zero advantages.
func GroupAdvantages(rewards []float64, eps float64) ([]float64, error) {
	if len(rewards) == 0 {
		return nil, errors.New("group advantages: empty group")
	}
	if !(eps >= 0) {
		return nil, fmt.Errorf("group advantages: eps %v negative", eps)
	}
	mean := 0.0
	for i, r := range rewards {
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return nil, fmt.Errorf("group advantages: reward %d is %v", i, r)
		}
		mean += r
	}
	mean /= float64(len(rewards))
	std := 0.0
	if len(rewards) > 1 {
		for _, r := range rewards {
			std += (r - mean) * (r - mean)
		}
		std = math.Sqrt(std / float64(len(rewards)-1))
	}
	out := make([]float64, len(rewards))
	for i, r := range rewards {
		if d := r - mean; d != 0 {
			out[i] = d / (std + eps)
		}
	}
	return out, nil
}

// STEPOAdvantages spreads each trajectory's group advantage over its steps
// (EvoCUA-1.5 eq. 10): A_i / |T_i|, so that the step items of a trajectory
// carry its advantage once in total. steps[i] is trajectory i's step count.
func STEPOAdvantages(rewards []float64, steps []int, eps float64) ([]float64, error) {
	if len(steps) != len(rewards) {
		return nil, fmt.Errorf("stepo advantages: %d step counts for %d rewards", len(steps), len(rewards))
	}
	a, err := GroupAdvantages(rewards, eps)
	if err != nil {
		return nil, fmt.Errorf("stepo advantages: %w", err)
	}
	for i, n := range steps {
		if n < 1 {
			return nil, fmt.Errorf("stepo advantages: trajectory %d has %d steps", i, n)
		}
		a[i] /= float64(n)
	}
	return a, nil
}
