package synthesize

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/pipeline/simdesk/sheet"
)

// Flaws the builtin proposer plants, so that the other roles have the kind
// of work a model's proposals give them. Each is caught by one role first:
// the rule validator (unknown getter or metric, bad argument, a cell outside
// the sheet, a file the setup does not create), the judger (a value the
// instruction does not state, ambiguous wording) or the checker (a goal
// already met by the setup, a goal that cannot be reached).
const (
	FlawUnknownGetter = "unknown_getter"
	FlawUnknownMetric = "unknown_metric"
	FlawBadArgument   = "bad_argument"
	FlawWrongCell     = "wrong_cell"
	FlawMissingSetup  = "missing_setup"
	FlawWrongValue    = "wrong_value"
	FlawAmbiguous     = "ambiguous"
	FlawAlreadyDone   = "already_done"
	FlawUnreachable   = "unreachable"
)

// FlawKinds lists the flaws in a fixed order.
var FlawKinds = []string{FlawUnknownGetter, FlawUnknownMetric, FlawBadArgument, FlawWrongCell, FlawMissingSetup,
	FlawWrongValue, FlawAmbiguous, FlawAlreadyDone, FlawUnreachable}

// Misspellings a model plausibly writes for getter and metric names.
var (
	badGetters = map[string]string{"file_content": "file_text", "file_exists": "path_exists", "folder_exists": "dir_exists",
		"sheet_cell": "cell_value", "sheet_cell_raw": "cell_formula", "sheet_table": "table_content", "setting": "setting_value",
		"sent_mail": "mail_field", "editor_dirty": "editor_modified"}
	badMetrics = map[string]string{"exact_match": "equals", "compare_number": "number_equals", "compare_table": "table_equals",
		"is_true": "is_set", "is_false": "is_unset", "check_include_exclude": "contains_all", "compare_list": "list_equals"}
	badFields = map[string]string{"to": "recipient", "subject": "title", "body": "text", "attachments": "files", "cc": "copy_to"}
)

func cloneGetter(g *judge.Getter) *judge.Getter {
	if g == nil {
		return nil
	}
	n := *g
	if g.Rules != nil {
		r := *g.Rules
		r.Include = slices.Clone(g.Rules.Include)
		r.Exclude = slices.Clone(g.Rules.Exclude)
		r.Expected = deepCopy(g.Rules.Expected)
		n.Rules = &r
	}
	return &n
}

// deepCopy copies the lists inside a rule literal (tables, lists).
func deepCopy(v any) any {
	if l, ok := v.([]any); ok {
		out := make([]any, len(l))
		for i, e := range l {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

func cloneCriteria(cs []judge.Criterion) []judge.Criterion {
	out := make([]judge.Criterion, len(cs))
	for i, c := range cs {
		out[i] = judge.Criterion{Func: c.Func, Result: cloneGetter(c.Result), Expected: cloneGetter(c.Expected), Options: c.Options}
	}
	return out
}

func (d draft) clone() draft {
	n := d
	n.setup = slices.Clone(d.setup)
	n.criteria = cloneCriteria(d.criteria)
	return n
}

// plantFlaw applies flaw kind to d; false when it does not apply.
func plantFlaw(r *rand.Rand, d *draft, kind string) bool {
	pickCrit := func(ok func(c judge.Criterion) bool) int {
		var idx []int
		for i, c := range d.criteria {
			if ok(c) {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			return -1
		}
		return pickOne(r, idx)
	}
	corpus := d.instruction + "\n" + simdesk.BuildSetup(d.setup...)
	switch kind {
	case FlawUnknownGetter:
		i := pickCrit(func(c judge.Criterion) bool { return c.Result != nil && badGetters[c.Result.Type] != "" })
		if i < 0 {
			return false
		}
		d.criteria[i].Result.Type = badGetters[d.criteria[i].Result.Type]
	case FlawUnknownMetric:
		i := pickCrit(func(c judge.Criterion) bool { return badMetrics[c.Func] != "" })
		if i < 0 {
			return false
		}
		d.criteria[i].Func = badMetrics[d.criteria[i].Func]
	case FlawBadArgument:
		i := pickCrit(func(c judge.Criterion) bool {
			return c.Result != nil && (c.Result.Cell != "" || c.Result.Type == "sent_mail" ||
				(c.Func == "compare_number" && c.Expected != nil && c.Expected.Rules != nil))
		})
		if i < 0 {
			return false
		}
		c := &d.criteria[i]
		switch {
		case c.Result.Cell != "":
			// "B7" written the other way round.
			k := strings.IndexFunc(c.Result.Cell, func(r rune) bool { return r >= '0' && r <= '9' })
			if k <= 0 {
				return false
			}
			c.Result.Cell = c.Result.Cell[k:] + c.Result.Cell[:k]
		case c.Result.Type == "sent_mail":
			c.Result.Field = badFields[c.Result.Field]
		default:
			c.Expected.Rules.Expected = judge.Text(c.Expected.Rules.Expected) + " units"
		}
	case FlawWrongCell:
		i := pickCrit(func(c judge.Criterion) bool { return c.Result != nil && c.Result.Cell != "" })
		if i < 0 {
			return false
		}
		far := fmt.Sprintf("%s%d", string(rune('F'+r.IntN(6))), 20+r.IntN(40))
		old := d.criteria[i].Result.Cell
		for k := range d.criteria {
			if g := d.criteria[k].Result; g != nil && g.Cell == old && g.Path == d.criteria[i].Result.Path {
				g.Cell = far // every criterion on that cell, so the judge stays consistent
			}
		}
	case FlawMissingSetup:
		if len(d.inputs) == 0 {
			return false
		}
		drop := d.setup[d.inputs[0]]
		p := stepPath(drop)
		d.setup = slices.DeleteFunc(d.setup, func(s simdesk.SetupStep) bool {
			return stepPath(s) == p && (s.Type == drop.Type || s.Type == "open_file")
		})
	case FlawWrongValue:
		i := pickCrit(func(c judge.Criterion) bool {
			if c.Result != nil && c.Result.Type == "setting" && (c.Func == "is_true" || c.Func == "is_false") {
				return true
			}
			if c.Expected == nil || c.Expected.Rules == nil {
				return false
			}
			if c.Func == "check_include_exclude" {
				return len(c.Expected.Rules.Include) > 0
			}
			switch c.Expected.Rules.Expected.(type) {
			case string, float64, []any:
				return c.Func != "compare_list"
			}
			return false
		})
		if i < 0 {
			return false
		}
		return wrongValue(r, &d.criteria[i], corpus)
	case FlawAmbiguous:
		if d.vague == "" {
			return false
		}
		d.instruction = d.vague
	case FlawAlreadyDone:
		if len(d.achieve) == 0 {
			return false
		}
		d.setup = append(d.setup, d.achieve...)
	case FlawUnreachable:
		i := pickCrit(func(c judge.Criterion) bool {
			return c.Result != nil && c.Result.Path != "" && c.Func != "is_false"
		})
		if i < 0 {
			return false
		}
		typ := "file_exists"
		if d.criteria[i].Result.Type == "folder_exists" {
			typ = "folder_exists"
		}
		d.criteria = append(d.criteria, cr("is_false", gFile(typ, d.criteria[i].Result.Path), nil, judge.Options{}))
	default:
		return false
	}
	return true
}

func stepPath(s simdesk.SetupStep) string {
	var p struct {
		Path string `json:"path"`
	}
	_ = decodeLoose(s.Parameters, &p)
	return p.Path
}

// wrongValue changes an expected value into one the instruction does not
// state: another number, another valid option, a typo, a flipped switch.
func wrongValue(r *rand.Rand, c *judge.Criterion, corpus string) bool {
	low := strings.ToLower(corpus)
	if c.Result.Type == "setting" && (c.Func == "is_true" || c.Func == "is_false") {
		c.Func = map[string]string{"is_true": "is_false", "is_false": "is_true"}[c.Func]
		return true
	}
	rules := c.Expected.Rules
	if c.Func == "check_include_exclude" {
		rules.Include[0] = typo(r, rules.Include[0], low)
		return true
	}
	switch v := rules.Expected.(type) {
	case float64:
		rules.Expected = otherNumber(r, v, low)
	case string:
		if c.Result.Type == "setting" {
			if def := simdesk.SettingByKey(c.Result.Key); def != nil && def.Kind == simdesk.KindChoice {
				for _, o := range def.Options {
					if o != v && o != def.Default && !strings.Contains(low, strings.ToLower(o)) {
						rules.Expected = o
						return true
					}
				}
				return false
			}
		}
		if strings.HasSuffix(v, "@example.com") {
			for _, p := range vPeople {
				if e := emailOf(p); !strings.Contains(low, e) {
					rules.Expected = e
					return true
				}
			}
		}
		if n, ok := sheet.ParseNumber(v); ok && !strings.HasPrefix(v, "=") {
			rules.Expected = sheet.FormatNumber(otherNumber(r, n, low))
			return true
		}
		rules.Expected = typo(r, v, low)
	case []any:
		// A table: change one numeric cell.
		for _, ri := range r.Perm(len(v)) {
			row, ok := v[ri].([]any)
			if !ok || ri == 0 {
				continue
			}
			for ci, cell := range row {
				if s, ok := cell.(string); ok {
					if n, err := strconv.Atoi(s); err == nil {
						row[ci] = strconv.Itoa(int(otherNumber(r, float64(n), low)))
						return true
					}
				}
			}
		}
		return false
	default:
		return false
	}
	return true
}

// otherNumber is near n and absent from the corpus.
func otherNumber(r *rand.Rand, n float64, low string) float64 {
	for _, d := range []float64{1, 10, 2, 3, 7, 11, 13, 17} {
		if r.IntN(2) == 0 {
			d = -d
		}
		m := n + d
		if m > 0 && !strings.Contains(low, sheet.FormatNumber(m)) {
			return m
		}
	}
	return n + 101
}

// typo swaps two letters of the longest word, so the word no longer
// appears in the instruction.
func typo(r *rand.Rand, s, low string) string {
	words := strings.Fields(s)
	best := -1
	for i, w := range words {
		if len(w) >= 4 && (best < 0 || len(w) > len(words[best])) {
			best = i
		}
	}
	if best < 0 {
		return s + "s"
	}
	w := []rune(words[best])
	for try := 0; try < 4; try++ {
		k := 1 + r.IntN(len(w)-2)
		w[k], w[k+1] = w[k+1], w[k]
		if w[k] != w[k+1] && !strings.Contains(low, strings.ToLower(string(w))) {
			break
		}
	}
	words[best] = string(w)
	// Keep the original line structure: replace in place.
	return strings.Replace(s, strings.Fields(s)[best], words[best], 1)
}
