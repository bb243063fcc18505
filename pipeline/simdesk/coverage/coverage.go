// Package coverage says which tasks the environments can run: for each
// task, what keeps the embedded simulator from running it (setup steps,
// judge functions and getters, evaluator postconfig steps) and what keeps
// an OSWorld VM driven through cualake's client (rollout --env osworld)
// from running it, and per domain how many tasks each can run and which
// blockers stop the most. The rollout stage checks tasks with it before
// any episode; `cualake simdesk coverage` prints the report.
package coverage

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/pipeline/simdesk/osworld"
	"github.com/cualake/cualake/schemas"
)

// Task is what blocks one task.
type Task struct {
	TaskID string `json:"task_id"`
	Domain string `json:"domain"`
	// Sim lists why the embedded simulator cannot run the task ("setup:
	// download", "judge: metric compare_table"); empty when it can.
	Sim []string `json:"sim_blockers,omitempty"`
	// VM lists why an OSWorld VM driven by rollout --env osworld cannot:
	// judge functions cualake does not implement, getters that need a
	// simulator, setup steps its client does not send.
	VM []string `json:"vm_blockers,omitempty"`
	// Details holds the errors behind the blockers, in full.
	Details []string `json:"details,omitempty"`
}

// OnSim reports whether the simulator can run the task.
func (t Task) OnSim() bool { return len(t.Sim) == 0 }

// OnVM reports whether rollout --env osworld can run it on a VM.
func (t Task) OnVM() bool { return len(t.VM) == 0 }

func (t *Task) add(list *[]string, key string, err error) {
	for _, k := range *list {
		if k == key {
			return
		}
	}
	*list = append(*list, key)
	if err != nil {
		t.Details = append(t.Details, key+": "+err.Error())
	}
}

// Check finds what blocks a task. Setup and postconfig steps are checked
// statically; a task with no static blocker is also reset on a fresh
// simulator and judged untouched, so that what fails only when it runs
// (a file a step opens that no step made) counts too.
func Check(t schemas.Task) Task {
	out := Task{TaskID: t.TaskID, Domain: t.Domain}
	if out.Domain == "" {
		out.Domain = t.App
	}
	if app := strings.ToLower(t.App); app != "" && !simApps[app] {
		out.add(&out.Sim, "app "+app+" (the simulator has no such app)", fmt.Errorf("task app %q: the simulator's apps stand in for %s", t.App, strings.Join(simAppNames(), ", ")))
	}
	steps, err := simdesk.ParseSetup(t.Setup)
	if err != nil {
		out.add(&out.Sim, "setup (not a list of steps)", err)
		out.add(&out.VM, "setup (not a list of steps)", nil)
	}
	checkSteps(&out, "setup", steps)
	j, err := judge.Compile(t.Judge)
	if err != nil {
		for _, key := range judgeBlockers(t.Judge, err) {
			out.add(&out.Sim, key, err)
			out.add(&out.VM, key, nil)
		}
	} else {
		pc, err := simdesk.ParseSetup(j.Postconfig)
		if err != nil {
			out.add(&out.Sim, "postconfig (not a list of steps)", err)
			out.add(&out.VM, "postconfig (not a list of steps)", nil)
		}
		checkSteps(&out, "postconfig", pc)
		for _, c := range j.Criteria {
			for _, g := range []*judge.Getter{c.Result, c.Expected} {
				if g != nil && !osworld.VMGetter(g.Type) {
					out.add(&out.VM, "judge: getter "+g.Type+" (needs a simulator)", nil)
				}
			}
		}
		if err := simdesk.CheckTask(withFeasible(t, j)); err != nil && out.OnSim() {
			out.add(&out.Sim, "task (simulator check)", err)
		}
	}
	if out.OnSim() {
		if err := dryRun(t); err != nil {
			out.add(&out.Sim, "setup or judge fails when run", err)
		}
	}
	return out
}

// simApps are the task apps (simulator app ids, and OSWorld's domain and
// related_apps names) the simulator stands in for: a task about Chrome or
// GIMP is not one it can pose, even when its setup and judge run.
var simApps = map[string]bool{"files": true, "nautilus": true, "editor": true, "gedit": true, "sheet": true,
	"libreoffice_calc": true, "libreoffice calc": true, "calc": true, "settings": true, "os": true, "mail": true, "thunderbird": true}

func simAppNames() []string {
	out := make([]string, 0, len(simApps))
	for k := range simApps {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// withFeasible takes the task's feasibility from its judge, as importers
// do, so CheckTask judges the rest.
func withFeasible(t schemas.Task, j *judge.Judge) schemas.Task {
	t.Feasible = !j.Infeasible()
	return t
}

func checkSteps(out *Task, where string, steps []simdesk.SetupStep) {
	for i, st := range steps {
		if key, err := simdesk.StepBlocker(st); key != "" {
			out.add(&out.Sim, where+": "+key, fmt.Errorf("%s[%d]: %w", where, i, err))
		}
		if err := osworld.CheckVMSetup(simdesk.BuildSetup(st)); err != nil {
			out.add(&out.VM, where+": "+st.Type, nil)
		}
	}
}

// judgeBlockers names what in a judge spec cualake's judges lack: unknown
// metrics and getters, else the compile error.
func judgeBlockers(spec string, err error) []string {
	var raw struct {
		Func     json.RawMessage `json:"func"`
		Result   json.RawMessage `json:"result"`
		Expected json.RawMessage `json:"expected"`
	}
	if json.Unmarshal([]byte(spec), &raw) != nil {
		return []string{"judge (not JSON)"}
	}
	var keys []string
	var funcs []string
	if json.Unmarshal(raw.Func, &funcs) != nil {
		var f string
		if json.Unmarshal(raw.Func, &f) == nil {
			funcs = []string{f}
		}
	}
	for _, f := range funcs {
		if !judge.HasMetric(f) {
			keys = append(keys, "judge: metric "+f)
		}
	}
	for _, side := range []json.RawMessage{raw.Result, raw.Expected} {
		var list []json.RawMessage
		if json.Unmarshal(side, &list) != nil {
			list = []json.RawMessage{side}
		}
		for _, g := range list {
			var typed struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(g, &typed) == nil && typed.Type != "" && !judge.HasGetter(typed.Type) {
				keys = append(keys, "judge: getter "+typed.Type)
			}
		}
	}
	if len(keys) == 0 {
		msg := err.Error()
		if errors.Is(err, judge.ErrSpec) {
			msg = strings.TrimPrefix(msg, judge.ErrSpec.Error()+": ")
		}
		if i := strings.Index(msg, ": "); i > 0 {
			msg = msg[:i] // the field
		}
		keys = append(keys, "judge: "+msg)
	}
	return keys
}

// dryRun resets a fresh simulator with the task and judges the untouched
// state.
func dryRun(t schemas.Task) error {
	sim, err := simdesk.NewSim(simdesk.Options{TreeOnly: true})
	if err != nil {
		return err
	}
	if _, err := sim.Reset(t, 0); err != nil {
		return err
	}
	_, _, err = sim.Evaluate()
	return err
}

// Count is how many tasks one blocker stops.
type Count struct {
	Blocker string `json:"blocker"`
	Tasks   int    `json:"tasks"`
}

// Domain sums the tasks of one domain.
type Domain struct {
	Domain      string  `json:"domain"`
	Tasks       int     `json:"tasks"`
	OnSim       int     `json:"sim"` // the simulator runs them
	OnVM        int     `json:"vm"`  // rollout --env osworld runs them on a VM
	SimBlockers []Count `json:"sim_blockers,omitempty"`
	VMBlockers  []Count `json:"vm_blockers,omitempty"`
}

// Report sums tasks per domain, domains sorted by name, with the total.
type Report struct {
	Domains []Domain `json:"domains"`
	Total   Domain   `json:"total"`
}

// totalKey keys the totals apart from any domain's name.
const totalKey = "\x00total"

// Summarize builds the report of checked tasks.
func Summarize(tasks []Task) Report {
	by := map[string]*Domain{}
	simCounts := map[string]map[string]int{}
	vmCounts := map[string]map[string]int{}
	total := &Domain{Domain: "total"}
	for _, t := range tasks {
		name := t.Domain
		if name == "" {
			name = "(none)"
		}
		d := by[name]
		if d == nil {
			d = &Domain{Domain: name}
			by[name] = d
			simCounts[name], vmCounts[name] = map[string]int{}, map[string]int{}
		}
		for _, x := range []*Domain{d, total} {
			x.Tasks++
			if t.OnSim() {
				x.OnSim++
			}
			if t.OnVM() {
				x.OnVM++
			}
		}
		for _, key := range []string{name, totalKey} {
			if simCounts[key] == nil {
				simCounts[key], vmCounts[key] = map[string]int{}, map[string]int{}
			}
			for _, b := range t.Sim {
				simCounts[key][b]++
			}
			for _, b := range t.VM {
				vmCounts[key][b]++
			}
		}
	}
	var r Report
	for _, d := range by {
		d.SimBlockers, d.VMBlockers = sorted(simCounts[d.Domain]), sorted(vmCounts[d.Domain])
		r.Domains = append(r.Domains, *d)
	}
	sort.Slice(r.Domains, func(i, j int) bool { return r.Domains[i].Domain < r.Domains[j].Domain })
	total.SimBlockers, total.VMBlockers = sorted(simCounts[totalKey]), sorted(vmCounts[totalKey])
	r.Total = *total
	return r
}

// sorted lists counts, most tasks first, then by name.
func sorted(m map[string]int) []Count {
	out := make([]Count, 0, len(m))
	for k, v := range m {
		out = append(out, Count{Blocker: k, Tasks: v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Tasks != out[j].Tasks {
			return out[i].Tasks > out[j].Tasks
		}
		return out[i].Blocker < out[j].Blocker
	})
	return out
}
