package lake

import (
	"fmt"

	"github.com/cualake/cualake/schemas"
)

// SyntheticStepsForBench returns n steps rows spread over n/30 trajectories,
// the fixture of the commit and query benchmarks.
func SyntheticStepsForBench(n int) []schemas.Step {
	rows := make([]schemas.Step, n)
	kinds := []string{"click", "type", "hotkey", "scroll", "done"}
	for i := range rows {
		x, y := int32(i%1000), int32((i*7)%1000)
		rows[i] = schemas.Step{TrajectoryID: fmt.Sprintf("traj-%07d", i/30), Step: int32(i % 30), ActionKind: kinds[i%len(kinds)],
			X: &x, Y: &y, Text: "hello", Response: "I will click the button", Observation: fmt.Sprintf("%064x", i%5000),
			PromptTokens: 1200, ResponseTokens: 24, Reward: 0}
	}
	return rows
}
