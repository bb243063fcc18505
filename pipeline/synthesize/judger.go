package synthesize

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/pipeline/simdesk/sheet"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

// Issue codes of the judger.
const (
	codeMeaningless = "meaningless"
	codeVague       = "vague"
	codeUngrounded  = "ungrounded"
	codeUnstated    = "unstated"
	codePolarity    = "polarity"
	codeUnreadable  = "unreadable"
)

// vaguePhrases make an instruction ambiguous: the judge then checks one of
// several outcomes the wording allows.
var vaguePhrases = []string{"something", "a suitable", "an appropriate", "appropriate", "whatever", "as needed", "as you see fit",
	"a better", "somewhere", "a few", "a sensible", "a different option", "a comfortable", "some ", "another item", "etc",
	"no longer need", "one of the", "a new name"}

var vagueRe = regexp.MustCompile(`(?i)\b(` + strings.Join(func() []string {
	var out []string
	for _, p := range vaguePhrases {
		out = append(out, regexp.QuoteMeta(strings.TrimSpace(p)))
	}
	return out
}(), "|") + `)\b`)

// reviewBuiltin is the builtin judger: a static semantic review of
// instruction and judge together. The instruction must be specific (no
// vague wording), and the judge must check what the instruction says:
// every path and expected value it names must be stated in the instruction
// or come from the setup, a number computed by a formula must be what the
// formula gives on the setup's sheet, and a switch must be judged in the
// direction the instruction asks.
func reviewBuiltin(c *Candidate) []Issue {
	var out []Issue
	add := func(code string, crit int, value, suggest, format string, a ...any) {
		is := Issue{Role: RoleJudger, Code: code, Criterion: crit, Value: value, Detail: fmt.Sprintf(format, a...)}
		if suggest != "" {
			is.Field = "suggest:" + suggest
		}
		out = append(out, is)
	}
	ins := c.Instruction
	if len(strings.Fields(ins)) < 4 {
		add(codeMeaningless, -1, "", "", "the instruction is too short to say what to do")
	}
	if m := vagueRe.FindString(ins); m != "" {
		add(codeVague, -1, m, "", "the instruction is ambiguous (%q): several outcomes would fit it, but the judge accepts one", m)
	}
	crits, _, err := looseCriteria(c.Judge)
	if err != nil {
		add(codeUnreadable, -1, "", "", "the judge cannot be read as an evaluator spec: %v", err)
		return out
	}
	corpus := ins + "\n" + setupText(c.Setup)
	files := setupFiles(c.Setup)
	g := newGrounding(corpus)
	g.derived = derivedNumbers(ins, files)
	for i, cr := range crits {
		res := cr.Result
		if res != nil && res.Path != "" && !g.path(res.Path) {
			add(codeUngrounded, i, res.Path, "", "criterion %d reads %s, which neither the instruction nor the setup mentions", i, res.Path)
		}
		if res != nil && res.Type == "setting" {
			out = append(out, reviewSetting(i, cr, ins)...)
		}
		if cr.Expected == nil || cr.Expected.Rules == nil {
			continue
		}
		rules := cr.Expected.Rules
		for _, s := range append(slices.Clone(rules.Include), rules.Exclude...) {
			if !g.text(s) {
				add(codeUngrounded, i, s, "", "criterion %d expects the text %q, which the instruction does not state", i, clip(s, 60))
			}
		}
		if rules.Expected == nil {
			continue
		}
		switch v := rules.Expected.(type) {
		case float64:
			if res != nil && res.Cell != "" {
				if want, f, ok := formulaValue(crits, res, files); ok {
					if math.Abs(want-v) > math.Max(cr.Options.Tolerance, 1e-6) {
						add(codeUngrounded, i, sheet.FormatNumber(v), sheet.FormatNumber(want),
							"criterion %d expects %s = %s, but the formula %s gives %s on the setup's sheet", i, res.Cell, sheet.FormatNumber(v), f, sheet.FormatNumber(want))
					}
					continue
				}
			}
			if !g.number(v) {
				add(codeUngrounded, i, sheet.FormatNumber(v), "", "criterion %d expects the number %s, which the instruction does not state", i, sheet.FormatNumber(v))
			}
		case string:
			s := strings.TrimPrefix(v, "Re: ")
			if strings.HasPrefix(s, "=") && res != nil && res.Cell != "" {
				if ok, why := formulaGrounded(s, ins, files[absPath(res.Path)]); !ok {
					add(codeUngrounded, i, v, "", "criterion %d expects the formula %s, but %s", i, v, why)
				}
				continue
			}
			if !g.text(s) {
				add(codeUngrounded, i, v, "", "criterion %d expects %q, which the instruction does not state", i, clip(v, 60))
			}
		case []any:
			for _, row := range v {
				cells, ok := row.([]any)
				if !ok {
					cells = []any{row}
				}
				for _, cell := range cells {
					s := judge.Text(cell)
					if strings.HasPrefix(s, "/") && g.path(s) {
						continue
					}
					if s != "" && !g.text(s) {
						add(codeUngrounded, i, s, "", "criterion %d expects %q in its table or list, which neither the instruction nor the setup states", i, clip(s, 60))
					}
				}
			}
		}
	}
	return out
}

// reviewSetting checks that the instruction names the setting and, for a
// switch, asks for the direction the judge checks.
func reviewSetting(i int, cr judge.Criterion, ins string) []Issue {
	def := simdesk.SettingByKey(cr.Result.Key)
	if def == nil {
		return nil // the rule validator's business
	}
	low := strings.ToLower(ins)
	label := strings.ToLower(def.Label)
	at := strings.Index(low, label)
	if at < 0 {
		return []Issue{{Role: RoleJudger, Code: codeUnstated, Criterion: i, Value: def.Label,
			Detail: fmt.Sprintf("criterion %d checks %q, which the instruction does not mention", i, def.Label)}}
	}
	if def.Kind != simdesk.KindToggle || (cr.Func != "is_true" && cr.Func != "is_false") {
		return nil
	}
	// The clause around the label says on or off.
	start := max(strings.LastIndexAny(low[:at], ";\n"), strings.LastIndex(low[:at], ". "), 0)
	end := len(low)
	if k := strings.IndexAny(low[at:], ";\n"); k >= 0 {
		end = at + k
	}
	clause := low[start:end]
	on := onRe.MatchString(clause)
	off := offRe.MatchString(clause)
	want := cr.Func == "is_true"
	switch {
	case on == off:
		return []Issue{{Role: RoleJudger, Code: codeUnstated, Criterion: i, Value: def.Label,
			Detail: fmt.Sprintf("the instruction does not say whether %q should be on or off", def.Label)}}
	case on != want:
		return []Issue{{Role: RoleJudger, Code: codePolarity, Criterion: i, Value: def.Label,
			Detail: fmt.Sprintf("the instruction turns %q %s, but criterion %d checks that it is %s", def.Label, map[bool]string{true: "on", false: "off"}[on], i, map[bool]string{true: "on", false: "off"}[want])}}
	}
	return nil
}

var (
	onRe  = regexp.MustCompile(`\b(turn on|switch on|enable|activate)\b|\bto on\b|["'] on\b|\bon\.?$`)
	offRe = regexp.MustCompile(`\b(turn off|switch off|disable|deactivate)\b|\bto off\b|["'] off\b|\boff\.?$`)
)

// formulaValue evaluates the formula another criterion expects in the same
// cell on the sheet the setup creates.
func formulaValue(crits []judge.Criterion, res *judge.Getter, files map[string]string) (float64, string, bool) {
	for _, o := range crits {
		if o.Result == nil || o.Result.Type != "sheet_cell_raw" || o.Result.Path != res.Path || !strings.EqualFold(o.Result.Cell, res.Cell) ||
			o.Expected == nil || o.Expected.Rules == nil {
			continue
		}
		f, ok := o.Expected.Rules.Expected.(string)
		if !ok || !strings.HasPrefix(f, "=") {
			continue
		}
		text, ok := files[absPath(res.Path)]
		if !ok {
			return 0, "", false
		}
		sh, err := sheet.ParseCSV(text)
		if err != nil {
			return 0, "", false
		}
		v := sh.Evaluator().EvalFormula(f[1:])
		if !v.IsNum {
			return 0, "", false
		}
		return v.Num, f, true
	}
	return 0, "", false
}

// Words that name each formula function in an instruction.
var formulaWords = map[string][]string{"SUM": {"sum", "total", "add up"}, "AVERAGE": {"average", "mean"},
	"MIN": {"min", "minimum", "smallest", "lowest"}, "MAX": {"max", "maximum", "largest", "highest"}, "COUNT": {"count", "number of"},
	"ROUND": {"round"}, "ABS": {"abs", "absolute"}}

var simpleFormulaRe = regexp.MustCompile(`^=([A-Za-z]+)\(([A-Za-z]+)(\d+):([A-Za-z]+)(\d+)\)$`)

// formulaGrounded: the instruction names the formula's function (or the
// formula itself), and its range is stated or is exactly the data rows of
// that column in the setup's sheet.
func formulaGrounded(f, ins, csv string) (bool, string) {
	low := strings.ToLower(ins)
	if strings.Contains(strings.ReplaceAll(low, " ", ""), strings.ToLower(strings.ReplaceAll(f, " ", ""))) {
		return true, ""
	}
	m := simpleFormulaRe.FindStringSubmatch(strings.TrimSpace(f))
	if m == nil {
		return false, "the instruction does not state it"
	}
	fn := strings.ToUpper(m[1])
	if !slices.ContainsFunc(formulaWords[fn], func(w string) bool { return regexp.MustCompile(`\b` + w + `\b`).MatchString(low) }) {
		return false, "the instruction does not ask for " + fn
	}
	rng := strings.ToLower(m[2] + m[3] + ":" + m[4] + m[5])
	if strings.Contains(low, rng) {
		return true, ""
	}
	sh, err := sheet.ParseCSV(csv)
	if err != nil || !strings.EqualFold(m[2], m[4]) || m[3] != "2" || m[5] != fmt.Sprint(sh.Rows()) {
		return false, "its range is neither stated nor the column's data rows"
	}
	return true, ""
}

// grounding answers whether a literal is stated in a corpus (instruction
// plus setup): as a substring, line by line, or word by word.
type grounding struct {
	norm    string
	tokens  map[string]bool
	derived map[string]bool // numbers the instruction asks to compute from a setup sheet
}

func newGrounding(corpus string) grounding {
	return grounding{norm: " " + strings.Join(tokens(corpus), " ") + " ", tokens: tokenSet(corpus)}
}

// seq reports whether s's words appear in the corpus in a row.
func (g grounding) seq(s string) bool {
	t := tokens(s)
	return len(t) == 0 || strings.Contains(g.norm, " "+strings.Join(t, " ")+" ")
}

// text: the literal's words appear in a row in the corpus, or each of its
// lines does, or, for a longer text derived from several places (an edit
// of a setup file), every word does.
func (g grounding) text(s string) bool {
	if g.seq(s) {
		return true
	}
	all := true
	for _, l := range strings.Split(s, "\n") {
		if !g.seq(l) {
			all = false
			break
		}
	}
	if all {
		return true
	}
	t := tokens(s)
	// Numbers computed from the setup's sheet stand for themselves.
	if len(g.derived) > 0 {
		var rest []string
		for _, w := range t {
			if !g.derived[w] {
				rest = append(rest, w)
			}
		}
		if len(rest) < len(t) && g.seq(strings.Join(rest, " ")) {
			return true
		}
	}
	if len(t) < 6 {
		return false
	}
	for _, w := range t {
		if !g.tokens[w] && !g.derived[w] {
			return false
		}
	}
	return true
}

// derivedNumbers are the aggregates the instruction asks for (by name) over
// the columns of the sheets the setup creates.
func derivedNumbers(ins string, files map[string]string) map[string]bool {
	low := strings.ToLower(ins)
	var fns []string
	for fn, words := range formulaWords {
		if slices.ContainsFunc(words, func(w string) bool { return regexp.MustCompile(`\b` + w + `\b`).MatchString(low) }) {
			fns = append(fns, fn)
		}
	}
	out := map[string]bool{}
	if len(fns) == 0 {
		return out
	}
	for p, text := range files {
		if !strings.HasSuffix(p, ".csv") {
			continue
		}
		sh, err := sheet.ParseCSV(text)
		if err != nil || sh.Rows() < 2 {
			continue
		}
		for col := 0; col < sh.Cols(); col++ {
			var nums []float64
			for r := 1; r < sh.Rows(); r++ {
				if n, ok := sheet.ParseNumber(sh.Raw(r, col)); ok {
					nums = append(nums, n)
				}
			}
			if len(nums) == 0 {
				continue
			}
			for _, fn := range fns {
				if fn == "ROUND" || fn == "ABS" {
					continue
				}
				out[strings.ToLower(sheet.FormatNumber(aggregate(fn, nums)))] = true
			}
		}
	}
	return out
}

func (g grounding) number(v float64) bool {
	return g.seq(sheet.FormatNumber(v)) || g.derived[strings.ToLower(sheet.FormatNumber(v))]
}

func (g grounding) path(p string) bool {
	if g.seq(vfs.Short(p)) || g.seq(p) {
		return true
	}
	short := vfs.Short(p)
	if !g.seq(lastElem(short)) {
		return false // the name itself must be stated
	}
	for _, part := range strings.Split(strings.TrimPrefix(short, "~/"), "/") {
		for _, t := range tokens(part) {
			if !g.tokens[t] {
				return false
			}
		}
	}
	return true
}
