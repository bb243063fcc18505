package synthesize

import (
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/rollout"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/schemas"
)

func TestDeviationStep(t *testing.T) {
	for _, tc := range []struct {
		progress []int
		want     int
	}{
		{[]int{0}, 0},                   // no action
		{[]int{0, 0, 0}, 1},             // never progressed: the first action
		{[]int{0, 0, 0, 1, 1, 1}, 4},    // progressed at 3, then stalled
		{[]int{0, 1, 0, 0}, 2},          // undid its progress at 2
		{[]int{0, 1, 0, 1, 2, 1, 1}, 5}, // recovered once, then lost it for good
		{[]int{1, 1, 2, 3}, 3},          // kept progressing: the last action
	} {
		if got := DeviationStep(tc.progress); got != tc.want {
			t.Errorf("DeviationStep(%v) = %d, want %d", tc.progress, got, tc.want)
		}
	}
}

func poolTask(t *testing.T, id string) schemas.Task {
	t.Helper()
	for _, task := range simdesk.Pool() {
		if task.TaskID == id {
			return task
		}
	}
	t.Fatalf("no built-in task %s", id)
	return schemas.Task{}
}

// noisySuccess is the success rate over seeded episodes of an agent that
// follows the oracle but, with probability q, takes a random action.
func noisySuccess(t *testing.T, sim *simdesk.Sim, task schemas.Task, q float64, episodes, maxTurns int) float64 {
	t.Helper()
	wins := 0
	for e := 0; e < episodes; e++ {
		pol, err := simdesk.Oracle(task)
		if err != nil {
			t.Fatal(err)
		}
		noise := simdesk.RandomPolicy(int64(e)*7919 + 1)
		r := rand.New(rand.NewPCG(uint64(e), 99))
		obs, err := sim.Reset(task, int64(e))
		if err != nil {
			t.Fatal(err)
		}
		for step := 0; step < maxTurns && !obs.Done; step++ {
			var a schemas.Action
			if r.Float64() < q {
				a, _ = noise.Next(obs)
				if a.Kind == action.Done || a.Kind == action.Fail {
					a = action.Simple(action.Wait)
				}
			} else if a, err = pol.Next(obs); err != nil {
				break // the oracle gave up: a failed episode
			}
			if obs, err = sim.Step(a); err != nil {
				t.Fatal(err)
			}
		}
		if score, _, err := sim.Evaluate(); err == nil && obs.Done && score == 1 {
			wins++
		}
	}
	return float64(wins) / float64(episodes)
}

func candidateTask(c *Candidate, id string) schemas.Task { return c.task(id) }

func TestSplitTasksAreEasierAndComposedHarder(t *testing.T) {
	sim, err := simdesk.NewSim(simdesk.Options{TreeOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	// The noisy agent recovers from its random actions, but they cost
	// turns: with one turn budget for all, the tasks that need more steps
	// fail more often. The budget is 1.3 times the oracle's steps on the
	// longest task that must fit in it.
	const q, episodes = 0.3, 24
	// Split: a multi-step settings task that a rollout failed without any
	// progress.
	parent := poolTask(t, "settings-multi-003")
	failed := schemas.Trajectory{TrajectoryID: "x#00", TaskID: parent.TaskID, Outcome: schemas.OutcomeFailure, Seed: 3}
	steps := []schemas.Step{{TrajectoryID: "x#00", Step: 0, ActionKind: "click", X: i32(500), Y: i32(990)},
		{TrajectoryID: "x#00", Step: 1, ActionKind: "type", Text: "hello"}}
	parts, dev, why := splitTask(sim, parent, []schemas.Trajectory{failed}, map[string][]schemas.Step{"x#00": steps})
	if why != "" {
		t.Fatal(why)
	}
	if dev.Step != 1 || dev.Subgoal != 1 || dev.Subgoals < 3 || len(parts) != dev.Subgoals || !reflect.DeepEqual(dev.Progress, []int{0, 0, 0}) {
		t.Fatalf("deviation %+v, %d parts", dev, len(parts))
	}
	turns := int(1.3 * float64(oracleSteps(t, sim, parent)))
	pParent := noisySuccess(t, sim, parent, q, episodes, turns)
	var pParts []float64
	for i, c := range parts {
		task := candidateTask(c, "split")
		verifyTask(t, sim, task)
		if c.Method != schemas.SourceSplit || !slices.Equal(c.Parents, []string{parent.TaskID}) || !strings.HasPrefix(c.Origin, "trajectory:x#00") {
			t.Errorf("part %d: %+v", i, c)
		}
		pParts = append(pParts, noisySuccess(t, sim, task, q, episodes, turns))
	}
	t.Logf("oracle with noise q=%.1f, %d turns: parent %.2f, split parts %v", q, turns, pParent, pParts)
	if mean(pParts) <= pParent+0.1 {
		t.Errorf("split parts (%v) are not easier than their parent (%.2f)", pParts, pParent)
	}

	// Compose: three tasks of one app that succeeded.
	byID := map[string]schemas.Task{}
	succeeded := map[string][]string{}
	for _, id := range []string{"settings-toggle-001", "settings-choice-002", "settings-slider-003"} {
		byID[id] = poolTask(t, id)
		succeeded[id] = []string{id + "@it000#00"}
	}
	comps := composeTasks(byID, succeeded, 1)
	if len(comps) != 1 {
		t.Fatalf("%d compositions", len(comps))
	}
	comp := candidateTask(comps[0], "comp")
	verifyTask(t, sim, comp)
	if !strings.Contains(comp.Judge, `"conj":"and"`) || len(comp.ParentTaskIDs) < 2 || comp.Source != schemas.SourceComposed {
		t.Fatalf("composed %+v", comp)
	}
	longest := 0
	for _, id := range comp.ParentTaskIDs {
		longest = max(longest, oracleSteps(t, sim, byID[id]))
	}
	turns = int(1.3 * float64(longest))
	var pOne []float64
	for _, id := range comp.ParentTaskIDs {
		pOne = append(pOne, noisySuccess(t, sim, byID[id], q, episodes, turns))
	}
	pComp := noisySuccess(t, sim, comp, q, episodes, turns)
	t.Logf("%d turns: composed %.2f, its parts %v", turns, pComp, pOne)
	if pComp >= mean(pOne)-0.1 {
		t.Errorf("the composed task (%.2f) is not harder than its parts (%v)", pComp, pOne)
	}
}

func i32(v int32) *int32 { return &v }

func oracleSteps(t *testing.T, sim *simdesk.Sim, task schemas.Task) int {
	t.Helper()
	pol, err := simdesk.Oracle(task)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := simdesk.Run(sim, pol, task, 0, simdesk.MaxOracleSteps)
	if err != nil || ep.Score != 1 {
		t.Fatalf("%s: oracle %v %v", task.TaskID, ep.Score, err)
	}
	return len(ep.Actions)
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// TestFromTrajectories runs the stage on real rollouts: random ones fail,
// oracle ones succeed.
func TestFromTrajectories(t *testing.T) {
	pool := simdesk.Pool()
	var tasks []schemas.Task
	for _, task := range pool {
		if strings.HasPrefix(task.TaskID, "settings-multi-") || strings.HasPrefix(task.TaskID, "files-organize-") ||
			strings.HasPrefix(task.TaskID, "files-mkdir-") || strings.HasPrefix(task.TaskID, "editor-write-") {
			tasks = append(tasks, task)
		}
	}
	rp := rollout.DefaultParams()
	rp.N, rp.MaxTurns, rp.TreeOnly, rp.Workers = 1, 8, true, 4
	var trajs []schemas.Trajectory
	var steps []schemas.Step
	emit := func(ep rollout.Episode) error {
		trajs = append(trajs, ep.Trajectory)
		steps = append(steps, ep.Steps...)
		return nil
	}
	ctx := context.Background()
	if err := rollout.Run(ctx, tasks, rollout.Random{}, rollout.SimEnvs(rp), rp, emit); err != nil {
		t.Fatal(err)
	}
	rp.Iteration = 1
	if err := rollout.Run(ctx, tasks, rollout.Oracle{}, rollout.SimEnvs(rp), rp, emit); err != nil {
		t.Fatal(err)
	}
	p := DefaultParams()
	p.FromTrajectories, p.Count, p.Workers = true, 12, 4
	res, err := Run(ctx, Input{Tasks: pool, Trajectories: trajs, Steps: steps}, p)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.Mode != "trajectories" || s.ByMethod[schemas.SourceSplit] == 0 || s.ByMethod[schemas.SourceComposed] == 0 || s.Accepted < p.Count {
		t.Fatalf("summary %+v", s)
	}
	split := map[string]string{}
	heldout := map[string]bool{}
	for _, task := range pool {
		split[task.TaskID] = task.Split
	}
	for _, tr := range trajs {
		if split[tr.TaskID] == "heldout" {
			heldout[tr.TaskID] = true
		}
	}
	// The rollouts covered held-out tasks too; none may parent a training task.
	if len(heldout) == 0 || s.Trajectory == nil || s.Trajectory.Skipped["heldout"] != len(heldout) {
		t.Fatalf("%d held-out tasks rolled out; trajectory summary %+v", len(heldout), s.Trajectory)
	}
	sim, _ := simdesk.NewSim(simdesk.Options{TreeOnly: true})
	for _, task := range res.Accepted {
		for _, parent := range task.ParentTaskIDs {
			if split[parent] == "heldout" {
				t.Errorf("%s: parent %s is a held-out task", task.TaskID, parent)
			}
		}
		if len(task.ParentTaskIDs) == 0 || (task.Source != schemas.SourceSplit && task.Source != schemas.SourceComposed) {
			t.Errorf("%s: parents %v source %s", task.TaskID, task.ParentTaskIDs, task.Source)
		}
		verifyTask(t, sim, task)
	}
	if s.Trajectory == nil || s.Trajectory.SplitTasks == 0 || len(s.Trajectory.Deviations) == 0 {
		t.Fatalf("trajectory summary %+v", s.Trajectory)
	}
}
