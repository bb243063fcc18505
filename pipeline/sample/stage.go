package sample

import (
	"fmt"

	"github.com/cualake/cualake/schemas"
)

// StageParams configure one run of the sample stage.
type StageParams struct {
	Sampler   string    `json:"sampler"` // uniform, frontier, dtac, curriculum, dapo
	BatchSize int       `json:"batch"`
	Seed      int64     `json:"seed"`
	EMA       EMAParams `json:"ema"`
	Frontier  FrontierParams
	DTAC      DTACParams
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
}

// StageOutput is what the stage commits.
type StageOutput struct {
	PassRates []schemas.PassRate // one row per task for the newest rolled-out iteration (empty if nothing new)
	Batch     []schemas.Batch    // the batch of the next iteration
	Observed  int32              // the iteration folded into the EMAs (-1: none)
	Iteration int32              // the iteration the batch is for
	InPool    int                // tasks eligible after filtering
	Rated     int                // tasks with an EMA
}

// NewSampler returns the named sampler, set up from the history where it
// needs state (DTAC's replay buffer, the curriculum's initial rates).
func NewSampler(p StageParams, history []schemas.PassRate, trajs []schemas.Trajectory, batches []schemas.Batch, iteration int32) (Sampler, error) {
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
		groups, err := GroupOutcomes(trajs)
		if err != nil {
			return nil, err
		}
		buf, err := RebuildBuffer(history, groups, batches, iteration, p.DTAC)
		if err != nil {
			return nil, err
		}
		return &DTAC{Params: p.DTAC, Buffer: buf}, nil
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
	lastRolled, lastRated := int32(-1), int32(-1)
	for _, t := range in.Trajectories {
		lastRolled = max(lastRolled, t.Iteration)
	}
	for _, r := range in.History {
		lastRated = max(lastRated, r.Iteration)
	}
	out := &StageOutput{Observed: -1, Iteration: lastRolled + 1}
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
		rows, err := UpdateEMA(state, newest, lastRolled, p.EMA)
		if err != nil {
			return nil, err
		}
		out.PassRates, out.Observed, state = rows, lastRolled, rows
		history = append(append([]schemas.PassRate{}, in.History...), rows...)
	}
	s, err := NewSampler(p, history, in.Trajectories, in.Batches, out.Iteration)
	if err != nil {
		return nil, err
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
	FillWeights(out.PassRates, s)
	return out, nil
}
