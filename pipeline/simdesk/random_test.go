package simdesk

import (
	"testing"
)

// A random policy must rarely solve tasks; otherwise the judges or the pool
// are too lenient to train on.
func TestRandomPolicyRarelySucceeds(t *testing.T) {
	pool := Pool()
	sim, err := NewSim(Options{TreeOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	const episodes = 300
	wins, feasibleWins := 0, 0
	for k := 0; k < episodes; k++ {
		task := pool[(k*37)%len(pool)]
		ep, err := Run(sim, RandomPolicy(int64(k)), task, int64(k), 30)
		if err != nil {
			t.Fatalf("%s: %v", task.TaskID, err)
		}
		if ep.Score == 1 {
			wins++
			if task.Feasible {
				feasibleWins++
				t.Logf("random policy solved %s", task.TaskID)
			}
		}
	}
	rate := float64(wins) / episodes
	t.Logf("random success rate %.3f (%d/%d, %d on feasible tasks)", rate, wins, episodes, feasibleWins)
	if rate > 0.05 || feasibleWins > 3 {
		t.Fatalf("random policy succeeds too often: %d/%d (%d feasible)", wins, episodes, feasibleWins)
	}
}
