package sample

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/cualake/cualake/schemas"
)

// Default pass-rate parameters.
const (
	// ScaleCUAAlpha is ScaleCUA's EMA smoothing factor (eq. 1): the weight of
	// the new observation.
	ScaleCUAAlpha = 0.2
	// EvoCUABeta is EvoCUA-1.5's EMA coefficient (eq. 16, table 8): the
	// weight of the old estimate.
	EvoCUABeta = 0.7
	// DefaultPMin and DefaultPMax bound the initial pool (ScaleCUA 3.3).
	DefaultPMin = 0.1
	DefaultPMax = 0.9
)

// EMAParams configures pass-rate tracking.
type EMAParams struct {
	// Alpha is the weight of the new observation: p <- (1-Alpha) p + Alpha obs.
	// ScaleCUA uses 0.2. EvoCUA writes P <- beta P + (1-beta) obs with
	// beta = 0.7, the same update with Alpha = 1 - beta = 0.3 (AlphaFromBeta).
	Alpha float64
	// PMin and PMax bound the initial pool: when a feasible task is observed
	// for the first time it stays in the pool only if PMin <= observed <=
	// PMax (ScaleCUA: [0.1, 0.9]). PMin = 0 and PMax = 1 disable the filter.
	PMin, PMax float64
	// Rule records where Alpha came from, for the snapshot params: RuleAlpha
	// (ScaleCUA's alpha, given or defaulted) or RuleBeta (EvoCUA's beta;
	// Beta is then the beta and Alpha = 1 - Beta). Empty is RuleAlpha.
	Rule string  `json:",omitempty"`
	Beta float64 `json:",omitempty"`
}

// EMA rules (EMAParams.Rule).
const (
	RuleAlpha = "scalecua-alpha" // p <- (1-alpha) p + alpha obs, ScaleCUA eq. 1
	RuleBeta  = "evocua-beta"    // P <- beta P + (1-beta) obs, EvoCUA-1.5 eq. 16
)

// ResolveEMA picks the EMA a sampler runs with. An explicit beta (the
// --ema-beta flag) wins; else an explicit alpha; else each sampler's paper
// default: DTAC uses EvoCUA-1.5's beta = 0.7 (eq. 16), every other sampler
// ScaleCUA's alpha = 0.2. Giving both alpha and beta is an error: they are
// the same knob.
func ResolveEMA(sampler string, alpha, beta *float64, pmin, pmax float64) (EMAParams, error) {
	p := EMAParams{PMin: pmin, PMax: pmax}
	switch {
	case alpha != nil && beta != nil:
		return p, fmt.Errorf("%w: both an ema alpha (%v) and an ema beta (%v): give one (alpha = 1 - beta)", ErrBadParams, *alpha, *beta)
	case beta != nil:
		p.Rule, p.Beta, p.Alpha = RuleBeta, *beta, AlphaFromBeta(*beta)
		if !(*beta >= 0 && *beta < 1) {
			return p, fmt.Errorf("%w: ema beta is %v, want [0, 1)", ErrBadParams, *beta)
		}
	case alpha != nil:
		p.Rule, p.Alpha = RuleAlpha, *alpha
	case sampler == NameDTAC:
		p.Rule, p.Beta, p.Alpha = RuleBeta, EvoCUABeta, AlphaFromBeta(EvoCUABeta)
	default:
		p.Rule, p.Alpha = RuleAlpha, ScaleCUAAlpha
	}
	return p, p.Validate()
}

// DefaultEMA returns ScaleCUA's parameters: alpha 0.2, pool [0.1, 0.9].
func DefaultEMA() EMAParams {
	return EMAParams{Alpha: ScaleCUAAlpha, PMin: DefaultPMin, PMax: DefaultPMax, Rule: RuleAlpha}
}

// EvoCUAEMA returns EvoCUA-1.5's EMA (beta 0.7, so alpha 0.3) with the same
// initial pool filter.
func EvoCUAEMA() EMAParams {
	return EMAParams{Alpha: AlphaFromBeta(EvoCUABeta), PMin: DefaultPMin, PMax: DefaultPMax, Rule: RuleBeta, Beta: EvoCUABeta}
}

// AlphaFromBeta maps EvoCUA's beta (weight of the old estimate) to Alpha.
func AlphaFromBeta(beta float64) float64 { return 1 - beta }

// Validate checks the parameters' domains.
func (p EMAParams) Validate() error {
	if !(p.Alpha > 0 && p.Alpha <= 1) {
		return fmt.Errorf("%w: ema alpha is %v, want (0, 1]", ErrBadParams, p.Alpha)
	}
	if !(p.PMin >= 0 && p.PMin <= p.PMax && p.PMax <= 1) {
		return fmt.Errorf("%w: pool bounds [%v, %v], want 0 <= p_min <= p_max <= 1", ErrBadParams, p.PMin, p.PMax)
	}
	return nil
}

// InPool reports whether an initial pass rate keeps a task in the pool.
func InPool(rate, pmin, pmax float64) bool { return rate >= pmin && rate <= pmax }

// Outcome classifies one rollout for pass-rate tracking.
type Outcome int

// Rollout classes.
const (
	// Failed rollouts count as tried, not solved.
	Failed Outcome = iota
	// Solved rollouts count as tried and solved.
	Solved
	// Uncounted rollouts ended in an infrastructure error: they say nothing
	// about the policy and are left out of the rate.
	Uncounted
)

// Classify says whether a trajectory counts as a success. A success is an
// episode whose outcome is "success", or "reported_infeasible" on a task
// where that report is right, with a positive reward: the judge scores a
// correct infeasibility report 1, a wrong one 0. Everything else that the
// policy finished (failure, incomplete, a wrong report) is a failure, and an
// "error" episode is not counted. A reward that is NaN, infinite or outside
// [-1, 1], or an unknown outcome, is an error naming the trajectory.
func Classify(t *schemas.Trajectory) (Outcome, error) {
	if math.IsNaN(t.Reward) || t.Reward < -1 || t.Reward > 1 {
		return Failed, fmt.Errorf("%w: trajectory %q (task %q): reward %v outside [-1, 1]", ErrBadInput, t.TrajectoryID, t.TaskID, t.Reward)
	}
	switch t.Outcome {
	case schemas.OutcomeSuccess, schemas.OutcomeReportedInfeasible:
		if t.Reward > 0 {
			return Solved, nil
		}
		return Failed, nil
	case schemas.OutcomeFailure, schemas.OutcomeIncomplete:
		return Failed, nil
	case schemas.OutcomeError:
		return Uncounted, nil
	}
	return Failed, fmt.Errorf("%w: trajectory %q (task %q): unknown outcome %q", ErrBadInput, t.TrajectoryID, t.TaskID, t.Outcome)
}

// NewPool returns one pass-rate row per task, never tried: no observed rate,
// no EMA, in the pool (the initial-pass filter is applied when a task is
// first observed), feasibility from the task.
func NewPool(tasks []schemas.Task, iteration int32) ([]schemas.PassRate, error) {
	rows := make([]schemas.PassRate, len(tasks))
	for i := range tasks {
		rows[i] = schemas.PassRate{TaskID: tasks[i].TaskID, Iteration: iteration, InPool: true, Feasible: tasks[i].Feasible}
	}
	slices.SortFunc(rows, func(a, b schemas.PassRate) int { return strings.Compare(a.TaskID, b.TaskID) })
	for i := 1; i < len(rows); i++ {
		if rows[i].TaskID == rows[i-1].TaskID {
			return nil, fmt.Errorf("%w: task %q appears twice in the task pool", ErrBadInput, rows[i].TaskID)
		}
	}
	return rows, nil
}

// Latest reduces a pass-rate history (any number of iterations) to the
// current state, the latest row of each task, and adds a never-tried row for
// each task of tasks that has no history. Tasks with history but no entry in
// tasks are kept. The result is sorted by task id.
func Latest(history []schemas.PassRate, tasks []schemas.Task) ([]schemas.PassRate, error) {
	type key struct {
		task string
		it   int32
	}
	seen := make(map[key]bool, len(history))
	latest := make(map[string]int, len(tasks))
	for i := range history {
		r := &history[i]
		if seen[key{r.TaskID, r.Iteration}] {
			return nil, fmt.Errorf("%w: task %q has two pass-rate rows for iteration %d", ErrBadInput, r.TaskID, r.Iteration)
		}
		seen[key{r.TaskID, r.Iteration}] = true
		j, ok := latest[r.TaskID]
		if !ok || history[j].Iteration < r.Iteration {
			latest[r.TaskID] = i
		}
	}
	out := make([]schemas.PassRate, 0, len(latest)+len(tasks))
	for _, i := range latest {
		out = append(out, history[i])
	}
	for i := range tasks {
		if _, ok := latest[tasks[i].TaskID]; !ok {
			latest[tasks[i].TaskID] = -1
			out = append(out, schemas.PassRate{TaskID: tasks[i].TaskID, InPool: true, Feasible: tasks[i].Feasible})
		}
	}
	slices.SortFunc(out, func(a, b schemas.PassRate) int { return strings.Compare(a.TaskID, b.TaskID) })
	return out, nil
}

// InitialRates returns each task's first observed pass rate (the row of the
// lowest iteration with an observed rate): the curriculum's difficulty.
func InitialRates(history []schemas.PassRate) map[string]float64 {
	first := map[string]int32{}
	out := map[string]float64{}
	for i := range history {
		r := &history[i]
		if r.Observed == nil {
			continue
		}
		if it, ok := first[r.TaskID]; !ok || r.Iteration < it {
			first[r.TaskID] = r.Iteration
			out[r.TaskID] = *r.Observed
		}
	}
	return out
}

// UpdateEMA folds one iteration's rollouts into the pass rates.
//
// prev is the current state, one row per task (Latest or NewPool, or the
// previous call's result); rollouts are the trajectories of iteration
// iteration. The result has one row per task of prev, sorted by task id,
// stamped with iteration (the pass_rates history keeps every iteration):
//
//   - a task with counted rollouts gets Rollouts, Successes and Observed =
//     Successes/Rollouts, and EMA <- (1-alpha) EMA + alpha Observed; a task
//     never observed before starts at EMA = Observed (ScaleCUA's initial
//     pass rates), and at that first observation a feasible task leaves the
//     pool unless PMin <= Observed <= PMax (infeasible tasks stay: EvoCUA
//     keeps them as a separate set rather than filtering them away);
//   - a task without rollouts keeps its EMA (nil when never tried) with
//     Observed nil and zero counts;
//   - Weight is nil: the sampler fills it (FillWeights).
//
// Errors name the trajectory or task: a reward outside [-1, 1] or NaN, an
// unknown outcome, a rollout of a task not in prev or of another iteration,
// a duplicate task in prev, a stored EMA outside [0, 1].
func UpdateEMA(prev []schemas.PassRate, rollouts []schemas.Trajectory, iteration int32, p EMAParams) ([]schemas.PassRate, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	out := make([]schemas.PassRate, len(prev))
	copy(out, prev)
	for i := 1; i < len(out); i++ { // the lake stores rows sorted: usually one linear check
		if out[i-1].TaskID > out[i].TaskID {
			slices.SortFunc(out, func(a, b schemas.PassRate) int { return strings.Compare(a.TaskID, b.TaskID) })
			break
		}
	}
	for i := range out {
		r := &out[i]
		if i > 0 && out[i-1].TaskID == r.TaskID {
			return nil, fmt.Errorf("%w: task %q appears twice in the previous pass rates", ErrBadInput, r.TaskID)
		}
		if r.EMA != nil && !(*r.EMA >= 0 && *r.EMA <= 1) {
			return nil, fmt.Errorf("%w: task %q: stored ema %v outside [0, 1]", ErrBadInput, r.TaskID, *r.EMA)
		}
		if r.Iteration > iteration {
			return nil, fmt.Errorf("%w: task %q: previous row is from iteration %d, after %d", ErrBadInput, r.TaskID, r.Iteration, iteration)
		}
		r.Iteration, r.Rollouts, r.Successes, r.Observed, r.Weight = iteration, 0, 0, nil, nil
	}
	// Count per task first: an iteration's rollouts touch few tasks, so the
	// counts map stays small and the pool is never indexed as a whole.
	type count struct {
		rollouts, successes int32
		first               int // index of the task's first rollout, for errors
	}
	counts := map[string]int32{} // task id -> index into cs
	var cs []count
	last, lastTask := -1, ""
	for i := range rollouts {
		t := &rollouts[i]
		kind, err := Classify(t)
		if err != nil {
			return nil, err
		}
		if t.Iteration != iteration {
			return nil, fmt.Errorf("%w: trajectory %q (task %q) is from iteration %d, not %d", ErrBadInput, t.TrajectoryID, t.TaskID, t.Iteration, iteration)
		}
		if last < 0 || t.TaskID != lastTask { // rollouts of one group are usually adjacent
			c, ok := counts[t.TaskID]
			if !ok {
				c = int32(len(cs))
				cs = append(cs, count{first: i})
				counts[t.TaskID] = c
			}
			last, lastTask = int(c), t.TaskID
		}
		if kind == Uncounted {
			continue
		}
		cs[last].rollouts++
		if kind == Solved {
			cs[last].successes++
		}
	}
	found := 0
	apply := func(r *schemas.PassRate, c *count) {
		r.Rollouts, r.Successes = c.rollouts, c.successes
		c.first = -1 // matched
		found++
	}
	if len(counts)*24 < len(out) { // few tasks: binary search the sorted pool
		for task, c := range counts {
			if j, ok := slices.BinarySearchFunc(out, task, func(r schemas.PassRate, id string) int { return strings.Compare(r.TaskID, id) }); ok {
				apply(&out[j], &cs[c])
			}
		}
	} else {
		for i := range out {
			if c, ok := counts[out[i].TaskID]; ok {
				apply(&out[i], &cs[c])
			}
		}
	}
	if found < len(counts) {
		bad := -1
		for _, c := range cs {
			if c.first >= 0 && (bad < 0 || c.first < bad) {
				bad = c.first
			}
		}
		t := &rollouts[bad]
		return nil, fmt.Errorf("%w: trajectory %q: task %q is not in the pass-rate pool", ErrBadInput, t.TrajectoryID, t.TaskID)
	}
	// Rates live in one slab: two allocations instead of two per task.
	tried := 0
	for i := range out {
		if out[i].Rollouts > 0 {
			tried++
		}
	}
	slab := make([]float64, 2*tried)
	for i := range out {
		r := &out[i]
		if r.Rollouts == 0 {
			continue
		}
		obs := float64(r.Successes) / float64(r.Rollouts)
		ema := obs
		if r.EMA == nil {
			if r.Feasible {
				r.InPool = InPool(obs, p.PMin, p.PMax)
			}
		} else {
			ema = (1-p.Alpha)*(*r.EMA) + p.Alpha*obs
			ema = min(max(ema, 0), 1) // float error must not leave [0, 1]
		}
		slab[0], slab[1] = obs, ema
		r.Observed, r.EMA = &slab[0], &slab[1]
		slab = slab[2:]
	}
	return out, nil
}

// GroupOutcome summarises one rollout group: what AdaPR's buffer and the
// sampler-health audit need from the trajectories table.
type GroupOutcome struct {
	GroupID   string
	TaskID    string
	Iteration int32
	Rollouts  int32 // counted rollouts (error episodes are left out)
	Successes int32
	// RewardsEqual is true when every rollout of the group has the same
	// reward: a zero-variance group that teaches GRPO nothing.
	RewardsEqual bool
	// PolicyVersion is the oldest policy version among its rollouts;
	// Trajectories lists every rollout's id, sorted.
	PolicyVersion int32
	Trajectories  []string
}

// GroupOutcomes groups trajectories by group id, sorted by (iteration,
// group id). A group whose members name different tasks or iterations is
// an error.
func GroupOutcomes(trajs []schemas.Trajectory) ([]GroupOutcome, error) {
	type acc struct {
		g               GroupOutcome
		reward          float64 // first counted reward, to detect a zero-variance group
		seen            bool
		firstTrajectory string
	}
	groups := map[string]*acc{}
	for i := range trajs {
		t := &trajs[i]
		kind, err := Classify(t)
		if err != nil {
			return nil, err
		}
		if t.GroupID == "" {
			return nil, fmt.Errorf("%w: trajectory %q (task %q) has no group id", ErrBadInput, t.TrajectoryID, t.TaskID)
		}
		a, ok := groups[t.GroupID]
		if !ok {
			a = &acc{g: GroupOutcome{GroupID: t.GroupID, TaskID: t.TaskID, Iteration: t.Iteration, RewardsEqual: true, PolicyVersion: t.PolicyVersion},
				firstTrajectory: t.TrajectoryID}
			groups[t.GroupID] = a
		}
		a.g.PolicyVersion = min(a.g.PolicyVersion, t.PolicyVersion)
		a.g.Trajectories = append(a.g.Trajectories, t.TrajectoryID)
		if a.g.TaskID != t.TaskID || a.g.Iteration != t.Iteration {
			return nil, fmt.Errorf("%w: group %q mixes task %q/iteration %d (trajectory %q) with task %q/iteration %d (trajectory %q)",
				ErrBadInput, t.GroupID, a.g.TaskID, a.g.Iteration, a.firstTrajectory, t.TaskID, t.Iteration, t.TrajectoryID)
		}
		if kind == Uncounted {
			continue
		}
		a.g.Rollouts++
		if kind == Solved {
			a.g.Successes++
		}
		if !a.seen {
			a.reward, a.seen = t.Reward, true
		} else if t.Reward != a.reward {
			a.g.RewardsEqual = false
		}
	}
	out := make([]GroupOutcome, 0, len(groups))
	for _, a := range groups {
		slices.Sort(a.g.Trajectories)
		out = append(out, a.g)
	}
	slices.SortFunc(out, func(a, b GroupOutcome) int {
		if a.Iteration != b.Iteration {
			return int(a.Iteration) - int(b.Iteration)
		}
		return strings.Compare(a.GroupID, b.GroupID)
	})
	return out, nil
}
