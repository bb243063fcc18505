package rollout

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/schemas"
	"github.com/cualake/cualake/trainer/featurize"
)

// Templates are the tasks' oracle templates (OracleTemplates).
type Templates struct {
	// ByTask maps a task id to its template: the oracle's actions written
	// in the policy's action language, joined by " ; ".
	ByTask map[string]string
	// Missing maps a task id with no template to why (no oracle plan, a
	// setup the simulator cannot apply, an oracle that does not solve it).
	Missing map[string]string
}

// Count returns how many distinct templates there are.
func (t Templates) Count() int {
	seen := map[string]bool{}
	for _, s := range t.ByTask {
		seen[s] = true
	}
	return len(seen)
}

// Of returns the templates of the given tasks only.
func (t Templates) Of(tasks []schemas.Task) Templates {
	out := Templates{ByTask: map[string]string{}, Missing: map[string]string{}}
	for _, task := range tasks {
		if s, ok := t.ByTask[task.TaskID]; ok {
			out.ByTask[task.TaskID] = s
		} else if why, ok := t.Missing[task.TaskID]; ok {
			out.Missing[task.TaskID] = why
		}
	}
	return out
}

// Group is one template with the tasks that share it.
type Group struct {
	// ID numbers the templates of one Groups call from 1, in the order of
	// their first task, so ids are stable for one task list.
	ID    int      `json:"id"`
	Text  string   `json:"text"`
	Tasks []string `json:"tasks"`
	// Splits counts the group's tasks per split (train, heldout).
	Splits map[string]int `json:"splits"`
}

// Groups groups tasks (in their order) by template and returns the groups
// and, per task, its group's ID (0 for a task without a template).
func (t Templates) Groups(tasks []schemas.Task) (groups []*Group, ids []int) {
	num := map[string]int{}
	ids = make([]int, len(tasks))
	for i, task := range tasks {
		text, ok := t.ByTask[task.TaskID]
		if !ok {
			continue
		}
		if num[text] == 0 {
			groups = append(groups, &Group{ID: len(groups) + 1, Text: text, Splits: map[string]int{}})
			num[text] = len(groups)
		}
		g := groups[num[text]-1]
		g.Tasks = append(g.Tasks, task.TaskID)
		g.Splits[task.Split]++
		ids[i] = g.ID
	}
	return groups, ids
}

// MissingSummary names up to three tasks without a template and why, for a
// progress line ("" when every task has one).
func (t Templates) MissingSummary() string {
	if len(t.Missing) == 0 {
		return ""
	}
	ids := make([]string, 0, len(t.Missing))
	for id := range t.Missing {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var parts []string
	for _, id := range ids[:min(3, len(ids))] {
		parts = append(parts, id+": "+t.Missing[id])
	}
	if len(ids) > 3 {
		parts = append(parts, fmt.Sprintf("... (%d more)", len(ids)-3))
	}
	return strings.Join(parts, "; ")
}

// OracleTemplates plays the oracle on every task in the embedded simulator
// (accessibility trees only, desktop seed 0) and writes each action in the
// causal policy's action language (featurize.Encode, against the screen
// the action was taken on). Two instances of a family share a template
// when the policy would write the same texts to solve both: the unit of
// what a small policy generalises from one demonstration to another
// (docs/experiments.md, "Where the gain stops"). A task the oracle cannot
// solve here has no template and is listed in Missing; that is no error,
// since Cover then treats it as its own template.
func OracleTemplates(tasks []schemas.Task) (Templates, error) {
	out := Templates{ByTask: map[string]string{}, Missing: map[string]string{}}
	sim, err := simdesk.NewSim(simdesk.Options{TreeOnly: true})
	if err != nil {
		return out, fmt.Errorf("rollout: oracle templates: %w", err)
	}
	for _, task := range tasks {
		text, why, err := oracleTemplate(sim, task)
		if err != nil {
			return out, fmt.Errorf("rollout: oracle template of %s: %w", task.TaskID, err)
		}
		if why != "" {
			out.Missing[task.TaskID] = why
			continue
		}
		out.ByTask[task.TaskID] = text
	}
	return out, nil
}

// oracleTemplate returns the task's template, or why it has none; err is
// reserved for the featurizer failing on a tree the simulator produced.
// The oracle plays through simdesk.Run, wrapped to write each action
// against the observation it was chosen on.
func oracleTemplate(sim *simdesk.Sim, task schemas.Task) (text, why string, err error) {
	pol, err := simdesk.Oracle(task)
	if errors.Is(err, simdesk.ErrNoPlan) {
		return "", "no oracle plan", nil
	}
	if err != nil {
		return "", err.Error(), nil
	}
	var lines []string
	var encErr error
	write := simdesk.PolicyFunc(func(obs simdesk.Obs) (schemas.Action, error) {
		a, err := pol.Next(obs)
		if err != nil {
			return a, err
		}
		elems, err := featurize.Elements(obs.Tree, task.Instruction)
		if err != nil {
			encErr = fmt.Errorf("step %d: %w", len(lines), err)
			return a, encErr
		}
		line, _ := featurize.Encode(a, elems, task.Instruction)
		lines = append(lines, line)
		return a, nil
	})
	ep, err := simdesk.Run(sim, write, task, 0, simdesk.MaxOracleSteps)
	if encErr != nil {
		return "", "", encErr
	}
	if err != nil {
		return "", err.Error(), nil
	}
	if ep.Score != 1 {
		return "", fmt.Sprintf("the oracle scores %v after %d steps: %s", ep.Score, len(ep.Actions), ep.Detail), nil
	}
	return strings.Join(lines, " ; "), "", nil
}
