package lake

import (
	"fmt"

	"github.com/cualake/cualake/schemas"
)

// SyntheticStepsForBench returns n steps rows spread over n/30 trajectories,
// the fixture of the commit and query benchmarks.
func SyntheticStepsForBench(n int) []schemas.Step {
	rows := make([]schemas.Step, n)
	for i := range rows {
		rows[i] = SyntheticStepForBench(i)
	}
	return rows
}

var benchKinds = []string{"click", "type", "hotkey", "scroll", "done"}

// SyntheticStepForBench is row i of SyntheticStepsForBench, for callers
// that stream more rows than fit in memory (bench/scale).
func SyntheticStepForBench(i int) schemas.Step {
	x, y := int32(i%1000), int32((i*7)%1000)
	return schemas.Step{TrajectoryID: fmt.Sprintf("traj-%07d", i/30), Step: int32(i % 30), ActionKind: benchKinds[i%len(benchKinds)],
		X: &x, Y: &y, Text: "hello", Response: "I will click the button", Observation: fmt.Sprintf("%064x", i%5000),
		PromptTokens: 1200, ResponseTokens: 24}
}
