package synthesize

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/schemas"
)

// TrajectorySummary reports trajectory-guided synthesis.
type TrajectorySummary struct {
	FailedTasks       int            `json:"failed_tasks"`    // tasks with a failed or incomplete trajectory
	SucceededTasks    int            `json:"succeeded_tasks"` // tasks with a successful trajectory
	SplitTasks        int            `json:"split_tasks"`     // failed tasks split into sub-tasks
	SplitCandidates   int            `json:"split_candidates"`
	ComposeCandidates int            `json:"compose_candidates"`
	Skipped           map[string]int `json:"skipped,omitempty"`    // tasks left out, by reason
	Deviations        []Deviation    `json:"deviations,omitempty"` // the first 50
}

// Deviation is where a failed trajectory left the goal.
type Deviation struct {
	TaskID       string `json:"task_id"`
	TrajectoryID string `json:"trajectory_id"`
	// Step is the 1-based action after which goal progress never exceeded
	// what it was before that action.
	Step int `json:"step"`
	// Progress is the number of judge criteria satisfied at the start and
	// after each action.
	Progress []int `json:"progress"`
	Criteria int   `json:"criteria"`
	// Subgoal is the first sub-goal (1-based, in the order the oracle
	// reaches them) the trajectory had not reached when it deviated.
	Subgoal  int `json:"subgoal"`
	Subgoals int `json:"subgoals"`
}

// DeviationStep returns the earliest action (1-based) after which goal
// progress never exceeds its level before that action: the first step
// after which progress never recovers. progress[0] is the start; it
// returns 0 for an empty trajectory.
func DeviationStep(progress []int) int {
	n := len(progress) - 1
	if n < 1 {
		return 0
	}
	// best[t] = max progress from t to the end.
	best := make([]int, len(progress))
	best[n] = progress[n]
	for t := n - 1; t >= 0; t-- {
		best[t] = max(progress[t], best[t+1])
	}
	for s := 1; s <= n; s++ {
		if best[s] <= progress[s-1] {
			return s
		}
	}
	return n
}

// Replay replays a trajectory's actions in the simulator from the task's
// setup (with the episode's seed) and returns, for the start and after each
// action, which judge criteria hold.
func Replay(sim *simdesk.Sim, task schemas.Task, seed int64, actions []schemas.Action) ([][]bool, error) {
	j, err := judge.Compile(task.Judge)
	if err != nil {
		return nil, err
	}
	if _, err := sim.Reset(task, seed); err != nil {
		return nil, err
	}
	held := func() []bool {
		h := make([]bool, len(j.Criteria))
		for i := range j.Criteria {
			r, err := j.EvaluateCriterion(i, sim.Desktop())
			h[i] = err == nil && r.Score == 1
		}
		return h
	}
	out := [][]bool{held()}
	for _, a := range actions {
		obs, err := sim.Step(a)
		if err != nil {
			return out, err
		}
		out = append(out, held())
		if obs.Done {
			break
		}
	}
	return out, nil
}

func count(h []bool) int {
	n := 0
	for _, b := range h {
		if b {
			n++
		}
	}
	return n
}

// subgoalPlan is a task's criteria grouped by when the oracle reaches them
// for good, with the desktop state after each group.
type subgoalPlan struct {
	maintained []int    // criteria that hold from the start to the end
	groups     [][]int  // criteria reached together, in order
	states     [][]byte // states[k]: the state once groups[:k] hold (states[0] after setup)
	steps      []int    // oracle actions up to each group
}

// planSubgoals runs the oracle on task and records its sub-goals.
func planSubgoals(sim *simdesk.Sim, task schemas.Task) (*subgoalPlan, error) {
	j, err := judge.Compile(task.Judge)
	if err != nil {
		return nil, err
	}
	if j.Infeasible() || j.Conj != "and" {
		return nil, fmt.Errorf("not a conjunction of criteria")
	}
	pol, err := simdesk.Oracle(task)
	if err != nil {
		return nil, err
	}
	obs, err := sim.Reset(task, 0)
	if err != nil {
		return nil, err
	}
	held := func() []bool {
		h := make([]bool, len(j.Criteria))
		for i := range j.Criteria {
			r, err := j.EvaluateCriterion(i, sim.Desktop())
			h[i] = err == nil && r.Score == 1
		}
		return h
	}
	var hist [][]bool
	var states [][]byte
	snap := func() error {
		b, err := sim.Desktop().MarshalState()
		states = append(states, b)
		hist = append(hist, held())
		return err
	}
	if err := snap(); err != nil {
		return nil, err
	}
	for !obs.Done && len(hist) <= simdesk.MaxOracleSteps {
		a, err := pol.Next(obs)
		if err != nil {
			return nil, err
		}
		if obs, err = sim.Step(a); err != nil {
			return nil, err
		}
		if err := snap(); err != nil {
			return nil, err
		}
	}
	last := hist[len(hist)-1]
	if count(last) != len(last) {
		return nil, fmt.Errorf("the oracle does not reach every criterion")
	}
	p := &subgoalPlan{states: [][]byte{states[0]}}
	stable := make([]int, len(last)) // first step from which the criterion holds to the end
	for i := range last {
		t := len(hist) - 1
		for t > 0 && hist[t-1][i] {
			t--
		}
		stable[i] = t
		if t == 0 {
			p.maintained = append(p.maintained, i)
		}
	}
	var bounds []int
	for _, t := range stable {
		if t > 0 && !slices.Contains(bounds, t) {
			bounds = append(bounds, t)
		}
	}
	sort.Ints(bounds)
	for _, b := range bounds {
		var g []int
		for i, t := range stable {
			if t == b {
				g = append(g, i)
			}
		}
		p.groups = append(p.groups, g)
		p.states = append(p.states, states[b])
		p.steps = append(p.steps, b)
	}
	return p, nil
}

// stateSetup writes the setup steps that take the desktop from state a to
// state b: files and folders, settings, clipboard and open windows (sent
// mail cannot be set up and is left out).
func stateSetup(a, b []byte) ([]simdesk.SetupStep, error) {
	var sa, sb simdesk.State
	if err := json.Unmarshal(a, &sa); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &sb); err != nil {
		return nil, err
	}
	type entry struct {
		dir     bool
		content string
	}
	ea, eb := map[string]entry{}, map[string]entry{}
	for _, e := range sa.FS.Entries {
		ea[e.Path] = entry{e.Dir, e.Content}
	}
	for _, e := range sb.FS.Entries {
		eb[e.Path] = entry{e.Dir, e.Content}
	}
	var out []simdesk.SetupStep
	var deleted []string
	for _, e := range sa.FS.Entries {
		if _, ok := eb[e.Path]; ok || slices.ContainsFunc(deleted, func(d string) bool { return strings.HasPrefix(e.Path, d+"/") }) {
			continue
		}
		deleted = append(deleted, e.Path)
		out = append(out, simdesk.Step("delete", map[string]string{"path": e.Path}))
	}
	for _, e := range sb.FS.Entries {
		old, ok := ea[e.Path]
		if ok && old == (entry{e.Dir, e.Content}) {
			continue
		}
		if e.Dir {
			out = append(out, simdesk.Step("create_folder", map[string]string{"path": e.Path}))
		} else {
			out = append(out, simdesk.Step("create_file", map[string]string{"path": e.Path, "content": e.Content}))
		}
	}
	va := map[string]string{}
	for _, v := range sa.Settings.Values {
		va[v.Key] = v.Value
	}
	for _, v := range sb.Settings.Values {
		if va[v.Key] != v.Value {
			out = append(out, simdesk.Step("set_setting", map[string]string{"key": v.Key, "value": v.Value}))
		}
	}
	if sb.Clipboard != sa.Clipboard && sb.Clipboard != "" {
		out = append(out, simdesk.Step("set_clipboard", map[string]string{"text": sb.Clipboard}))
	}
	open := map[string]bool{}
	for _, w := range sa.Windows {
		open[w.App] = true
	}
	for _, w := range sb.Windows {
		if open[w.App] {
			continue
		}
		switch {
		case w.App == "editor" && sb.Editor.Path != "":
			out = append(out, simdesk.Step("open_file", map[string]string{"path": sb.Editor.Path}))
		case w.App == "sheet" && sb.Sheet.Path != "":
			out = append(out, simdesk.Step("open_file", map[string]string{"path": sb.Sheet.Path}))
		default:
			out = append(out, simdesk.Step("open_app", map[string]string{"app": w.App}))
		}
	}
	return out, nil
}

// trajectoryCandidates builds the split and composed candidates from the
// input's trajectories: failed tasks are split at their sub-goals from the
// one where a rollout deviated; succeeded tasks of one app are clustered
// and two or three composed into one conjunctive task. Splits and
// compositions alternate in the result.
func trajectoryCandidates(ctx context.Context, pool []schemas.Task, trajs []schemas.Trajectory, steps []schemas.Step, p Params) ([]*Candidate, *TrajectorySummary, error) {
	sum := &TrajectorySummary{Skipped: map[string]int{}}
	byID := map[string]schemas.Task{}
	for _, t := range pool {
		byID[t.TaskID] = t
	}
	failed := map[string][]schemas.Trajectory{}
	succeeded := map[string][]string{}
	heldout := map[string]bool{}
	for _, tr := range trajs {
		t, ok := byID[tr.TaskID]
		if !ok {
			continue
		}
		// A held-out task's evaluation rollouts must not become training
		// tasks (its parts or compositions would leak the held-out split).
		if t.Split == "heldout" {
			heldout[tr.TaskID] = true
			continue
		}
		switch tr.Outcome {
		case schemas.OutcomeFailure, schemas.OutcomeIncomplete:
			failed[tr.TaskID] = append(failed[tr.TaskID], tr)
		case schemas.OutcomeSuccess:
			succeeded[tr.TaskID] = append(succeeded[tr.TaskID], tr.TrajectoryID)
		}
	}
	actions := map[string][]schemas.Step{}
	for _, st := range steps {
		actions[st.TrajectoryID] = append(actions[st.TrajectoryID], st)
	}
	sim, err := simdesk.NewSim(simdesk.Options{TreeOnly: true})
	if err != nil {
		return nil, nil, err
	}
	sum.FailedTasks, sum.SucceededTasks = len(failed), len(succeeded)
	if len(heldout) > 0 {
		sum.Skipped["heldout"] = len(heldout)
	}

	var splits []*Candidate
	for _, id := range sortedKeys(failed) {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		cs, dev, why := splitTask(sim, byID[id], failed[id], actions)
		if why != "" {
			sum.Skipped[why]++
			continue
		}
		sum.SplitTasks++
		if len(sum.Deviations) < 50 {
			sum.Deviations = append(sum.Deviations, *dev)
		}
		splits = append(splits, cs...)
	}
	comps := composeTasks(byID, succeeded, p.Seed)
	sum.SplitCandidates, sum.ComposeCandidates = len(splits), len(comps)
	var out []*Candidate
	for i := 0; i < max(len(splits), len(comps)); i++ {
		if i < len(splits) {
			out = append(out, splits[i])
		}
		if i < len(comps) {
			out = append(out, comps[i])
		}
	}
	return out, sum, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// splitTask finds where the task's failed trajectories deviated and writes
// one easier task per sub-goal from there on; why says why it could not.
func splitTask(sim *simdesk.Sim, task schemas.Task, failed []schemas.Trajectory, actions map[string][]schemas.Step) ([]*Candidate, *Deviation, string) {
	if !task.Feasible {
		return nil, nil, "infeasible task"
	}
	plan, err := planSubgoals(sim, task)
	if err != nil {
		return nil, nil, "no oracle plan"
	}
	if len(plan.groups) < 2 {
		return nil, nil, "a single sub-goal"
	}
	var best *Deviation
	sort.Slice(failed, func(a, b int) bool { return failed[a].TrajectoryID < failed[b].TrajectoryID })
	for _, tr := range failed {
		st := actions[tr.TrajectoryID]
		sort.Slice(st, func(a, b int) bool {
			return st[a].Step < st[b].Step || (st[a].Step == st[b].Step && st[a].Sub < st[b].Sub)
		})
		acts := make([]schemas.Action, len(st))
		for i := range st {
			acts[i] = st[i].ActionOf()
		}
		hist, err := Replay(sim, task, tr.Seed, acts)
		if err != nil || len(hist) == 0 {
			continue
		}
		prog := make([]int, len(hist))
		for i, h := range hist {
			prog[i] = count(h)
		}
		d := DeviationStep(prog)
		at := hist[max(0, d-1)]
		k := len(plan.groups)
		for gi, g := range plan.groups {
			if slices.ContainsFunc(g, func(i int) bool { return !at[i] }) {
				k = gi
				break
			}
		}
		dev := &Deviation{TaskID: task.TaskID, TrajectoryID: tr.TrajectoryID, Step: d, Progress: prog, Criteria: len(at),
			Subgoal: k + 1, Subgoals: len(plan.groups)}
		if best == nil || dev.Subgoal < best.Subgoal {
			best = dev
		}
	}
	if best == nil {
		return nil, nil, "not replayable"
	}
	if best.Subgoal > len(plan.groups) {
		return nil, nil, "every sub-goal reached"
	}
	j, _ := judge.Compile(task.Judge)
	parentSteps, _ := simdesk.ParseSetup(task.Setup)
	var out []*Candidate
	for k := best.Subgoal; k <= len(plan.groups); k++ {
		extra, err := stateSetup(plan.states[0], plan.states[k-1])
		if err != nil {
			continue
		}
		setup := simdesk.BuildSetup(append(slices.Clone(parentSteps), extra...)...)
		var crits []judge.Criterion
		for i, c := range j.Criteria {
			if slices.Contains(plan.maintained, i) || slices.Contains(plan.groups[k-1], i) {
				crits = append(crits, c)
			}
		}
		spec := judge.Build("and", crits...)
		ins := verbalize(crits, setup)
		if ins == "" {
			continue
		}
		c := &Candidate{Instruction: ins, App: task.App, Setup: setup, Judge: spec, Abilities: slices.Clone(task.Abilities),
			Method: schemas.SourceSplit, Origin: "trajectory:" + best.TrajectoryID, Parents: []string{task.TaskID},
			Meta: map[string]any{"deviation_step": best.Step, "subgoal": k, "subgoals": len(plan.groups), "progress": best.Progress},
			ref:  &reference{setup: setup, judge: spec}}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, nil, "no sub-task could be written"
	}
	return out, best, ""
}

// composeTasks clusters succeeded tasks of one app by similarity and
// chains two or three into one task whose judge is the conjunction of
// theirs.
func composeTasks(byID map[string]schemas.Task, succeeded map[string][]string, seed int64) []*Candidate {
	type feat struct {
		t       schemas.Task
		words   map[string]bool
		targets []string
		crits   []judge.Criterion
		window  bool // its setup opens windows or types: it must come last
		mail    bool
		files   map[string]string
	}
	byApp := map[string][]*feat{}
	for _, id := range sortedKeys(succeeded) {
		t := byID[id]
		j, err := judge.Compile(t.Judge)
		if err != nil || j.Infeasible() || j.Conj != "and" {
			continue
		}
		steps, err := simdesk.ParseSetup(t.Setup)
		if err != nil {
			continue
		}
		f := &feat{t: t, words: tokenSet(t.Instruction), crits: j.Criteria, files: setupFiles(t.Setup)}
		for _, st := range steps {
			if st.Type == "open_file" || st.Type == "open" || st.Type == "type_text" || st.Type == "open_app" {
				f.window = true
			}
			if !allowedSetup[st.Type] {
				f.window, f.mail = true, true // never composed
			}
		}
		for _, c := range j.Criteria {
			g := c.Result
			if g == nil {
				continue
			}
			switch {
			case g.Path != "":
				f.targets = append(f.targets, "path:"+g.Path)
			case g.Type == "setting":
				f.targets = append(f.targets, "setting:"+g.Key)
			case g.Type == "sent_mail" || g.Type == "sent_mail_count":
				f.mail = true
			default:
				f.targets = append(f.targets, "state:"+g.Type)
			}
		}
		byApp[t.App] = append(byApp[t.App], f)
	}
	sim := func(a, b *feat) float64 {
		inter, union := 0, len(a.words)
		for w := range b.words {
			if a.words[w] {
				inter++
			} else {
				union++
			}
		}
		s := float64(inter) / float64(max(1, union))
		if simdesk.FamilyOf(a.t.TaskID) == simdesk.FamilyOf(b.t.TaskID) {
			s += 0.2
		}
		return s
	}
	compatible := func(group []*feat, f *feat) bool {
		windows, mails := 0, 0
		for _, g := range append(slices.Clone(group), f) {
			if g.window {
				windows++
			}
			if g.mail {
				mails++
			}
		}
		if windows > 1 || mails > 1 {
			return false
		}
		for _, g := range group {
			for _, t := range f.targets {
				if slices.Contains(g.targets, t) {
					return false
				}
				p, _ := strings.CutPrefix(t, "path:")
				if _, ok := g.files[p]; ok {
					return false
				}
			}
			for _, t := range g.targets {
				p, _ := strings.CutPrefix(t, "path:")
				if _, ok := f.files[p]; ok {
					return false
				}
			}
			for p, c := range f.files {
				if o, ok := g.files[p]; ok && o != c {
					return false
				}
			}
		}
		return true
	}
	var out []*Candidate
	for _, app := range sortedKeys(byApp) {
		fs := byApp[app]
		used := make([]bool, len(fs))
		for i, f := range fs {
			if used[i] {
				continue
			}
			r := rand.New(rand.NewPCG(uint64(seed), hash64(f.t.TaskID)))
			group := []*feat{f}
			want := 2 + r.IntN(2)
			for len(group) < want {
				best, score := -1, 0.1
				for k, g := range fs {
					if used[k] || k == i || slices.Contains(group, g) || !compatible(group, g) {
						continue
					}
					s := 0.0
					for _, m := range group {
						s += sim(m, g)
					}
					if s /= float64(len(group)); s > score {
						best, score = k, s
					}
				}
				if best < 0 {
					break
				}
				group = append(group, fs[best])
			}
			if len(group) < 2 {
				continue
			}
			for k, g := range fs {
				if slices.Contains(group, g) {
					used[k] = true
				}
			}
			// The task that opens windows goes last, so its window is on top.
			sort.SliceStable(group, func(a, b int) bool { return !group[a].window && group[b].window })
			var steps []simdesk.SetupStep
			var crits []judge.Criterion
			var lines, parents []string
			abilities := []string{"multi_objective"}
			for n, g := range group {
				ss, _ := simdesk.ParseSetup(g.t.Setup)
				for _, st := range ss {
					if !slices.ContainsFunc(steps, func(o simdesk.SetupStep) bool {
						return o.Type == st.Type && string(o.Parameters) == string(st.Parameters)
					}) {
						steps = append(steps, st)
					}
				}
				crits = append(crits, g.crits...)
				lines = append(lines, strconv.Itoa(n+1)+". "+g.t.Instruction)
				parents = append(parents, g.t.TaskID)
				for _, a := range g.t.Abilities {
					if !slices.Contains(abilities, a) {
						abilities = append(abilities, a)
					}
				}
			}
			sort.Strings(abilities)
			setup := simdesk.BuildSetup(steps...)
			spec := judge.Build("and", crits...)
			origin := []string{}
			for _, g := range group {
				origin = append(origin, succeeded[g.t.TaskID][0])
			}
			out = append(out, &Candidate{Instruction: "Do all of the following:\n" + strings.Join(lines, "\n"), App: app,
				Setup: setup, Judge: spec, Abilities: abilities, Method: schemas.SourceComposed,
				Origin: "trajectories:" + strings.Join(origin, ","), Parents: parents,
				Meta: map[string]any{"composed": len(group)}, ref: &reference{setup: setup, judge: spec}})
		}
	}
	return out
}
