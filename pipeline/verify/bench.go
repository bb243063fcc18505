package verify

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/cualake/cualake/pipeline/rollout"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/schemas"
)

// Perturbation modes of the Perturbed actor.
const (
	ModeClean     = "clean"      // the oracle, unchanged
	ModeHide      = "hide"       // succeed, then bring another app to the front
	ModeSkipSave  = "skip_save"  // edit, switch away and press ctrl+s there: unsaved, but the history shows a save
	ModeWrongDir  = "wrong_dir"  // save the right file into the wrong folder
	ModeRevert    = "revert"     // change a setting, cancel or undo it, move to another page
	ModeEarlyDone = "early_done" // stop part-way and answer done
	ModeGiveUp    = "give_up"    // stop part-way and answer fail
	ModeWrongEnd  = "wrong_end"  // on an infeasible task, answer done instead of fail
)

// Perturbed is an actor for verifier benchmarks and training: the
// simulator's oracle with seeded perturbations that leave terminal states
// whose last screenshots mislead (an edit made but not saved, a setting
// changed then cancelled, the right file saved in the wrong folder, work
// hidden behind another window) beside clean successes and plain
// failures. Its episodes carry the executable outcome like any rollout.
type Perturbed struct{}

// Name implements rollout.AgentFactory.
func (Perturbed) Name() string { return "perturbed-oracle" }

// Version implements rollout.AgentFactory.
func (Perturbed) Version() int32 { return 0 }

// New implements rollout.AgentFactory.
func (Perturbed) New(task schemas.Task, seed int64) (rollout.Agent, error) {
	pol, err := simdesk.Oracle(task)
	if err != nil {
		return nil, fmt.Errorf("perturbed oracle: %w", err)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0xbe4c4))
	return &perturbed{oracle: pol, rng: rng, mode: pickMode(task, rng), budget: task.Difficulty}, nil
}

// PerturbMode is the mode the Perturbed actor picks for a task and seed.
func PerturbMode(task schemas.Task, seed int64) string {
	return pickMode(task, rand.New(rand.NewPCG(uint64(seed), 0xbe4c4)))
}

func pickMode(task schemas.Task, rng *rand.Rand) string {
	if !task.Feasible {
		return []string{ModeClean, ModeWrongEnd}[rng.IntN(2)]
	}
	type w struct {
		mode   string
		weight float64
	}
	ins := strings.ToLower(task.Instruction)
	doc := task.Domain == "editor" || task.Domain == "sheet"
	modes := []w{{ModeClean, 3}, {ModeHide, 1.5}, {ModeEarlyDone, 1.2}, {ModeGiveUp, 0.6}}
	if doc || strings.Contains(ins, "save") {
		modes = append(modes, w{ModeSkipSave, 2})
	}
	if doc && strings.Contains(ins, "~/") {
		modes = append(modes, w{ModeWrongDir, 1.2})
	}
	if task.Domain == "settings" {
		modes = append(modes, w{ModeRevert, 2.5})
	}
	total := 0.0
	for _, m := range modes {
		total += m.weight
	}
	u := rng.Float64() * total
	for _, m := range modes {
		if u < m.weight {
			return m.mode
		}
		u -= m.weight
	}
	return ModeClean
}

type perturbed struct {
	oracle  simdesk.Policy
	rng     *rand.Rand
	mode    string
	budget  int32
	steps   int
	queue   []schemas.Action // actions to play before asking the oracle again
	ending  bool             // the perturbation is done: play the queue, then answer
	answer  string
	stopAt  int
	decided bool
}

func decisionOf(a schemas.Action) rollout.Decision {
	text, err := action.Format(a)
	if err != nil {
		text = a.Kind
	}
	return rollout.Decision{Action: a, Response: text, RawAction: text}
}

// Act implements rollout.Agent.
func (p *perturbed) Act(_ context.Context, _ schemas.Task, obs simdesk.Obs, _ []rollout.Turn) (rollout.Decision, error) {
	p.steps++
	if p.ending {
		return p.pop(), nil
	}
	if !p.decided {
		p.decided = true
		if p.mode == ModeEarlyDone || p.mode == ModeGiveUp {
			p.stopAt = 1 + int(float64(max(p.budget, 2)-1)*(0.3+0.6*p.rng.Float64()))
		}
	}
	if p.stopAt > 0 && p.steps >= p.stopAt {
		p.ending, p.answer = true, action.Done
		if p.mode == ModeGiveUp {
			p.answer = action.Fail
		}
		return decisionOf(action.Simple(p.answer)), nil
	}
	a, err := p.oracle.Next(obs)
	if err != nil {
		return rollout.Decision{}, err
	}
	s, err := ParseScreen(obs.Tree)
	if err != nil {
		return rollout.Decision{}, err
	}
	switch p.mode {
	case ModeHide:
		if a.Kind == action.Done {
			p.end(action.Done, p.switchAway(s)...)
			return p.pop(), nil
		}
	case ModeWrongEnd:
		if a.Kind == action.Fail {
			a = action.Simple(action.Done)
		}
	case ModeSkipSave:
		if a.Kind == action.Hotkey && strings.EqualFold(strings.Join(a.Keys, "+"), "ctrl+s") {
			away := p.switchAway(s)
			p.end(action.Done, append(away, action.HotkeyAction("ctrl", "s"))...)
			return p.pop(), nil
		}
	case ModeWrongDir:
		if a.Kind == action.Type && strings.HasPrefix(strings.TrimSpace(a.Text), "~/") && saveDialogOpen(s) {
			a.Text = otherFolder(a.Text)
			p.end(action.Done)
			return decisionOf(a), nil
		}
	case ModeRevert:
		if q := p.revert(s, a); q != nil {
			p.end(action.Done, q[1:]...)
			return decisionOf(q[0]), nil
		}
	}
	return decisionOf(a), nil
}

// pop plays the next queued action, then the final answer.
func (p *perturbed) pop() rollout.Decision {
	if len(p.queue) > 0 {
		a := p.queue[0]
		p.queue = p.queue[1:]
		return decisionOf(a)
	}
	return decisionOf(action.Simple(p.answer))
}

// end queues the last actions and the final answer.
func (p *perturbed) end(answer string, queue ...schemas.Action) {
	p.ending, p.answer = true, answer
	p.queue = append(p.queue, queue...)
}

// switchAway brings another app to the front: a click on its dock button.
func (p *perturbed) switchAway(s *Screen) []schemas.Action {
	top := s.Top()
	var others []*Node
	for _, app := range simdesk.Apps() {
		if app != top {
			if n := s.Find("dock/" + app); n != nil {
				others = append(others, n)
			}
		}
	}
	if len(others) == 0 {
		return nil
	}
	return []schemas.Action{clickAt(action.Click, others[p.rng.IntN(len(others))])}
}

func saveDialogOpen(s *Screen) bool {
	for _, app := range []string{"editor", "sheet"} {
		if d := s.dialogOf(app); d != nil && d.Name == "Save As" {
			return true
		}
	}
	return false
}

// otherFolder moves a typed path into a sibling place folder.
func otherFolder(text string) string {
	for _, pair := range [][2]string{{"~/Documents/", "~/Desktop/"}, {"~/Desktop/", "~/Documents/"}, {"~/Downloads/", "~/Documents/"}} {
		if strings.HasPrefix(text, pair[0]) {
			return pair[1] + strings.TrimPrefix(text, pair[0])
		}
	}
	return "~/Downloads/" + strings.TrimPrefix(text, "~/")
}

// revert turns the oracle's next settings commit into a change that is
// never applied: a text value typed but neither confirmed nor cancelled,
// an option list opened and dismissed, a switch flipped twice; then another
// app comes to the front. nil when a is not a commit.
func (p *perturbed) revert(s *Screen, a schemas.Action) []schemas.Action {
	switch a.Kind {
	case action.Type:
		if f := s.focusedEditable(); f != nil && strings.HasPrefix(f.ID, "settings/set:") && strings.HasSuffix(a.Text, "\n") {
			return append([]schemas.Action{action.TypeAction(strings.TrimSuffix(a.Text, "\n"))}, p.switchAway(s)...)
		}
	case action.Click:
		if a.X == nil || a.Y == nil {
			return nil
		}
		n := s.target(int(*a.X), int(*a.Y))
		switch {
		case n == nil:
		case strings.HasPrefix(n.ID, "settings/set:") && n.Role == "switch":
			return append([]schemas.Action{a, a}, p.switchAway(s)...)
		case strings.HasPrefix(n.ID, "settings/pop:opt:"):
			return append([]schemas.Action{action.KeyAction("escape", 1)}, p.switchAway(s)...)
		}
	}
	return nil
}

// BenchInputs rolls the Perturbed actor out once on each task (seeds
// derived from seed) in the simulator and returns the episodes as
// verification inputs, in task order. Tree-only episodes are much faster;
// screenshots make evidence blobs.
func BenchInputs(ctx context.Context, tasks []schemas.Task, seed int64, iteration int32, workers int, treeOnly bool) ([]*Input, error) {
	p := rollout.DefaultParams()
	p.N, p.MaxTurns, p.Seed, p.Iteration, p.TreeOnly = 1, 60, seed, iteration, treeOnly
	if workers > 0 {
		p.Workers = workers
	}
	var out []*Input
	err := rollout.Run(ctx, tasks, Perturbed{}, rollout.SimEnvs(p), p, func(ep rollout.Episode) error {
		if ep.Trajectory.Outcome == schemas.OutcomeError {
			return nil // the oracle could not plan the task: nothing to verify
		}
		in, err := InputFromEpisode(&ep, DefaultWindow)
		if err != nil {
			return err
		}
		out = append(out, in)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("verify bench: %w", err)
	}
	return out, nil
}
