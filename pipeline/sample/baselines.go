package sample

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/cualake/cualake/schemas"
)

// Uniform draws B distinct eligible tasks uniformly: the baseline every
// paper compares against.
type Uniform struct{}

// Name implements Sampler.
func (Uniform) Name() string { return NameUniform }

// Weight implements Sampler: every task weighs 1.
func (Uniform) Weight(*schemas.PassRate) (float64, bool) { return 1, true }

// Select implements Sampler (channel "uniform", weight 1, draw order).
func (Uniform) Select(pool []schemas.PassRate, req Request) ([]schemas.Batch, error) {
	v, err := newView(pool, req)
	if err != nil {
		return nil, err
	}
	rng := newRNG(req.Seed, NameUniform, req.Iteration, req.Round)
	picks := make([]pick, 0, req.BatchSize)
	for _, p := range uniformSample(rng, v.n(), req.BatchSize) {
		picks = append(picks, pick{pos: p, channel: ChannelUniform, weight: 1})
	}
	return v.rows(picks, NameUniform, req), nil
}

// CurriculumParams configure the fixed easy-to-hard schedule.
type CurriculumParams struct {
	// InitialCompetence c0 is the share of the pool (easiest first) open at
	// the first RL iteration.
	InitialCompetence float64
	// Horizon is the number of RL iterations after which the whole pool is
	// open.
	Horizon int
}

// DefaultCurriculum returns c0 = 0.25 and a 100-iteration horizon. The
// papers name no curriculum baseline's constants; these are ours.
func DefaultCurriculum() CurriculumParams {
	return CurriculumParams{InitialCompetence: 0.25, Horizon: 100}
}

// Curriculum is a fixed-schedule curriculum (the baseline of ScaleCUA
// section 4.3): tasks are ranked once, easiest first, by their initial pass
// rate (descending; ties by task id; tasks with no initial rate last), and
// iteration t draws B tasks uniformly from the easiest
// max(B, ceil(c(t) N)) eligible tasks, with the square-root competence
// schedule of Platanios et al. (2019):
//
//	c(t) = min(1, sqrt(t (1 - c0^2) / T + c0^2)),  t = iteration - 1
//
// (iteration 0 is the initial pass, iteration 1 the first RL iteration).
// The schedule never looks at the current pass rates: that is the point of
// the baseline.
type Curriculum struct {
	Params CurriculumParams
	// Initial maps task id to initial pass rate (InitialRates).
	Initial map[string]float64
}

// NewCurriculum returns a Curriculum with the default schedule.
func NewCurriculum(initial map[string]float64) *Curriculum {
	return &Curriculum{Params: DefaultCurriculum(), Initial: initial}
}

// Name implements Sampler.
func (c *Curriculum) Name() string { return NameCurriculum }

// Weight implements Sampler: the schedule has no per-task weight.
func (c *Curriculum) Weight(*schemas.PassRate) (float64, bool) { return 0, false }

// Competence is c(t) for an iteration.
func (c *Curriculum) Competence(iteration int32) float64 {
	t := math.Max(0, float64(iteration-1))
	c0 := c.Params.InitialCompetence
	return math.Min(1, math.Sqrt(t*(1-c0*c0)/float64(c.Params.Horizon)+c0*c0))
}

// Select implements Sampler (channel "curriculum", weight 1, draw order).
func (c *Curriculum) Select(pool []schemas.PassRate, req Request) ([]schemas.Batch, error) {
	if !(c.Params.InitialCompetence > 0 && c.Params.InitialCompetence <= 1) || c.Params.Horizon < 1 {
		return nil, fmt.Errorf("%w: curriculum c0 %v horizon %d; want c0 in (0, 1], horizon >= 1", ErrBadParams, c.Params.InitialCompetence, c.Params.Horizon)
	}
	v, err := newView(pool, req)
	if err != nil {
		return nil, err
	}
	order := make([]int, v.n())
	for i := range order {
		order[i] = i
	}
	// Positions are in task-id order, so a stable sort breaks ties by id.
	slices.SortStableFunc(order, func(a, b int) int {
		ra, oka := c.Initial[v.row(a).TaskID]
		rb, okb := c.Initial[v.row(b).TaskID]
		if oka != okb {
			if oka {
				return -1
			}
			return 1
		}
		return cmp.Compare(rb, ra) // easiest (highest rate) first
	})
	m := max(req.BatchSize, int(math.Ceil(c.Competence(req.Iteration)*float64(v.n())-1e-9)))
	m = min(m, v.n())
	rng := newRNG(req.Seed, NameCurriculum, req.Iteration, req.Round)
	picks := make([]pick, 0, req.BatchSize)
	for _, j := range uniformSample(rng, m, req.BatchSize) {
		picks = append(picks, pick{pos: order[j], channel: ChannelCurriculum, weight: 1})
	}
	return v.rows(picks, NameCurriculum, req), nil
}

// DAPOParams configure DAPO-style dynamic sampling (Yu et al., 2025, as in
// verl's recipe/dapo).
type DAPOParams struct {
	// OverSample is the generation batch as a multiple of the training
	// batch (verl's recipe: gen_prompt_bsz = 3 * train_prompt_bsz).
	OverSample float64
	// MaxGenBatches bounds the generation rounds of one training step
	// (verl's filter_groups.max_num_gen_batches, 10 in the recipe); <= 0
	// means unbounded.
	MaxGenBatches int
}

// DefaultDAPO returns verl's DAPO recipe values: over-sampling 3, at most
// 10 generation batches.
func DefaultDAPO() DAPOParams { return DAPOParams{OverSample: 3, MaxGenBatches: 10} }

// DAPO is the selection half of DAPO dynamic sampling: it draws
// ceil(OverSample * B) distinct eligible tasks uniformly (DAPO does not
// look at pass rates; capped at the eligible pool). Rewards are unknown at
// selection time, so the other half runs after rollout: FilterGroups drops
// groups whose rewards are all equal and DynamicSampling accumulates kept
// groups over refill rounds (Request.Round, FirstRank, Exclude) until B are
// kept or MaxGenBatches is reached.
type DAPO struct {
	Params DAPOParams
}

// NewDAPO returns a DAPO sampler with verl's recipe values.
func NewDAPO() *DAPO { return &DAPO{Params: DefaultDAPO()} }

// Name implements Sampler.
func (d *DAPO) Name() string { return NameDAPO }

// Weight implements Sampler: every task weighs 1.
func (d *DAPO) Weight(*schemas.PassRate) (float64, bool) { return 1, true }

// GenSize is the number of tasks one generation round draws for B.
func (d *DAPO) GenSize(b int) int { return int(math.Ceil(d.Params.OverSample*float64(b) - 1e-9)) }

// Select implements Sampler (channel "dapo", weight 1, draw order). It
// returns GenSize(B) tasks, or every eligible task when fewer.
func (d *DAPO) Select(pool []schemas.PassRate, req Request) ([]schemas.Batch, error) {
	if !(d.Params.OverSample >= 1) || math.IsInf(d.Params.OverSample, 0) {
		return nil, fmt.Errorf("%w: dapo over-sampling %v, want >= 1", ErrBadParams, d.Params.OverSample)
	}
	v, err := newView(pool, req)
	if err != nil {
		return nil, err
	}
	k := min(d.GenSize(req.BatchSize), v.n())
	rng := newRNG(req.Seed, NameDAPO, req.Iteration, req.Round)
	picks := make([]pick, 0, k)
	for _, p := range uniformSample(rng, v.n(), k) {
		picks = append(picks, pick{pos: p, channel: ChannelDAPO, weight: 1})
	}
	return v.rows(picks, NameDAPO, req), nil
}

// FilterGroups is DAPO's group filter (verl's filter_groups): it keeps the
// trajectories of groups whose rewards are not all equal, and of groups of a
// single rollout (verl keeps those: std > 0 or len == 1). Groups keep their
// order of first appearance and trajectories their input order. dropped
// lists the dropped group ids in that order. A reward outside [-1, 1] or
// NaN, or a trajectory without group id, is an error naming it.
func FilterGroups(trajs []schemas.Trajectory) (kept []schemas.Trajectory, dropped []string, err error) {
	type stat struct {
		n        int
		lo, hi   float64
		firstPos int
	}
	stats := map[string]*stat{}
	var order []string
	for i := range trajs {
		t := &trajs[i]
		if t.GroupID == "" {
			return nil, nil, fmt.Errorf("%w: trajectory %q (task %q) has no group id", ErrBadInput, t.TrajectoryID, t.TaskID)
		}
		if math.IsNaN(t.Reward) || t.Reward < -1 || t.Reward > 1 {
			return nil, nil, fmt.Errorf("%w: trajectory %q (task %q): reward %v outside [-1, 1]", ErrBadInput, t.TrajectoryID, t.TaskID, t.Reward)
		}
		s, ok := stats[t.GroupID]
		if !ok {
			s = &stat{lo: t.Reward, hi: t.Reward, firstPos: i}
			stats[t.GroupID] = s
			order = append(order, t.GroupID)
		}
		s.n++
		s.lo, s.hi = min(s.lo, t.Reward), max(s.hi, t.Reward)
	}
	keep := func(g string) bool { s := stats[g]; return s.n == 1 || s.hi > s.lo }
	for _, g := range order {
		if !keep(g) {
			dropped = append(dropped, g)
		}
	}
	for i := range trajs {
		if keep(trajs[i].GroupID) {
			kept = append(kept, trajs[i])
		}
	}
	return kept, dropped, nil
}

// DynamicSampling accumulates DAPO's kept groups over generation rounds of
// one training step, as verl's DAPO trainer does: after each round the
// filtered groups are appended; once Want groups are kept the step trains on
// the first Want of them (the surplus is discarded); a round that leaves the
// count short asks for another, up to MaxGenBatches rounds (<= 0:
// unbounded), after which Add fails with ErrTooManyGenBatches.
type DynamicSampling struct {
	Want          int
	MaxGenBatches int

	rounds  int
	groups  []string
	members map[string][]schemas.Trajectory
	dropped int
}

// NewDynamicSampling starts one training step's accumulation.
func NewDynamicSampling(want int, p DAPOParams) *DynamicSampling {
	return &DynamicSampling{Want: want, MaxGenBatches: p.MaxGenBatches, members: map[string][]schemas.Trajectory{}}
}

// Add filters one generation round's trajectories and reports whether the
// step has enough groups. A group id seen in an earlier round is an error.
func (d *DynamicSampling) Add(round []schemas.Trajectory) (ready bool, err error) {
	if d.Want < 1 {
		return false, fmt.Errorf("%w: dynamic sampling wants %d groups, want >= 1", ErrBatchSize, d.Want)
	}
	kept, dropped, err := FilterGroups(round)
	if err != nil {
		return false, fmt.Errorf("generation round %d: %w", d.rounds+1, err)
	}
	fresh := map[string]bool{}
	for _, t := range kept {
		if _, old := d.members[t.GroupID]; old && !fresh[t.GroupID] {
			return false, fmt.Errorf("%w: group %q (trajectory %q) already arrived in an earlier round", ErrBadInput, t.GroupID, t.TrajectoryID)
		}
		if !fresh[t.GroupID] {
			fresh[t.GroupID] = true
			d.groups = append(d.groups, t.GroupID)
		}
		d.members[t.GroupID] = append(d.members[t.GroupID], t)
	}
	d.rounds++
	d.dropped += len(dropped)
	if len(d.groups) >= d.Want {
		return true, nil
	}
	if d.MaxGenBatches > 0 && d.rounds >= d.MaxGenBatches {
		return false, fmt.Errorf("%w: %d rounds kept %d of %d groups; the tasks may be too hard or too easy",
			ErrTooManyGenBatches, d.rounds, len(d.groups), d.Want)
	}
	return false, nil
}

// Batch returns the trajectories of the first Want kept groups (all kept
// groups when fewer), groups in arrival order.
func (d *DynamicSampling) Batch() []schemas.Trajectory {
	var out []schemas.Trajectory
	for i, g := range d.groups {
		if i == d.Want {
			break
		}
		out = append(out, d.members[g]...)
	}
	return out
}

// Rounds is the number of generation rounds added so far.
func (d *DynamicSampling) Rounds() int { return d.rounds }

// Kept counts the groups kept so far.
func (d *DynamicSampling) Kept() int { return len(d.groups) }

// Dropped counts the zero-variance groups dropped so far.
func (d *DynamicSampling) Dropped() int { return d.dropped }

// Refill is one DAPO refill round of an iteration already rolled out.
type Refill struct {
	Informative int             // groups of the iteration whose rewards are not all equal (FilterGroups keeps them)
	Groups      int             // all groups of the iteration
	Rows        []schemas.Batch // the round's picks (channel dapo); none when Informative >= the target
}

// DAPORefill is DAPO's dynamic sampling in the lake's loop: trajs are the
// iteration's rollouts, batch its batches rows so far, state the current
// pass-rate state. When fewer than target groups are informative it draws
// ceil(OverSample * (target - informative)) more tasks (capped at the
// eligible ones), none drawn before in the iteration, with the round's own
// stream (Request.Round = the rows so far, so each round differs), ranked
// after the iteration's rows.
func DAPORefill(state []schemas.PassRate, trajs []schemas.Trajectory, batch []schemas.Batch, iteration int32, target int, seed uint64) (*Refill, error) {
	if target < 1 {
		return nil, fmt.Errorf("%w: dapo refill target %d, want >= 1", ErrBatchSize, target)
	}
	kept, dropped, err := FilterGroups(trajs)
	if err != nil {
		return nil, err
	}
	groups := map[string]bool{}
	for _, t := range kept {
		groups[t.GroupID] = true
	}
	r := &Refill{Informative: len(groups), Groups: len(groups) + len(dropped)}
	if r.Informative >= target {
		return r, nil
	}
	exclude := map[string]bool{}
	first := int32(0)
	for _, b := range batch {
		exclude[b.TaskID] = true
		first = max(first, b.Rank+1)
	}
	for _, t := range trajs {
		exclude[t.TaskID] = true
	}
	eligible := 0
	for i := range state {
		if state[i].InPool && !exclude[state[i].TaskID] {
			eligible++
		}
	}
	if eligible == 0 {
		return nil, fmt.Errorf("%w: dapo refill of iteration %d: %d informative groups of %d wanted and every eligible task already drawn", ErrTooManyGenBatches, iteration, r.Informative, target)
	}
	d := NewDAPO()
	want := min(d.GenSize(target-r.Informative), eligible)
	// Select draws GenSize(BatchSize); ask for the batch that gives want.
	rows, err := d.Select(state, Request{Iteration: iteration, BatchSize: min(target-r.Informative, eligible), Seed: seed,
		Round: int32(len(batch)), FirstRank: first, Exclude: exclude})
	if err != nil {
		return nil, err
	}
	r.Rows = rows[:min(len(rows), want)]
	return r, nil
}
