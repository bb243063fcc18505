package sample

import (
	"fmt"
	"slices"

	"github.com/cualake/cualake/schemas"
)

// SourceCalibration is trajectories.source of recalibration rollouts: a
// small group per task filtered out of the pool, rolled out every few
// iterations (EvoCUA-1.5 4.1: calibration is repeated as the policy
// changes). They update pass rates and may bring a task back; the trainer
// never trains on them.
const SourceCalibration = "calibration"

// Reenter puts recalibrated tasks back into the pool: a feasible task out
// of the pool, with rollouts in rows (calibrated lists the tasks that had
// recalibration rollouts), re-enters when its new observed rate lies in
// [PMin, PMax]. It returns the tasks that re-entered, sorted.
func Reenter(rows []schemas.PassRate, calibrated map[string]bool, p EMAParams) []string {
	var out []string
	for i := range rows {
		r := &rows[i]
		if !calibrated[r.TaskID] || r.InPool || !r.Feasible || r.Observed == nil {
			continue
		}
		if InPool(*r.Observed, p.PMin, p.PMax) {
			r.InPool = true
			out = append(out, r.TaskID)
		}
	}
	return out
}

// OutOfPool returns the feasible tasks the current pass-rate state (Latest)
// holds out of the pool: the tasks recalibration rolls out, sorted.
func OutOfPool(state []schemas.PassRate) []string {
	var out []string
	for i := range state {
		if !state[i].InPool && state[i].Feasible && state[i].EMA != nil {
			out = append(out, state[i].TaskID)
		}
	}
	slices.Sort(out)
	return out
}

// StageParams configure one run of the sample stage.
type StageParams struct {
	Sampler   string    `json:"sampler"` // uniform, frontier, dtac, curriculum, dapo
	BatchSize int       `json:"batch"`
	Seed      int64     `json:"seed"`
	EMA       EMAParams `json:"ema"`
	Frontier  FrontierParams
	DTAC      DTACParams
	// Iteration, when > 0, is the batch's iteration instead of one past
	// the newest rolled-out one: the loop's RL iterations after RFT rounds,
	// which roll out no batch of their own, keep their numbers.
	Iteration int32 `json:"iteration,omitempty"`
}

// DefaultStageParams are the papers' defaults: frontier sampling, B = 32,
// ScaleCUA's EMA.
func DefaultStageParams() StageParams {
	return StageParams{Sampler: NameFrontier, BatchSize: 32, EMA: DefaultEMA(), Frontier: DefaultFrontier(), DTAC: DefaultDTAC()}
}

// StageInput is what the stage reads from its snapshot.
type StageInput struct {
	Tasks        []schemas.Task
	History      []schemas.PassRate
	Trajectories []schemas.Trajectory // training rollouts (source rollout) only
	Batches      []schemas.Batch
	// Calibration holds the recalibration rollouts (source calibration) of
	// the iteration to fold in: tasks out of the pool that may re-enter.
	Calibration []schemas.Trajectory
	// Buffer is the replay_buffer table (DTAC), PolicyVersion the newest
	// checkpoint's version (-1: none), which the staleness window counts from.
	Buffer        []schemas.ReplayItem
	PolicyVersion int32
}

// StageOutput is what the stage commits.
type StageOutput struct {
	PassRates []schemas.PassRate // one row per task for the newest rolled-out iteration (empty if nothing new)
	Batch     []schemas.Batch    // the batch of the next iteration
	Observed  int32              // the iteration folded into the EMAs (-1: none)
	Iteration int32              // the iteration the batch is for
	InPool    int                // tasks eligible after filtering
	Rated     int                // tasks with an EMA
	// Buffer is DTAC's replay_buffer rows for Iteration (nil for the
	// other samplers).
	Buffer []schemas.ReplayItem
	// Reentered lists the tasks recalibration put back into the pool.
	Reentered []string
}

// NewSampler returns the named sampler, set up from the history where it
// needs state (the curriculum's initial rates). DTAC starts with an empty
// buffer; RunStage fills it from the replay_buffer table.
func NewSampler(p StageParams, history []schemas.PassRate) (Sampler, error) {
	switch p.Sampler {
	case NameUniform:
		return Uniform{}, nil
	case NameFrontier:
		return &Frontier{Params: p.Frontier}, nil
	case NameCurriculum:
		return NewCurriculum(InitialRates(history)), nil
	case NameDAPO:
		return NewDAPO(), nil
	case NameDTAC:
		return &DTAC{Params: p.DTAC, Buffer: NewReplayBuffer()}, nil
	}
	return nil, fmt.Errorf("%w: unknown sampler %q (want uniform, frontier, dtac, curriculum or dapo)", ErrBadParams, p.Sampler)
}

// RunStage folds the newest rolled-out iteration into the pass-rate EMAs
// (the first one is the initial pass that filters the pool to [p_min,
// p_max]) and picks the next iteration's batch.
func RunStage(in StageInput, p StageParams) (*StageOutput, error) {
	if err := p.EMA.Validate(); err != nil {
		return nil, err
	}
	switch p.Sampler {
	case NameUniform, NameFrontier, NameDTAC, NameCurriculum, NameDAPO:
	default:
		return nil, fmt.Errorf("%w: unknown sampler %q (want uniform, frontier, dtac, curriculum or dapo)", ErrBadParams, p.Sampler)
	}
	if len(in.Tasks) == 0 {
		return nil, fmt.Errorf("%w: the snapshot has no tasks", ErrEmptyPool)
	}
	in = withoutHeldOut(in)
	if len(in.Tasks) == 0 {
		return nil, fmt.Errorf("%w: every task of the snapshot is held out (split heldout): nothing to train on", ErrEmptyPool)
	}
	lastRolled, lastRated := int32(-1), int32(-1)
	for _, t := range in.Trajectories {
		lastRolled = max(lastRolled, t.Iteration)
	}
	for _, r := range in.History {
		lastRated = max(lastRated, r.Iteration)
	}
	out := &StageOutput{Observed: -1, Iteration: lastRolled + 1}
	if p.Iteration > 0 {
		if p.Iteration <= lastRolled {
			return nil, fmt.Errorf("%w: --iteration %d: iteration %d is already rolled out", ErrBadParams, p.Iteration, lastRolled)
		}
		out.Iteration = p.Iteration
	}
	for _, b := range in.Batches {
		if b.Iteration == out.Iteration {
			return nil, fmt.Errorf("iteration %d is already sampled and not rolled out yet: run rollout first", out.Iteration)
		}
	}
	state, err := Latest(in.History, in.Tasks)
	if err != nil {
		return nil, err
	}
	history := in.History
	if lastRolled > lastRated {
		var newest []schemas.Trajectory
		for _, t := range in.Trajectories {
			if t.Iteration == lastRolled {
				newest = append(newest, t)
			}
		}
		calib := map[string]bool{}
		for _, t := range in.Calibration {
			if t.Iteration == lastRolled {
				newest = append(newest, t)
				calib[t.TaskID] = true
			}
		}
		rows, err := UpdateEMA(state, newest, lastRolled, p.EMA)
		if err != nil {
			return nil, err
		}
		out.Reentered = Reenter(rows, calib, p.EMA)
		out.PassRates, out.Observed, state = rows, lastRolled, rows
		history = append(append([]schemas.PassRate{}, in.History...), rows...)
	}
	s, err := NewSampler(p, history)
	if err != nil {
		return nil, err
	}
	var step *bufferStep
	if d, ok := s.(*DTAC); ok {
		if step, err = newBufferStep(in, out.PassRates, out.Observed, out.Iteration, p.DTAC); err != nil {
			return nil, err
		}
		d.Buffer = step.buf
	}
	for i := range state {
		if state[i].InPool {
			out.InPool++
		}
		if state[i].EMA != nil {
			out.Rated++
		}
	}
	out.Batch, err = s.Select(state, Request{Iteration: out.Iteration, BatchSize: p.BatchSize, Seed: uint64(p.Seed)})
	if err != nil {
		return nil, fmt.Errorf("sample iteration %d with %s: %w", out.Iteration, p.Sampler, err)
	}
	if step != nil {
		out.Buffer = step.rows(out.Iteration, s.(*DTAC).Replayed, p.DTAC.MaxReplays)
	}
	FillWeights(out.PassRates, s)
	return out, nil
}

// withoutHeldOut drops the held-out tasks (split heldout) from everything
// the stage reads: they are evaluation tasks, so they never get a pass-rate
// row, never enter the pool and no channel draws them (the uniform channel
// of frontier sampling once drew them into training batches). Tasks with no
// split are an unsplit pool and stay.
func withoutHeldOut(in StageInput) StageInput {
	held := map[string]bool{}
	var tasks []schemas.Task
	for _, t := range in.Tasks {
		if t.Split == "heldout" {
			held[t.TaskID] = true
			continue
		}
		tasks = append(tasks, t)
	}
	if len(held) == 0 {
		return in
	}
	in.Tasks = tasks
	in.History = slices.DeleteFunc(slices.Clone(in.History), func(r schemas.PassRate) bool { return held[r.TaskID] })
	drop := func(ts []schemas.Trajectory) []schemas.Trajectory {
		return slices.DeleteFunc(slices.Clone(ts), func(t schemas.Trajectory) bool { return held[t.TaskID] })
	}
	in.Trajectories, in.Calibration = drop(in.Trajectories), drop(in.Calibration)
	return in
}
