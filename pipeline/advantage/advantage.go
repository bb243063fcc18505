// Package advantage computes the trainer's advantages and batch plumbing,
// shared by the train stage and the sampler simulator: GRPO group-relative
// advantages (ScaleCUA appendix D, EvoCUA-1.5 eq. 5), STEPO's step
// redistribution and the naive reuse it corrects (EvoCUA-1.5 eqs. 7-12),
// REINFORCE++ batch normalisation (VeriCUA section 2.4), mini-group
// batching (EvoCUA-1.5 section 5.4) and staleness filtering (EvoCUA-1.5
// section 5.2). Pure Go, no I/O; no result is ever NaN.
package advantage

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/cualake/cualake/schemas"
)

// Errors callers can test for with errors.Is.
var (
	// ErrBadInput marks malformed input: a NaN or infinite reward, an empty
	// group id, a trajectory whose segments disagree on reward or group.
	ErrBadInput = errors.New("bad advantage input")
	// ErrBadParams marks a parameter outside its domain.
	ErrBadParams = errors.New("bad advantage parameters")
)

// Default constants.
const (
	// DefaultGRPOEps is verl's epsilon in (R - mean) / (std + eps).
	DefaultGRPOEps = 1e-6
	// DefaultBatchEps is the epsilon under REINFORCE++'s square root
	// (OpenRLHF's 1e-8; VeriCUA does not state it).
	DefaultBatchEps = 1e-8
	// DefaultMaxLag is EvoCUA-1.5's staleness threshold (table 8).
	DefaultMaxLag = 3
)

// GRPOParams configure group-relative advantages.
type GRPOParams struct {
	// Eps is added to the standard deviation (1e-6, as verl).
	Eps float64
	// Unbiased selects the sample standard deviation (divide by n - 1), as
	// verl's torch.std does; false gives the population one (divide by n).
	Unbiased bool
}

// DefaultGRPO returns verl's choice: sample std, eps 1e-6.
func DefaultGRPO() GRPOParams { return GRPOParams{Eps: DefaultGRPOEps, Unbiased: true} }

// Validate checks the parameters' domains.
func (p GRPOParams) Validate() error {
	if !(p.Eps > 0) || math.IsInf(p.Eps, 0) {
		return fmt.Errorf("%w: grpo eps %v, want > 0", ErrBadParams, p.Eps)
	}
	return nil
}

// GroupAdvantages returns A_i = (R_i - mean R) / (std R + eps) for one
// rollout group. A group of one rollout gets 0 (it has no baseline to
// compare with; verl would return the raw reward there) and a group whose
// rewards are all equal gets 0 everywhere (a zero-variance group teaches
// nothing). Rewards must be finite.
func GroupAdvantages(rewards []float64, p GRPOParams) ([]float64, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	out := make([]float64, len(rewards))
	for i, r := range rewards {
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return nil, fmt.Errorf("%w: reward %d is %v", ErrBadInput, i, r)
		}
	}
	n := len(rewards)
	if n < 2 {
		return out, nil
	}
	mean, ss := meanSS(rewards)
	if ss == 0 {
		return out, nil
	}
	denom := float64(n)
	if p.Unbiased {
		denom = float64(n - 1)
	}
	std := math.Sqrt(ss / denom)
	for i, r := range rewards {
		out[i] = (r - mean) / (std + p.Eps)
	}
	return out, nil
}

// meanSS returns the mean and the sum of squared deviations (two passes, so
// equal rewards give exactly 0).
func meanSS(xs []float64) (mean, ss float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	allEqual := true
	for _, x := range xs {
		d := x - mean
		ss += d * d
		if x != xs[0] {
			allEqual = false
		}
	}
	if allEqual {
		ss = 0
	}
	return mean, ss
}

// TrajectoryAdvantages computes A_i for every trajectory, grouping by
// group id. The map is keyed by trajectory id. A reward that is not finite,
// an empty group id or a repeated trajectory id is an error naming it.
func TrajectoryAdvantages(trajs []schemas.Trajectory, p GRPOParams) (map[string]float64, error) {
	groups := map[string][]int{}
	var order []string
	seen := make(map[string]bool, len(trajs))
	for i := range trajs {
		t := &trajs[i]
		if t.GroupID == "" {
			return nil, fmt.Errorf("%w: trajectory %q has no group id", ErrBadInput, t.TrajectoryID)
		}
		if math.IsNaN(t.Reward) || math.IsInf(t.Reward, 0) {
			return nil, fmt.Errorf("%w: trajectory %q: reward %v", ErrBadInput, t.TrajectoryID, t.Reward)
		}
		if seen[t.TrajectoryID] {
			return nil, fmt.Errorf("%w: trajectory %q appears twice", ErrBadInput, t.TrajectoryID)
		}
		seen[t.TrajectoryID] = true
		if _, ok := groups[t.GroupID]; !ok {
			order = append(order, t.GroupID)
		}
		groups[t.GroupID] = append(groups[t.GroupID], i)
	}
	out := make(map[string]float64, len(trajs))
	for _, g := range order {
		idx := groups[g]
		rs := make([]float64, len(idx))
		for k, i := range idx {
			rs[k] = trajs[i].Reward
		}
		as, err := GroupAdvantages(rs, p)
		if err != nil {
			return nil, fmt.Errorf("group %q: %w", g, err)
		}
		for k, i := range idx {
			out[trajs[i].TrajectoryID] = as[k]
		}
	}
	return out, nil
}

// Mode is how a trajectory's advantage reaches its training items; the
// values match train_metrics.advantage.
type Mode string

// Assignment modes.
const (
	// ModeGRPO gives every item of a trajectory A_i: right when the items
	// are whole trajectories or Visual Context Segmentation windows, which
	// ScaleCUA trains with a shared A_i and a loss mask that trains each
	// response once.
	ModeGRPO Mode = "grpo"
	// ModeSTEPO gives each of a trajectory's |T_i| step items A_i / |T_i|
	// (EvoCUA-1.5 eq. 10), so a trajectory's items sum to A_i and a group's
	// to sum_i A_i, about 0.
	ModeSTEPO Mode = "stepo"
	// ModeNaive gives each step item A_i (EvoCUA-1.5 eq. 7), for
	// comparison: a trajectory weighs |T_i| A_i, so long trajectories
	// dominate and the group no longer sums to 0.
	ModeNaive Mode = "naive"
)

// StepAdvantage is the advantage of one of a trajectory's step items under
// a mode.
func StepAdvantage(a float64, steps int, mode Mode) (float64, error) {
	switch mode {
	case ModeGRPO, ModeNaive:
		return a, nil
	case ModeSTEPO:
		if steps < 1 {
			return 0, fmt.Errorf("%w: stepo needs at least one step item, got %d", ErrBadInput, steps)
		}
		return a / float64(steps), nil
	}
	return 0, fmt.Errorf("%w: unknown advantage mode %q", ErrBadParams, mode)
}

// AssignSegments sets Advantage on every segment: A_i from the group of its
// trajectory (segments grouped by GroupID; each trajectory's reward is its
// segments' shared Reward), spread over the trajectory's items by mode.
// |T_i| is the number of the trajectory's segments in segs, which is what
// makes STEPO's sums exact. Errors name the trajectory: segments of one
// trajectory that disagree on reward or group, an empty group id, a reward
// that is not finite.
func AssignSegments(segs []schemas.Segment, mode Mode, p GRPOParams) error {
	if _, err := StepAdvantage(0, 1, mode); err != nil {
		return err
	}
	type traj struct {
		group  string
		reward float64
		items  int
	}
	trajs := map[string]*traj{}
	var order []string
	for i := range segs {
		s := &segs[i]
		if s.GroupID == "" {
			return fmt.Errorf("%w: segment %q of trajectory %q has no group id", ErrBadInput, s.SegmentID, s.TrajectoryID)
		}
		if math.IsNaN(s.Reward) || math.IsInf(s.Reward, 0) {
			return fmt.Errorf("%w: trajectory %q: segment %q reward %v", ErrBadInput, s.TrajectoryID, s.SegmentID, s.Reward)
		}
		t, ok := trajs[s.TrajectoryID]
		if !ok {
			t = &traj{group: s.GroupID, reward: s.Reward}
			trajs[s.TrajectoryID] = t
			order = append(order, s.TrajectoryID)
		}
		if t.group != s.GroupID || t.reward != s.Reward {
			return fmt.Errorf("%w: trajectory %q: segment %q has group %q reward %v, earlier segments group %q reward %v",
				ErrBadInput, s.TrajectoryID, s.SegmentID, s.GroupID, s.Reward, t.group, t.reward)
		}
		t.items++
	}
	rows := make([]schemas.Trajectory, len(order))
	for i, id := range order {
		rows[i] = schemas.Trajectory{TrajectoryID: id, GroupID: trajs[id].group, Reward: trajs[id].reward}
	}
	adv, err := TrajectoryAdvantages(rows, p)
	if err != nil {
		return err
	}
	for i := range segs {
		t := trajs[segs[i].TrajectoryID]
		a, err := StepAdvantage(adv[segs[i].TrajectoryID], t.items, mode)
		if err != nil {
			return fmt.Errorf("trajectory %q: %w", segs[i].TrajectoryID, err)
		}
		segs[i].Advantage = a
	}
	return nil
}

// BatchNormalize is REINFORCE++'s global normalisation (VeriCUA section
// 2.4): A = (r - mean_B) / sqrt(var_B + eps) over the whole batch, with the
// population variance. weights, when given, count each reward that many
// times (e.g. trainable tokens, as the paper's set of (i, k, t) token
// indices does); nil weighs every item 1. A batch of equal rewards gives 0.
func BatchNormalize(rewards, weights []float64, eps float64) ([]float64, error) {
	if !(eps > 0) || math.IsInf(eps, 0) {
		return nil, fmt.Errorf("%w: batch eps %v, want > 0", ErrBadParams, eps)
	}
	if weights != nil && len(weights) != len(rewards) {
		return nil, fmt.Errorf("%w: %d weights for %d rewards", ErrBadInput, len(weights), len(rewards))
	}
	w := func(i int) float64 {
		if weights == nil {
			return 1
		}
		return weights[i]
	}
	var sw, sum float64
	for i, r := range rewards {
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return nil, fmt.Errorf("%w: reward %d is %v", ErrBadInput, i, r)
		}
		if wi := w(i); !(wi >= 0) || math.IsInf(wi, 0) {
			return nil, fmt.Errorf("%w: weight %d is %v, want finite >= 0", ErrBadInput, i, wi)
		}
		sw += w(i)
		sum += w(i) * r
	}
	out := make([]float64, len(rewards))
	if sw == 0 {
		return out, nil
	}
	mean := sum / sw
	var ss float64
	for i, r := range rewards {
		d := r - mean
		ss += w(i) * d * d
	}
	scale := 1 / math.Sqrt(ss/sw+eps)
	for i, r := range rewards {
		out[i] = (r - mean) * scale
		if rewards[i] == mean { // exact zero, not float dust, for equal rewards
			out[i] = 0
		}
	}
	return out, nil
}

// MiniGroups splits items into mini-batches that keep every rollout group
// whole (EvoCUA-1.5 section 5.4). Groups are taken in order of first
// appearance and items keep their input order; groups are packed greedily:
// a group goes into the current mini-batch if it fits within maxItems,
// otherwise it starts a new one. A group larger than maxItems gets a
// mini-batch of its own rather than being split. Deterministic: the same
// input gives the same mini-batches; shuffle the input with a seed first
// for a random order.
func MiniGroups[T any](items []T, groupOf func(T) string, maxItems int) ([][]T, error) {
	if maxItems < 1 {
		return nil, fmt.Errorf("%w: mini-batch size %d, want >= 1", ErrBadParams, maxItems)
	}
	groups, err := groupItems(items, groupOf)
	if err != nil {
		return nil, err
	}
	var out [][]T
	var cur []T
	for _, g := range groups {
		if len(cur) > 0 && len(cur)+len(g) > maxItems {
			out = append(out, cur)
			cur = nil
		}
		cur = append(cur, g...)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out, nil
}

// MiniGroupsByCount splits items into mini-batches of exactly groupsPer
// whole groups each, with all their items: the paper's "fixed number of
// complete rollout groups" (EvoCUA-1.5 5.4). Groups are taken in order of
// first appearance; the last mini-batch, when the groups do not divide
// evenly, is completed with groups from the start, so no mini-batch is
// short and every group is in at least one. Fewer groups than groupsPer is
// an error (ErrBadInput): no mini-batch could hold groupsPer.
func MiniGroupsByCount[T any](items []T, groupOf func(T) string, groupsPer int) ([][]T, error) {
	if groupsPer < 1 {
		return nil, fmt.Errorf("%w: groups per mini-batch %d, want >= 1", ErrBadParams, groupsPer)
	}
	groups, err := groupItems(items, groupOf)
	if err != nil {
		return nil, err
	}
	if len(groups) < groupsPer {
		return nil, fmt.Errorf("%w: %d rollout groups, fewer than the %d each mini-batch needs", ErrBadInput, len(groups), groupsPer)
	}
	var out [][]T
	for i := 0; i < len(groups); i += groupsPer {
		var mb []T
		for j := 0; j < groupsPer; j++ {
			mb = append(mb, groups[(i+j)%len(groups)]...)
		}
		out = append(out, mb)
	}
	return out, nil
}

func groupItems[T any](items []T, groupOf func(T) string) ([][]T, error) {
	at := map[string]int{}
	var groups [][]T
	for i, it := range items {
		g := groupOf(it)
		if g == "" {
			return nil, fmt.Errorf("%w: item %d has no group id", ErrBadInput, i)
		}
		k, ok := at[g]
		if !ok {
			k = len(groups)
			at[g] = k
			groups = append(groups, nil)
		}
		groups[k] = append(groups[k], it)
	}
	return groups, nil
}

// FilterStale drops the items whose policy version is more than maxLag
// versions behind current (EvoCUA-1.5 section 5.2: threshold 3), keeping
// the input order in both results. An item whose version is ahead of
// current is an error naming it (idOf): it cannot come from a policy that
// does not exist yet. The filter is per item; compute group advantages
// before filtering, or drop whole groups, if mini-groups must stay
// zero-sum.
func FilterStale[T any](items []T, current, maxLag int32, versionOf func(T) int32, idOf func(T) string) (kept, dropped []T, err error) {
	if maxLag < 0 {
		return nil, nil, fmt.Errorf("%w: staleness threshold %d, want >= 0", ErrBadParams, maxLag)
	}
	for _, it := range items {
		v := versionOf(it)
		if v > current {
			return nil, nil, fmt.Errorf("%w: %s has policy version %d, ahead of the current %d", ErrBadInput, idOf(it), v, current)
		}
		if current-v > maxLag {
			dropped = append(dropped, it)
		} else {
			kept = append(kept, it)
		}
	}
	return kept, dropped, nil
}

// SortedGroupIDs returns the distinct group ids of items in ascending
// order; handy for audits of mini-batches.
func SortedGroupIDs[T any](items []T, groupOf func(T) string) []string {
	set := map[string]bool{}
	for _, it := range items {
		set[groupOf(it)] = true
	}
	out := make([]string, 0, len(set))
	for g := range set {
		out = append(out, g)
	}
	slices.SortFunc(out, strings.Compare)
	return out
}
