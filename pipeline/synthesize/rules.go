package synthesize

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/pipeline/simdesk/sheet"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

// allowedSetup are the declarative setup step types a synthesized task may
// use. Command steps (execute, command, launch) run the simulator's shell;
// a generated setup never gets to run commands.
var allowedSetup = map[string]bool{"create_file": true, "create_folder": true, "delete": true, "open_file": true, "open": true,
	"open_app": true, "set_cell": true, "set_setting": true, "add_mail": true, "type_text": true, "set_clipboard": true, "sleep": true}

// Issue codes of the rule validator.
const (
	codeStructure     = "structure"
	codeApp           = "app"
	codeUnknownGetter = "unknown_getter"
	codeUnknownMetric = "unknown_metric"
	codeBadArgument   = "bad_argument"
	codeCommandSetup  = "command_setup"
	codeSetup         = "setup"
	codeMissingInput  = "missing_input"
	codeVacuous       = "vacuous"
	codeCellOutside   = "cell_outside"
	codeSetting       = "setting"
)

var specErrRe = regexp.MustCompile(`^invalid judge spec: ([^:]+): (.*)$`)
var fieldIndexRe = regexp.MustCompile(`\[(\d+)\]`)

// compileIssue turns a judge compile error into a structured issue.
func compileIssue(err error) Issue {
	is := Issue{Role: RoleRules, Code: codeBadArgument, Criterion: 0, Detail: "judge: " + err.Error()}
	m := specErrRe.FindStringSubmatch(err.Error())
	if m == nil {
		is.Code = codeStructure
		return is
	}
	is.Field = m[1]
	if k := fieldIndexRe.FindStringSubmatch(m[1]); k != nil {
		is.Criterion, _ = strconv.Atoi(k[1])
	}
	switch {
	case strings.Contains(m[2], "unknown getter"):
		is.Code = codeUnknownGetter
	case strings.Contains(m[2], "unknown metric"):
		is.Code = codeUnknownMetric
	}
	if q := quotedRe.FindStringSubmatch(m[2]); q != nil {
		is.Value = q[1]
	}
	return is
}

// validateRules is the rule validator: static checks of a candidate, no
// agent acting. It applies the setup on a scratch desktop (to know which
// paths and cells exist before the agent acts) but never evaluates the
// judge. An empty result means the candidate passes.
func validateRules(d *simdesk.Desktop, c *Candidate) []Issue {
	var out []Issue
	add := func(code string, crit int, field, path, value, format string, a ...any) {
		out = append(out, Issue{Role: RoleRules, Code: code, Criterion: crit, Field: field, Path: path, Value: value, Detail: fmt.Sprintf(format, a...)})
	}
	if c.Raw != "" {
		add(codeStructure, -1, "", "", "", "the reply is not a task (%s)", clip(c.Raw, 120))
		return out
	}
	for _, f := range c.Extra {
		add(codeStructure, -1, f, "", "", "unexpected field %q: a task is an instruction, a setup and a declarative judge; generated code is never run", f)
	}
	if len(strings.Fields(c.Instruction)) == 0 {
		add(codeStructure, -1, "instruction", "", "", "empty instruction")
	}
	if !slices.Contains(simdesk.Apps(), c.App) {
		add(codeApp, -1, "app", "", c.App, "app %q has no live environment here (the checker runs the simulator: %s)", c.App, strings.Join(simdesk.Apps(), ", "))
	}
	jtext := strings.TrimSpace(c.Judge)
	var j *judge.Judge
	if !strings.HasPrefix(jtext, "{") {
		add(codeStructure, -1, "judge", "", "", "the judge must be a declarative JSON evaluator spec, not %s; generated code is never run", describe(jtext))
	} else if jj, err := judge.Compile(jtext); err != nil {
		out = append(out, compileIssue(err))
	} else {
		j = jj
	}
	stext := strings.TrimSpace(c.Setup)
	setupOK := false
	if stext != "" && !strings.HasPrefix(stext, "[") {
		add(codeStructure, -1, "setup", "", "", "the setup must be a JSON list of declarative steps, not %s", describe(stext))
	} else if steps, err := simdesk.ParseSetup(stext); err != nil {
		add(codeSetup, -1, "setup", "", "", "%v", err)
	} else {
		setupOK = true
		for i, st := range steps {
			if !allowedSetup[st.Type] {
				setupOK = false
				add(codeCommandSetup, -1, fmt.Sprintf("setup[%d]", i), "", st.Type, "setup[%d] is a %q step: synthesized setups are declarative (no commands)", i, st.Type)
			}
		}
		if err := simdesk.CheckSetup(stext); err != nil && setupOK {
			setupOK = false
			add(codeSetup, -1, "setup", "", "", "%v", err)
		}
	}
	if j == nil || !setupOK || len(out) > 0 {
		return out
	}
	d.Reset(0)
	if err := d.ApplySetup(stext); err != nil {
		add(codeSetup, -1, "setup", "", "", "%v", err)
		return out
	}
	out = append(out, checkPaths(d, c, j)...)
	out = append(out, checkCells(d, j)...)
	out = append(out, checkSettings(j)...)
	if len(out) == 0 {
		// The simulator's own static check (apps and settings a judge names).
		if err := simdesk.CheckTask(c.task("candidate")); err != nil {
			add(codeBadArgument, -1, "", "", "", "%v", err)
		}
	}
	return out
}

func parentDir(p string) string {
	if i := strings.LastIndex(p, "/"); i > 0 {
		return p[:i]
	}
	return p
}

func describe(s string) string {
	if s == "" {
		return "nothing"
	}
	if strings.HasPrefix(s, "\"") {
		return "a string"
	}
	return "text starting " + strconv.Quote(clip(s, 30))
}

// outputCues are words before a path that say the task creates it.
var outputCues = []string{"create", "save it as", "save as", "write", "called", "named", "new file", "new text file", "copy of", "make"}

// checkPaths: every path the instruction presents as existing must exist
// after the setup, and an "is absent" criterion on a path the setup never
// creates checks nothing.
func checkPaths(d *simdesk.Desktop, c *Candidate, j *judge.Judge) []Issue {
	var out []Issue
	exists := func(p string) bool { ok, _, _ := d.Stat(p); return ok }
	required := map[string]bool{} // paths the judge wants present
	for _, cr := range j.Criteria {
		if cr.Result != nil && cr.Result.Path != "" && cr.Func != "is_false" {
			required[cr.Result.Path] = true
		}
	}
	for i, cr := range j.Criteria {
		g := cr.Result
		if cr.Func == "is_false" && g != nil && (g.Type == "file_exists" || g.Type == "folder_exists") && !exists(g.Path) && !required[g.Path] {
			out = append(out, Issue{Role: RoleRules, Code: codeVacuous, Criterion: i, Path: g.Path,
				Detail: fmt.Sprintf("criterion %d checks that %s is absent, but the setup never creates it", i, vfs.Short(g.Path))})
		}
		if g != nil && g.Type == "sent_mail" && g.Field == "attachments" && cr.Expected != nil && cr.Expected.Rules != nil {
			items, _ := cr.Expected.Rules.Expected.([]any)
			for _, it := range items {
				s, _ := it.(string)
				p, err := vfs.Clean(s)
				if err == nil && !exists(p) && !required[p] {
					out = append(out, Issue{Role: RoleRules, Code: codeMissingInput, Criterion: i, Path: p,
						Detail: fmt.Sprintf("criterion %d expects the attachment %s, which the setup does not create", i, vfs.Short(p))})
				}
			}
		}
	}
	// A file judged in two places with the same name and content is copied
	// or moved: one of the two must exist before the agent acts.
	for i, a := range j.Criteria {
		for k, b := range j.Criteria {
			if k <= i || a.Result == nil || b.Result == nil || a.Result.Type != "file_content" || b.Result.Type != "file_content" ||
				a.Func != "exact_match" || b.Func != "exact_match" || a.Expected == nil || b.Expected == nil ||
				a.Expected.Rules == nil || b.Expected.Rules == nil || lastElem(a.Result.Path) != lastElem(b.Result.Path) ||
				judge.Text(a.Expected.Rules.Expected) != judge.Text(b.Expected.Rules.Expected) {
				continue
			}
			if exists(a.Result.Path) || exists(b.Result.Path) {
				continue
			}
			src := b.Result.Path
			if strings.Contains(strings.ToLower(c.Instruction), "from "+strings.ToLower(lastElem(parentDir(a.Result.Path)))) {
				src = a.Result.Path
			}
			out = append(out, Issue{Role: RoleRules, Code: codeMissingInput, Criterion: k, Path: src,
				Detail: fmt.Sprintf("criteria %d and %d copy %s, but the setup creates neither copy", i, k, lastElem(src))})
		}
	}
	seen := map[string]bool{}
	for _, ip := range instructionPaths(c.Instruction) {
		p, err := vfs.Clean(ip.path)
		if err != nil || exists(p) || seen[p] {
			continue
		}
		seen[p] = true
		start := max(strings.LastIndexAny(c.Instruction[:ip.at], "\n;!?"), strings.LastIndex(c.Instruction[:ip.at], ". "), 0)
		before := strings.ToLower(c.Instruction[start:ip.at])
		if slices.ContainsFunc(outputCues, func(cue string) bool { return strings.Contains(before, cue) }) {
			continue
		}
		out = append(out, Issue{Role: RoleRules, Code: codeMissingInput, Criterion: -1, Path: p,
			Detail: fmt.Sprintf("the instruction refers to %s as an existing file, but the setup does not create it", ip.path)})
	}
	return out
}

// checkCells: a cell of a sheet the setup creates must be in its table or
// right next to it (a totals row or column).
func checkCells(d *simdesk.Desktop, j *judge.Judge) []Issue {
	var out []Issue
	for i, cr := range j.Criteria {
		g := cr.Result
		if g == nil || g.Cell == "" {
			continue
		}
		text, err := d.ReadFile(g.Path)
		if err != nil {
			continue // a sheet the agent creates may use any cell
		}
		sh, err := sheet.ParseCSV(text)
		if err != nil {
			continue
		}
		r, col, _ := sheet.ParseRef(g.Cell)
		if r > sh.Rows() || col > sh.Cols() {
			out = append(out, Issue{Role: RoleRules, Code: codeCellOutside, Criterion: i, Path: g.Path, Value: g.Cell,
				Detail: fmt.Sprintf("criterion %d reads cell %s, outside the %dx%d table the setup creates in %s", i, g.Cell, sh.Rows(), sh.Cols(), vfs.Short(g.Path))})
		}
	}
	return out
}

// checkSettings: known keys, and expected values a setting can hold.
func checkSettings(j *judge.Judge) []Issue {
	var out []Issue
	for i, cr := range j.Criteria {
		g := cr.Result
		if g == nil || g.Type != "setting" {
			continue
		}
		def := simdesk.SettingByKey(g.Key)
		if def == nil {
			out = append(out, Issue{Role: RoleRules, Code: codeSetting, Criterion: i, Field: "key", Value: g.Key,
				Detail: fmt.Sprintf("criterion %d reads the unknown setting %q", i, g.Key)})
			continue
		}
		if cr.Expected == nil || cr.Expected.Rules == nil || cr.Expected.Rules.Expected == nil {
			if def.Kind != simdesk.KindToggle && (cr.Func == "is_true" || cr.Func == "is_false") {
				out = append(out, Issue{Role: RoleRules, Code: codeSetting, Criterion: i, Field: "func", Value: cr.Func,
					Detail: fmt.Sprintf("criterion %d uses %s on %s, which is a %s, not a switch", i, cr.Func, g.Key, def.Kind)})
			}
			continue
		}
		v := judge.Text(cr.Expected.Rules.Expected)
		if msg := settingProblem(def, v); msg != "" {
			out = append(out, Issue{Role: RoleRules, Code: codeSetting, Criterion: i, Field: "expected", Value: v,
				Detail: fmt.Sprintf("criterion %d expects %s = %q: %s", i, g.Key, v, msg)})
		}
	}
	return out
}

func settingProblem(def *simdesk.SettingDef, v string) string {
	switch def.Kind {
	case simdesk.KindToggle:
		if v != "true" && v != "false" {
			return "a switch is true or false"
		}
	case simdesk.KindChoice:
		if !slices.ContainsFunc(def.Options, func(o string) bool { return strings.EqualFold(o, v) }) {
			return "not one of " + strings.Join(def.Options, ", ")
		}
	case simdesk.KindSlider:
		if n, ok := sheet.ParseNumber(v); !ok || n < 0 || n > 100 {
			return "a slider goes from 0 to 100"
		}
	default:
		if def.Numeric {
			if _, err := strconv.Atoi(v); err != nil {
				return "a whole number"
			}
		}
	}
	return ""
}
