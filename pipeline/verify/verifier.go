package verify

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/cualake/cualake/pipeline/rollout"
	"github.com/cualake/cualake/schemas"
)

// NewRunner returns the runner of a builtin-Judge strategy (passive,
// builtin or trained) with the builtin Probe; rng makes its choices
// sampled (training), nil greedy.
func NewRunner(s *Strategy, rng *rand.Rand, screenshots bool) *Runner {
	r := &Runner{Name: s.Name, Judge: &BuiltinJudge{Strategy: s, Rand: rng}, MaxRounds: s.MaxRounds,
		StepsPerRound: s.StepsPerRound, Screenshots: screenshots}
	if s.Probe && s.MaxRounds > 0 {
		r.Probe = BuiltinProbe{StopOnFailure: s.StopOnFailure}
	}
	return r
}

// Verifier runs one or more strategies on each episode and returns one
// verifications row per strategy, in the order given; the first is the one
// whose reward `rollout --reward verifier` uses. It implements
// rollout.Verifier.
type Verifier struct {
	Runners []*Runner
	Window  int // observations the Judge sees; 0 means DefaultWindow
}

var _ rollout.Verifier = (*Verifier)(nil)

// Verify implements rollout.Verifier.
func (v *Verifier) Verify(ctx context.Context, task schemas.Task, ep *rollout.Episode) ([]schemas.Verification, []schemas.Blob, error) {
	ep.Task = task
	in, err := InputFromEpisode(ep, v.Window)
	if err != nil {
		return nil, nil, fmt.Errorf("verify %s: %w", ep.Trajectory.TrajectoryID, err)
	}
	return v.VerifyInput(ctx, in)
}

// VerifyInput verifies one prepared input with every runner.
func (v *Verifier) VerifyInput(ctx context.Context, in *Input) ([]schemas.Verification, []schemas.Blob, error) {
	var rows []schemas.Verification
	var blobs []schemas.Blob
	for _, r := range v.Runners {
		att, err := r.Run(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		rows = append(rows, att.Row(in, r.Name))
		for _, b := range att.Evidence {
			if !slices.ContainsFunc(blobs, func(x schemas.Blob) bool { return x.Hash == b.Hash }) {
				blobs = append(blobs, b)
			}
		}
	}
	return rows, blobs, nil
}
