package simdesk

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/pipeline/simdesk/sheet"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
	"github.com/cualake/cualake/schemas"
)

// ErrNoPlan marks a judge the planner cannot plan for (a getter or metric
// combination it has no strategy for); the task may still be valid.
var ErrNoPlan = errors.New("no oracle plan")

// MaxOracleSteps bounds an oracle episode; reaching it is a planner bug.
const MaxOracleSteps = 300

// Oracle returns a goal-directed policy that solves a task on the
// simulator: it reads the task's judge, turns each criterion into a goal
// over simulator state (a file with some content, a cell with some value, a
// setting, a sent mail, ...) and, step by step, looks at the current state
// and view tree to emit the next GUI action toward the first unmet goal,
// like a user who knows the apps. It answers fail for infeasible tasks and
// done once every goal holds. Because it works from the judge, synthesized
// tasks get an oracle too; judges it cannot plan for are ErrNoPlan.
//
// The policy needs Obs.Desktop (the in-process simulator).
func Oracle(task schemas.Task) (Policy, error) {
	j, err := judge.Compile(task.Judge)
	if err != nil {
		return nil, fmt.Errorf("simdesk: oracle for %s: %w", task.TaskID, err)
	}
	specs, err := classify(j)
	if err != nil {
		return nil, fmt.Errorf("simdesk: oracle for %s: %w", task.TaskID, err)
	}
	return &planner{task: task.TaskID, app: task.App, j: j, specs: specs}, nil
}

// critSpec is one criterion as a planning target.
type critSpec struct {
	i     int // criterion index
	kind  string
	g     *judge.Getter
	want  any
	incl  []string
	excl  []string
	isRaw bool
}

// classify maps each criterion to a planning target.
func classify(j *judge.Judge) ([]critSpec, error) {
	if j.Infeasible() {
		return []critSpec{{kind: "infeasible"}}, nil
	}
	var out []critSpec
	for i, c := range j.Criteria {
		s, err := classifyOne(i, c)
		if err != nil {
			if j.Conj == "or" && i+1 < len(j.Criteria) {
				continue // any one criterion suffices
			}
			return nil, err
		}
		out = append(out, s)
		if j.Conj == "or" {
			break
		}
	}
	return out, nil
}

func classifyOne(i int, c judge.Criterion) (critSpec, error) {
	s := critSpec{i: i, g: c.Result}
	if c.Expected != nil {
		if c.Expected.Type != "rule" {
			return s, fmt.Errorf("%w: criterion %d compares two getters", ErrNoPlan, i)
		}
		s.want = c.Expected.Rules.Expected
		s.incl, s.excl = c.Expected.Rules.Include, c.Expected.Rules.Exclude
	}
	if c.Func == "match_in_list" {
		l, _ := s.want.([]any)
		if len(l) == 0 {
			return s, fmt.Errorf("%w: criterion %d: empty list", ErrNoPlan, i)
		}
		s.want = l[0]
	}
	unsupported := func() (critSpec, error) {
		return s, fmt.Errorf("%w: criterion %d: %s on %s", ErrNoPlan, i, c.Func, c.Result.Type)
	}
	valueFuncs := []string{"exact_match", "fuzzy_match", "compare_number", "match_in_list"}
	switch c.Result.Type {
	case "file_content":
		if !slices.Contains(valueFuncs, c.Func) && c.Func != "check_include_exclude" {
			return unsupported()
		}
		s.kind = "text"
	case "file_exists", "folder_exists":
		switch c.Func {
		case "is_true":
			s.kind = "exists"
		case "is_false":
			s.kind = "absent"
		default:
			return unsupported()
		}
	case "sheet_cell", "sheet_cell_raw":
		if !slices.Contains(valueFuncs, c.Func) {
			return unsupported()
		}
		s.kind, s.isRaw = "cell", c.Result.Type == "sheet_cell_raw"
	case "sheet_table":
		if c.Func != "compare_table" {
			return unsupported()
		}
		s.kind = "table"
	case "setting":
		switch c.Func {
		case "is_true":
			s.want = true
		case "is_false":
			s.want = false
		default:
			if !slices.Contains(valueFuncs, c.Func) {
				return unsupported()
			}
		}
		s.kind = "setting"
	case "sent_mail":
		if c.Result.Index != nil && *c.Result.Index != -1 {
			return unsupported()
		}
		switch {
		case c.Result.Field == "attachments" && c.Func == "compare_list":
		case c.Result.Field != "attachments" && (slices.Contains(valueFuncs, c.Func) || c.Func == "check_include_exclude"):
		default:
			return unsupported()
		}
		s.kind = "mail"
	case "editor_dirty":
		if c.Func != "is_false" {
			return unsupported()
		}
		s.kind = "saved"
	case "editor_text":
		if !slices.Contains(valueFuncs, c.Func) {
			return unsupported()
		}
		s.kind = "editor_text"
	case "active_window":
		if c.Func != "exact_match" {
			return unsupported()
		}
		s.kind = "active"
	case "window_open":
		switch c.Func {
		case "is_true":
			s.kind = "open"
		case "is_false":
			s.kind = "closed"
		default:
			return unsupported()
		}
	default:
		return unsupported()
	}
	return s, nil
}

// goal is one thing the planner makes true, in order.
type goal interface {
	done(p *planner, d *Desktop) bool
	next(p *planner, d *Desktop) (schemas.Action, error)
}

// planner is the oracle policy.
type planner struct {
	task  string
	app   string // the task's app, looked at before giving up on infeasible tasks
	j     *judge.Judge
	specs []critSpec
	goals []goal
	ready bool
	steps int
}

// holds reports whether criteria hold on the desktop.
func (p *planner) holds(d *Desktop, idx ...int) bool {
	for _, i := range idx {
		r, err := p.j.EvaluateCriterion(i, d)
		if err != nil || r.Score != 1 {
			return false
		}
	}
	return true
}

// Next implements Policy.
func (p *planner) Next(obs Obs) (schemas.Action, error) {
	d := obs.Desktop
	if d == nil {
		return schemas.Action{}, fmt.Errorf("simdesk: the oracle needs the in-process simulator (Obs.Desktop)")
	}
	p.steps++
	if p.steps > MaxOracleSteps {
		return schemas.Action{}, fmt.Errorf("simdesk: oracle for %s: no progress after %d steps", p.task, MaxOracleSteps)
	}
	if !p.ready {
		goals, err := p.plan(d)
		if err != nil {
			return schemas.Action{}, fmt.Errorf("simdesk: oracle for %s: %w", p.task, err)
		}
		p.goals, p.ready = goals, true
	}
	for _, g := range p.goals {
		if g.done(p, d) {
			continue
		}
		a, err := g.next(p, d)
		if err != nil {
			return schemas.Action{}, fmt.Errorf("simdesk: oracle for %s: %w", p.task, err)
		}
		return a, nil
	}
	return action.Simple(action.Done), nil
}

// plan turns the criteria into ordered goals against the state after setup.
func (p *planner) plan(d *Desktop) ([]goal, error) {
	var (
		folders, creates, deletes, texts, sheets, settings, others []goal
		mail                                                       *mailGoal
		saved                                                      []int
	)
	exists := func(path string) bool { _, ok := d.S.FS.Stat(path); return ok }
	needFolder := map[string]bool{}
	var folderOrder []string
	addFolder := func(dir string) {
		for dir != "/" && dir != vfs.Home && !needFolder[dir] {
			needFolder[dir] = true
			folderOrder = append(folderOrder, dir)
			dir = path.Dir(dir)
		}
	}
	type want struct {
		path string
		dir  bool
		crit int
	}
	var absent, present []want
	cellGoals := map[string]*cellsGoal{}
	var cellOrder []string
	cellsFor := func(path string) *cellsGoal {
		if g, ok := cellGoals[path]; ok {
			return g
		}
		g := &cellsGoal{path: path}
		cellGoals[path] = g
		cellOrder = append(cellOrder, path)
		return g
	}
	for _, s := range p.specs {
		switch s.kind {
		case "infeasible":
			return []goal{infeasibleGoal{app: p.app}}, nil
		case "exists":
			present = append(present, want{s.g.Path, s.g.Type == "folder_exists", s.i})
		case "absent":
			absent = append(absent, want{s.g.Path, s.g.Type == "folder_exists", s.i})
		case "text":
			addFolder(path.Dir(s.g.Path))
			cur, _ := d.S.FS.Read(s.g.Path)
			exact := s.incl == nil && s.excl == nil
			// One goal per file: an exact text wins over include rules.
			if i := slices.IndexFunc(texts, func(g goal) bool { return g.(*textGoal).path == s.g.Path }); i >= 0 {
				tg := texts[i].(*textGoal)
				tg.crit = append(tg.crit, s.i)
				if exact {
					tg.target = textTarget(cur, s)
				}
				continue
			}
			texts = append(texts, &textGoal{path: s.g.Path, crit: []int{s.i}, target: textTarget(cur, s)})
		case "cell":
			addFolder(path.Dir(s.g.Path))
			g := cellsFor(s.g.Path)
			r, c, _ := sheet.ParseRef(s.g.Cell)
			g.add(cellTarget{row: r, col: c, raw: judge.Text(s.want), raw0: s.isRaw}, s.i)
		case "table":
			addFolder(path.Dir(s.g.Path))
			rows, ok := tableOf(s.want)
			if !ok {
				return nil, fmt.Errorf("%w: criterion %d: expected table", ErrNoPlan, s.i)
			}
			if g := planSort(d, s.g.Path, rows, s.i); g != nil {
				sheets = append(sheets, g)
				continue
			}
			cg := cellsFor(s.g.Path)
			cg.crit = append(cg.crit, s.i)
			cg.table = rows
		case "setting":
			def := settingByKey(s.g.Key)
			if def == nil {
				return nil, fmt.Errorf("%w: criterion %d: unknown setting %q", ErrNoPlan, s.i, s.g.Key)
			}
			v, msg := checkSetting(def, judge.Text(s.want))
			if msg != "" {
				return nil, fmt.Errorf("%w: criterion %d: %s", ErrNoPlan, s.i, msg)
			}
			settings = append(settings, &settingGoal{key: s.g.Key, value: v, crit: s.i})
		case "mail":
			if mail == nil {
				mail = &mailGoal{}
			}
			if err := mail.add(s); err != nil {
				return nil, err
			}
		case "saved":
			saved = append(saved, s.i)
		case "editor_text":
			others = append(others, &textGoal{editorOnly: true, crit: []int{s.i}, target: judge.Text(s.want)})
		case "active":
			others = append(others, &windowGoal{app: judge.Text(s.want), active: true, crit: s.i})
		case "open", "closed":
			others = append(others, &windowGoal{app: s.g.App, open: s.kind == "open", crit: s.i})
		}
	}
	// A path that must vanish while another must appear is a move or a
	// rename when the two match by name, by folder or by kind. They are
	// taken in path order, which is the file manager's listing order within
	// a folder: the plan moves the top file first, as a person does, so that
	// its steps do not depend on the order the criteria name the files in
	// ("the first .txt file" each time, featurize's "list_item like wK").
	slices.SortStableFunc(absent, func(a, b want) int { return strings.Compare(a.path, b.path) })
	used := make([]bool, len(present))
	for _, a := range absent {
		if !exists(a.path) {
			continue
		}
		best := -1
		for i, pr := range present {
			if used[i] || exists(pr.path) || pr.dir != a.dir {
				continue
			}
			if path.Base(pr.path) == path.Base(a.path) || path.Dir(pr.path) == path.Dir(a.path) {
				best = i
				break
			}
			if best < 0 {
				best = i
			}
		}
		if best >= 0 {
			used[best] = true
			addFolder(path.Dir(present[best].path))
			creates = append(creates, &relocateGoal{src: a.path, dst: present[best].path, crit: []int{a.crit, present[best].crit}})
			continue
		}
		deletes = append(deletes, &deleteGoal{path: a.path, crit: a.crit})
	}
	for i, pr := range present {
		if used[i] {
			continue
		}
		if pr.dir {
			addFolder(pr.path)
			continue
		}
		addFolder(path.Dir(pr.path))
		// A file whose content is also judged is created by saving it.
		if !slices.ContainsFunc(texts, func(g goal) bool { return g.(*textGoal).path == pr.path }) && cellGoals[pr.path] == nil {
			creates = append(creates, &createGoal{path: pr.path, crit: pr.crit})
		}
	}
	for _, dir := range slices.Backward(folderOrder) {
		folders = append(folders, &createGoal{path: dir, dir: true})
	}
	for _, pth := range cellOrder {
		g := cellGoals[pth]
		if err := g.finish(d); err != nil {
			return nil, err
		}
		sheets = append(sheets, g)
	}
	goals := append(append(append(folders, creates...), texts...), sheets...)
	goals = append(append(goals, deletes...), settings...)
	if mail != nil {
		goals = append(goals, mail)
	}
	if len(saved) > 0 {
		goals = append(goals, &saveGoal{crit: saved})
	}
	return append(goals, others...), nil
}

// textTarget is the text a file must end up with.
func textTarget(cur string, s critSpec) string {
	if s.incl == nil && s.excl == nil {
		return judge.Text(s.want)
	}
	t := cur
	for _, e := range s.excl {
		t = strings.ReplaceAll(t, e, "")
	}
	for _, in := range s.incl {
		if !strings.Contains(t, in) {
			if t != "" && !strings.HasSuffix(t, "\n") {
				t += "\n"
			}
			t += in + "\n"
		}
	}
	return t
}

func tableOf(v any) ([][]string, bool) {
	rows, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([][]string, len(rows))
	for i, r := range rows {
		cells, ok := r.([]any)
		if !ok {
			return nil, false
		}
		for _, c := range cells {
			out[i] = append(out[i], judge.Text(c))
		}
	}
	return out, true
}

// infeasibleGoal looks at the task's app (so demonstrations show the agent
// checking before it gives up), then answers fail.
type infeasibleGoal struct{ app string }

func (g infeasibleGoal) done(p *planner, d *Desktop) bool { return d.S.Terminal == "fail" }

func (g infeasibleGoal) next(p *planner, d *Desktop) (schemas.Action, error) {
	if appByID(g.app) != nil && d.S.Focused() != g.app {
		return clickID(d, action.Click, "dock/"+g.app)
	}
	return action.Simple(action.Fail), nil
}
