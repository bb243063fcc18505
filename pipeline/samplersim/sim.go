// Package samplersim runs the task samplers of package sample against a
// synthetic learner, so their claims (ScaleCUA figure 6a: Frontier Sampling
// ahead of uniform, DAPO and curriculum; EvoCUA-1.5 table 6: DTAC ahead of
// no curriculum) can be checked cheaply and reproducibly, without a GPU or
// an environment.
//
// The learner (docs/samplers.md states it in full): a pool of tasks, each
// with one of a few latent abilities and a latent difficulty d; the policy
// holds one skill value per ability; a rollout of task j succeeds with
// probability sigmoid(skill[ability(j)] - d_j). After each iteration's
// rollouts the policy takes one policy-gradient step: each rollout group
// contributes its GRPO advantages times the score of its outcomes, so a
// group whose rewards are all equal contributes nothing, and the step is the
// mean over the batch's groups (GRPO's loss is a mean over the batch). A
// share of every update transfers to the other abilities. The samplers see
// nothing but their own rollouts' outcomes.
package samplersim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/cualake/cualake/pipeline/advantage"
	"github.com/cualake/cualake/pipeline/sample"
	"github.com/cualake/cualake/schemas"
)

// ErrBadConfig marks a configuration outside its domain.
var ErrBadConfig = errors.New("bad simulator config")

// Config describes one simulation. Every sampler runs under the same
// Config: same tasks, same initial pass, same rollout budget per iteration
// (BatchSize groups of GroupSize rollouts), same seeds.
type Config struct {
	// Tasks is the training pool size before the initial-pass filter.
	Tasks int `json:"tasks"`
	// EvalTasks is the size of the held-out evaluation set, drawn from the
	// same distribution and never trained on.
	EvalTasks int `json:"eval_tasks"`
	// Abilities is the number of latent abilities tasks are spread over.
	Abilities int `json:"abilities"`
	// InfeasibleShare is the share of infeasible tasks (success: reporting
	// infeasibility); they share one extra ability.
	InfeasibleShare float64 `json:"infeasible_share"`
	// DifficultyMean and DifficultySD give d ~ N(mean, sd^2).
	DifficultyMean float64 `json:"difficulty_mean"`
	DifficultySD   float64 `json:"difficulty_sd"`
	// SkillSD gives the initial skill per ability ~ N(0, sd^2).
	SkillSD float64 `json:"skill_sd"`
	// LearningRate scales every policy step.
	LearningRate float64 `json:"learning_rate"`
	// Transfer is the share of an ability's update every other ability
	// receives (cross-domain generalisation, EvoCUA-1.5 table 7).
	Transfer float64 `json:"transfer"`
	// BatchSize B and GroupSize n: B*n rollouts per iteration for everyone.
	BatchSize int `json:"batch_size"`
	GroupSize int `json:"group_size"`
	// Iterations is the number of RL iterations after the initial pass.
	Iterations int `json:"iterations"`
	// Seeds are the worlds; results are averaged over them.
	Seeds []uint64 `json:"seeds"`
	// Samplers lists the samplers to run, by name.
	Samplers []string `json:"samplers"`
	// Frontier and DTAC override the samplers' defaults (nil: the papers'
	// values), for ablations.
	Frontier *sample.FrontierParams `json:"frontier,omitempty"`
	DTAC     *sample.DTACParams     `json:"dtac,omitempty"`
}

// DefaultConfig returns the configuration of docs/samplers.md: 3,000 tasks
// over 12 abilities, 500 evaluation tasks, B = 32 and n = 8 (ScaleCUA
// appendix D), 150 iterations, 5 seeds, all five samplers.
func DefaultConfig() Config {
	return Config{
		Tasks: 3000, EvalTasks: 500, Abilities: 12, InfeasibleShare: 0.05,
		DifficultyMean: 1.0, DifficultySD: 1.5, SkillSD: 0.5,
		LearningRate: 0.15, Transfer: 0.1,
		BatchSize: 32, GroupSize: 8, Iterations: 150,
		Seeds:    []uint64{1, 2, 3, 4, 5},
		Samplers: []string{sample.NameUniform, sample.NameFrontier, sample.NameDTAC, sample.NameCurriculum, sample.NameDAPO},
	}
}

func (c Config) validate() error {
	switch {
	case c.Tasks < 1 || c.EvalTasks < 1 || c.Abilities < 1:
		return fmt.Errorf("%w: tasks %d, eval tasks %d, abilities %d; want >= 1", ErrBadConfig, c.Tasks, c.EvalTasks, c.Abilities)
	case !(c.InfeasibleShare >= 0 && c.InfeasibleShare < 1):
		return fmt.Errorf("%w: infeasible share %v, want [0, 1)", ErrBadConfig, c.InfeasibleShare)
	case c.BatchSize < 1 || c.GroupSize < 2 || c.Iterations < 1 || len(c.Seeds) == 0 || len(c.Samplers) == 0:
		return fmt.Errorf("%w: batch %d, group %d, iterations %d, %d seeds, %d samplers", ErrBadConfig, c.BatchSize, c.GroupSize, c.Iterations, len(c.Seeds), len(c.Samplers))
	case !(c.LearningRate > 0) || !(c.Transfer >= 0 && c.Transfer <= 1) || !(c.DifficultySD >= 0) || !(c.SkillSD >= 0) || math.IsNaN(c.DifficultyMean):
		return fmt.Errorf("%w: learning rate %v, transfer %v, sds %v/%v", ErrBadConfig, c.LearningRate, c.Transfer, c.DifficultySD, c.SkillSD)
	}
	seen := map[string]bool{}
	for _, s := range c.Samplers {
		if seen[s] {
			return fmt.Errorf("%w: sampler %q listed twice", ErrBadConfig, s)
		}
		seen[s] = true
		switch s {
		case sample.NameUniform, sample.NameFrontier, sample.NameDTAC, sample.NameCurriculum, sample.NameDAPO:
		default:
			return fmt.Errorf("%w: unknown sampler %q", ErrBadConfig, s)
		}
	}
	return nil
}

// task is one synthetic task.
type task struct {
	id       string
	ability  int
	d        float64
	feasible bool
}

// world is what a seed fixes: the tasks, the evaluation set, the initial
// skills and the initial pass's outcomes.
type world struct {
	pool, eval []task
	byID       map[string]int
	skill0     []float64
	initial    []schemas.Trajectory
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func newWorld(c Config, seed uint64) *world {
	rng := rand.New(rand.NewPCG(seed, 0x776f726c64)) // "world"
	w := &world{byID: map[string]int{}}
	w.skill0 = make([]float64, c.Abilities+1) // the last ability: recognising infeasibility
	for i := range w.skill0 {
		w.skill0[i] = c.SkillSD * rng.NormFloat64()
	}
	mk := func(prefix string, i int) task {
		t := task{id: fmt.Sprintf("%s%05d", prefix, i), d: c.DifficultyMean + c.DifficultySD*rng.NormFloat64(), feasible: true}
		if rng.Float64() < c.InfeasibleShare {
			t.feasible, t.ability = false, c.Abilities
		} else {
			t.ability = rng.IntN(c.Abilities)
		}
		return t
	}
	for i := 0; i < c.Tasks; i++ {
		w.pool = append(w.pool, mk("t", i))
		w.byID[w.pool[i].id] = i
	}
	for i := 0; i < c.EvalTasks; i++ {
		w.eval = append(w.eval, mk("e", i))
	}
	// The initial pass: every task once, n rollouts, with the initial policy.
	for i := range w.pool {
		w.initial = append(w.initial, rollGroup(rng, &w.pool[i], w.skill0, 0, c.GroupSize)...)
	}
	return w
}

// rollGroup rolls a task out n times.
func rollGroup(rng *rand.Rand, t *task, skill []float64, iteration int32, n int) []schemas.Trajectory {
	p := sigmoid(skill[t.ability] - t.d)
	g := fmt.Sprintf("%s/i%d", t.id, iteration)
	out := make([]schemas.Trajectory, n)
	for k := range out {
		r, o := 0.0, schemas.OutcomeFailure
		if rng.Float64() < p {
			r, o = 1, schemas.OutcomeSuccess
			if !t.feasible {
				o = schemas.OutcomeReportedInfeasible
			}
		}
		out[k] = schemas.Trajectory{TrajectoryID: fmt.Sprintf("%s/%d", g, k), TaskID: t.id, GroupID: g, Iteration: iteration, Reward: r, Outcome: o}
	}
	return out
}

// signal is a group's policy-gradient coefficient on its task's ability
// logit: (1/n) sum_i A_i (r_i - p), the GRPO advantage times the score of
// each outcome under the logistic policy. With binary rewards it is >= 0
// and 0 exactly for a zero-variance group.
func signal(rewards []float64, p float64) (float64, error) {
	as, err := advantage.GroupAdvantages(rewards, advantage.DefaultGRPO())
	if err != nil {
		return 0, err
	}
	s := 0.0
	for i, a := range as {
		s += a * (rewards[i] - p)
	}
	return s / float64(len(rewards)), nil
}

// Point is one iteration of one sampler, averaged over seeds.
type Point struct {
	Iteration int `json:"iteration"`
	// EvalReward is the mean success probability over the evaluation set.
	EvalReward float64 `json:"eval_reward"`
	// EvalRewardSD is its standard deviation across seeds.
	EvalRewardSD float64 `json:"eval_reward_sd"`
	// ZeroVarianceShare is the share of this iteration's rollout groups
	// whose rewards were all equal.
	ZeroVarianceShare float64 `json:"zero_variance_share"`
	// FrontierSize is the number of pool tasks (after the initial filter)
	// whose true success probability lies in [0.1, 0.9].
	FrontierSize float64 `json:"frontier_size"`
	// TrainGroups is the number of groups the policy step used (fresh and
	// replayed; 0 when DAPO is still accumulating).
	TrainGroups float64 `json:"train_groups"`
}

// SamplerResult is one sampler's run, averaged over seeds.
type SamplerResult struct {
	// FinalEvalReward is the last iteration's EvalReward.
	FinalEvalReward   float64 `json:"final_eval_reward"`
	FinalEvalRewardSD float64 `json:"final_eval_reward_sd"`
	// FinalEvalBySeed is the final eval reward of each seed, in Config.Seeds
	// order: samplers share worlds per seed, so differences pair up.
	FinalEvalBySeed []float64 `json:"final_eval_by_seed"`
	// ZeroVarianceShare is the share of zero-variance groups over every
	// iteration and seed.
	ZeroVarianceShare float64 `json:"zero_variance_share"`
	// Series has one point per iteration, 0 (before RL) to Iterations.
	Series []Point `json:"series"`
}

// Result is a whole simulation.
type Result struct {
	Config   Config
	Samplers map[string]*SamplerResult
}

// run is one sampler on one seed.
type run struct {
	eval, zeroShare, frontier, train []float64
	zero, groups                     int
}

// Run simulates every sampler of c on every seed. Runs execute in parallel
// but each has its own random streams, so the result does not depend on
// scheduling.
func Run(c Config) (*Result, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	worlds := make([]*world, len(c.Seeds))
	for i, s := range c.Seeds {
		worlds[i] = newWorld(c, s)
	}
	runs := make([][]*run, len(c.Samplers))
	errs := make([][]error, len(c.Samplers))
	var wg sync.WaitGroup
	for si := range c.Samplers {
		runs[si] = make([]*run, len(c.Seeds))
		errs[si] = make([]error, len(c.Seeds))
		for wi := range c.Seeds {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runs[si][wi], errs[si][wi] = simulate(c, c.Samplers[si], c.Seeds[wi], worlds[wi])
			}()
		}
	}
	wg.Wait()
	res := &Result{Config: c, Samplers: map[string]*SamplerResult{}}
	for si, name := range c.Samplers {
		for wi := range c.Seeds {
			if errs[si][wi] != nil {
				return nil, fmt.Errorf("sampler %s, seed %d: %w", name, c.Seeds[wi], errs[si][wi])
			}
		}
		res.Samplers[name] = aggregate(runs[si], c.Iterations)
	}
	return res, nil
}

func aggregate(rs []*run, iterations int) *SamplerResult {
	out := &SamplerResult{}
	k := float64(len(rs))
	zero, groups := 0, 0
	for _, r := range rs {
		zero += r.zero
		groups += r.groups
	}
	if groups > 0 {
		out.ZeroVarianceShare = float64(zero) / float64(groups)
	}
	for it := 0; it <= iterations; it++ {
		p := Point{Iteration: it}
		for _, r := range rs {
			p.EvalReward += r.eval[it] / k
			p.ZeroVarianceShare += r.zeroShare[it] / k
			p.FrontierSize += r.frontier[it] / k
			p.TrainGroups += r.train[it] / k
		}
		ss := 0.0
		for _, r := range rs {
			d := r.eval[it] - p.EvalReward
			ss += d * d
		}
		if len(rs) > 1 {
			p.EvalRewardSD = math.Sqrt(ss / (k - 1))
		}
		out.Series = append(out.Series, p)
	}
	last := out.Series[len(out.Series)-1]
	out.FinalEvalReward, out.FinalEvalRewardSD = last.EvalReward, last.EvalRewardSD
	for _, r := range rs {
		out.FinalEvalBySeed = append(out.FinalEvalBySeed, r.eval[iterations])
	}
	return out
}

// groupRec is a rolled-out group the step can train on.
type groupRec struct {
	task    int
	rewards []float64
}

func simulate(c Config, name string, seed uint64, w *world) (*run, error) {
	skill := append([]float64(nil), w.skill0...)
	rng := rand.New(rand.NewPCG(seed, 0x726f6c6c^uint64(len(name))<<40^hashName(name))) // rollouts
	emaP := sample.DefaultEMA()
	if name == sample.NameDTAC {
		emaP = sample.EvoCUAEMA()
	}
	tasks := make([]schemas.Task, len(w.pool))
	for i, t := range w.pool {
		tasks[i] = schemas.Task{TaskID: t.id, Feasible: t.feasible}
	}
	pool, err := sample.NewPool(tasks, 0)
	if err != nil {
		return nil, err
	}
	if pool, err = sample.UpdateEMA(pool, w.initial, 0, emaP); err != nil {
		return nil, err
	}
	inPool := make([]int, 0, len(pool))
	for _, r := range pool {
		if r.InPool {
			inPool = append(inPool, w.byID[r.TaskID])
		}
	}

	var s sample.Sampler
	var dtac *sample.DTAC
	var dyn *sample.DynamicSampling
	dapoP := sample.DAPOParams{OverSample: 1, MaxGenBatches: sample.DefaultDAPO().MaxGenBatches}
	switch name {
	case sample.NameUniform:
		s = sample.Uniform{}
	case sample.NameFrontier:
		f := sample.NewFrontier()
		if c.Frontier != nil {
			f.Params = *c.Frontier
		}
		s = f
	case sample.NameDTAC:
		dtac = sample.NewDTAC()
		if c.DTAC != nil {
			dtac.Params = *c.DTAC
		}
		s = dtac
	case sample.NameCurriculum:
		s = sample.NewCurriculum(sample.InitialRates(pool))
	case sample.NameDAPO:
		// The budget is B groups per iteration, so a generation round is B
		// tasks; accumulation over rounds plays the role of over-sampling.
		s = &sample.DAPO{Params: dapoP}
		dyn = sample.NewDynamicSampling(c.BatchSize, dapoP)
	}
	stored := map[string][]float64{} // rewards of every group, for AdaPR replays
	if dtac != nil {
		gs, err := sample.GroupOutcomes(w.initial)
		if err != nil {
			return nil, err
		}
		for _, t := range w.initial {
			stored[t.GroupID] = append(stored[t.GroupID], t.Reward)
		}
		if err := dtac.Buffer.Observe(gs, pool, dtac.Params); err != nil {
			return nil, err
		}
	}

	r := &run{}
	measure := func(train int) {
		ev := 0.0
		for _, t := range w.eval {
			ev += sigmoid(skill[t.ability] - t.d)
		}
		r.eval = append(r.eval, ev/float64(len(w.eval)))
		front := 0
		for _, i := range inPool {
			t := &w.pool[i]
			if p := sigmoid(skill[t.ability] - t.d); p >= 0.1 && p <= 0.9 {
				front++
			}
		}
		r.frontier = append(r.frontier, float64(front))
		r.train = append(r.train, float64(train))
	}
	measure(0)
	// Iteration 0 is the initial pass, shared by every sampler: its share
	// of zero-variance groups is the starting point of the series.
	init, err := sample.GroupOutcomes(w.initial)
	if err != nil {
		return nil, err
	}
	zero0 := 0
	for _, g := range init {
		if g.RewardsEqual {
			zero0++
		}
	}
	r.zeroShare = append(r.zeroShare, float64(zero0)/float64(len(init)))

	for it := int32(1); it <= int32(c.Iterations); it++ {
		batch, err := s.Select(pool, sample.Request{Iteration: it, BatchSize: c.BatchSize, Seed: seed})
		if err != nil {
			return nil, fmt.Errorf("iteration %d: %w", it, err)
		}
		var trajs []schemas.Trajectory
		var train []groupRec
		zero, fresh := 0, 0
		for _, b := range batch {
			ti := w.byID[b.TaskID]
			if b.Channel == sample.ChannelAdaPR {
				continue // replays are added below from the buffer's record
			}
			g := rollGroup(rng, &w.pool[ti], skill, it, c.GroupSize)
			trajs = append(trajs, g...)
			rec := groupRec{task: ti}
			for _, t := range g {
				rec.rewards = append(rec.rewards, t.Reward)
			}
			fresh++
			if allEqual(rec.rewards) {
				zero++
			}
			if dtac != nil {
				stored[g[0].GroupID] = rec.rewards
			}
			train = append(train, rec)
		}
		if dtac != nil {
			for _, item := range dtac.Replayed {
				train = append(train, groupRec{task: w.byID[item.TaskID], rewards: stored[item.GroupID]})
			}
		}
		if dyn != nil {
			ready, err := dyn.Add(trajs)
			switch {
			case errors.Is(err, sample.ErrTooManyGenBatches):
				ready = true // verl stops here; the simulation trains on what it kept
			case err != nil:
				return nil, err
			}
			train = nil
			if ready {
				train = groupsOf(dyn.Batch(), w.byID)
				dyn = sample.NewDynamicSampling(c.BatchSize, dapoP)
			}
		}
		if err := step(c, w, skill, train); err != nil {
			return nil, fmt.Errorf("iteration %d: %w", it, err)
		}
		r.zero += zero
		r.groups += fresh
		share := 0.0
		if fresh > 0 {
			share = float64(zero) / float64(fresh)
		}
		r.zeroShare = append(r.zeroShare, share)
		measure(len(train))

		if pool, err = sample.UpdateEMA(pool, trajs, it, emaP); err != nil {
			return nil, fmt.Errorf("iteration %d: %w", it, err)
		}
		if dtac != nil {
			gs, err := sample.GroupOutcomes(trajs)
			if err != nil {
				return nil, err
			}
			if err := dtac.Buffer.Observe(gs, pool, dtac.Params); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

// step applies one policy-gradient step: the mean over the batch's groups
// of each group's signal on its ability, plus Transfer of it on every other
// ability. The signal uses the current policy's success probability, which
// is what the score function of a replayed (off-policy) group evaluates to.
func step(c Config, w *world, skill []float64, groups []groupRec) error {
	if len(groups) == 0 {
		return nil
	}
	delta := make([]float64, len(skill))
	for _, g := range groups {
		t := &w.pool[g.task]
		sg, err := signal(g.rewards, sigmoid(skill[t.ability]-t.d))
		if err != nil {
			return fmt.Errorf("task %s: %w", t.id, err)
		}
		for a := range delta {
			if a == t.ability {
				delta[a] += sg
			} else {
				delta[a] += c.Transfer * sg
			}
		}
	}
	for a := range skill {
		skill[a] += c.LearningRate * delta[a] / float64(len(groups))
	}
	return nil
}

func groupsOf(trajs []schemas.Trajectory, byID map[string]int) []groupRec {
	var out []groupRec
	at := map[string]int{}
	for _, t := range trajs {
		k, ok := at[t.GroupID]
		if !ok {
			k = len(out)
			at[t.GroupID] = k
			out = append(out, groupRec{task: byID[t.TaskID]})
		}
		out[k].rewards = append(out[k].rewards, t.Reward)
	}
	return out
}

func allEqual(xs []float64) bool {
	for _, x := range xs {
		if x != xs[0] {
			return false
		}
	}
	return true
}

func hashName(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
