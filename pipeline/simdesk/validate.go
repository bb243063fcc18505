package simdesk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/schemas"
)

// CheckTask is the static check a synthesis rule validator runs on a task
// for the simulator: the setup parses with known step types, the judge
// compiles, and what the judge names exists in the simulator (settings
// keys, apps). Errors name the offending field ("judge: result[1].key: ...").
func CheckTask(t schemas.Task) error {
	if err := CheckSetup(t.Setup); err != nil {
		return err
	}
	j, err := judge.Compile(t.Judge)
	if err != nil {
		return fmt.Errorf("simdesk: task %s: %w", t.TaskID, err)
	}
	if err := CheckSetup(j.Postconfig); err != nil {
		return fmt.Errorf("simdesk: task %s: judge: postconfig: %w", t.TaskID, err)
	}
	if j.Infeasible() == t.Feasible && t.Judge != "" {
		return fmt.Errorf("simdesk: task %s: feasible is %v but the judge is %s", t.TaskID, t.Feasible, map[bool]string{true: "infeasible", false: "not infeasible"}[j.Infeasible()])
	}
	for i, c := range j.Criteria {
		field := "result"
		if len(j.Criteria) > 1 {
			field = fmt.Sprintf("result[%d]", i)
		}
		g := c.Result
		switch {
		case g == nil:
		case g.Type == "setting" && settingByKey(g.Key) == nil:
			return fmt.Errorf("simdesk: task %s: judge: %s.key: unknown setting %q", t.TaskID, field, g.Key)
		case g.Type == "window_open" && appByID(g.App) == nil:
			return fmt.Errorf("simdesk: task %s: judge: %s.app: unknown app %q (apps: %v)", t.TaskID, field, g.App, Apps())
		case g.Type == "active_window" && c.Expected != nil && c.Expected.Type == "rule":
			if app, ok := c.Expected.Rules.Expected.(string); ok && !slices.Contains(Apps(), app) {
				return fmt.Errorf("simdesk: task %s: judge: expected.rules.expected: unknown app %q", t.TaskID, app)
			}
		}
	}
	return nil
}

// OSWorldTask is a task in OSWorld's JSON layout.
type OSWorldTask struct {
	ID          string          `json:"id"`
	Snapshot    string          `json:"snapshot,omitempty"`
	Instruction string          `json:"instruction"`
	Source      string          `json:"source,omitempty"`
	Config      json.RawMessage `json:"config"`
	RelatedApps []string        `json:"related_apps,omitempty"`
	Evaluator   json.RawMessage `json:"evaluator"`
}

// ToOSWorld writes a task as OSWorld task JSON (config = setup steps,
// evaluator = judge).
func ToOSWorld(t schemas.Task) ([]byte, error) {
	setup := t.Setup
	if setup == "" {
		setup = "[]"
	}
	o := OSWorldTask{ID: t.TaskID, Snapshot: "simdesk", Instruction: t.Instruction, Source: t.Source,
		Config: json.RawMessage(setup), Evaluator: json.RawMessage(t.Judge)}
	if t.App != "" {
		o.RelatedApps = []string{t.App}
	}
	b, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("simdesk: task %s: %w", t.TaskID, err)
	}
	return b, nil
}

// FromOSWorld reads OSWorld task JSON into a task row (source "imported",
// Raw holding the original bytes). Config steps and evaluator must be ones
// the simulator understands.
func FromOSWorld(raw []byte) (schemas.Task, error) {
	var o OSWorldTask
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&o); err != nil {
		return schemas.Task{}, fmt.Errorf("simdesk: OSWorld task: %w", err)
	}
	if o.ID == "" {
		return schemas.Task{}, fmt.Errorf("simdesk: OSWorld task: id is required")
	}
	setup := string(o.Config)
	if setup == "" || setup == "null" {
		setup = "[]"
	}
	t := schemas.Task{TaskID: o.ID, Instruction: o.Instruction, Setup: setup, Judge: string(o.Evaluator),
		Source: schemas.SourceImported, Origin: "osworld:" + o.ID, Raw: string(raw)}
	if len(o.RelatedApps) > 0 {
		t.App, t.Domain = o.RelatedApps[0], o.RelatedApps[0]
	}
	j, err := judge.Compile(t.Judge)
	if err != nil {
		return schemas.Task{}, fmt.Errorf("simdesk: OSWorld task %s: evaluator: %w", o.ID, err)
	}
	t.Feasible = !j.Infeasible()
	if err := CheckTask(t); err != nil {
		return schemas.Task{}, err
	}
	return t, nil
}
