package rollout

import (
	"context"
	"fmt"

	"github.com/cualake/cualake/schemas"
)

// Verifier judges a finished episode without trusting its executable judge
// (VeriCUA): it may restore the episode's terminal state and probe it. It
// returns one verification row per strategy it ran, and any evidence blobs.
type Verifier interface {
	Verify(ctx context.Context, task schemas.Task, ep *Episode) ([]schemas.Verification, []schemas.Blob, error)
}

// ApplyVerifier runs v on ep and records its verdicts. With reward
// "verifier" the agent is rewarded 1 when the first verification's verdict
// is success and 0 otherwise (VeriCUA: the schedule reward in the table
// scores the verifier, not the agent); with "both" the executable judge
// stays the reward and the verdicts are recorded beside it.
func ApplyVerifier(ctx context.Context, v Verifier, reward string, ep *Episode) error {
	if ep.Trajectory.Outcome == schemas.OutcomeError {
		return nil // nothing to verify: the episode never finished
	}
	task := ep.Task
	rows, blobs, err := v.Verify(ctx, task, ep)
	if err != nil {
		return fmt.Errorf("verify %s: %w", ep.Trajectory.TrajectoryID, err)
	}
	ep.Verifications = append(ep.Verifications, rows...)
	ep.Blobs = append(ep.Blobs, blobs...)
	if reward == "verifier" && len(rows) > 0 {
		ep.Trajectory.Reward = 0
		if rows[0].Verdict == "success" {
			ep.Trajectory.Reward = 1
		}
	}
	return nil
}
