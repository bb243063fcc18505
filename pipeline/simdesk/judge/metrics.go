package judge

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/sheet"
)

type expMode int

const (
	expNone         expMode = iota
	expRule                 // only a rule
	expRuleOrGetter         // a rule or a second getter
)

// metricDef describes a metric: what it takes and how it scores.
type metricDef struct {
	result   bool
	expected expMode
	rules    []string // rule keys; the first is required
	shape    string   // what rules.expected holds: scalar, number, table or list
	doc      string
	// score returns whether got matches want (a rule or a getter's value)
	// and a short reason when it does not.
	score func(got any, want any, r *Rules, o Options) (bool, string)
}

var metrics map[string]metricDef

func init() {
	metrics = map[string]metricDef{
		"exact_match": {result: true, expected: expRuleOrGetter, rules: []string{"expected"}, shape: "scalar",
			doc: "result equals expected as text (options: ignore_case, strip)", score: exactMatch},
		"fuzzy_match": {result: true, expected: expRuleOrGetter, rules: []string{"expected"}, shape: "scalar",
			doc: "edit-distance similarity of result and expected >= threshold (default 0.9)", score: fuzzyMatch},
		"check_include_exclude": {result: true, expected: expRule, rules: []string{"include", "exclude"},
			doc: "result contains every rules.include and no rules.exclude (options: ignore_case)", score: includeExclude},
		"match_in_list": {result: true, expected: expRule, rules: []string{"expected"}, shape: "list",
			doc: "result equals one of the list rules.expected", score: matchInList},
		"compare_number": {result: true, expected: expRuleOrGetter, rules: []string{"expected"}, shape: "number",
			doc: "result is a number within options.tolerance of expected", score: compareNumber},
		"compare_table": {result: true, expected: expRuleOrGetter, rules: []string{"expected"}, shape: "table",
			doc: "result table equals expected table cell by cell (numbers within options.tolerance)", score: compareTable},
		"compare_list": {result: true, expected: expRuleOrGetter, rules: []string{"expected"}, shape: "list",
			doc: "result list equals expected list (options: ignore_order, ignore_case)", score: compareList},
		"is_true":    {result: true, doc: "result is true", score: func(got, _ any, _ *Rules, _ Options) (bool, string) { return got == true, "not true" }},
		"is_false":   {result: true, doc: "result is false or missing", score: func(got, _ any, _ *Rules, _ Options) (bool, string) { return got == false || got == nil, "not false" }},
		"infeasible": {doc: "the agent reported the task infeasible (its last action was fail)"},
	}
}

// MetricNames lists the metric functions, sorted.
func MetricNames() string {
	names := make([]string, 0, len(metrics))
	for n := range metrics {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// MetricDoc describes one metric ("" when unknown), for knowledge documents.
func MetricDoc(name string) string { return metrics[name].doc }

func (m metricDef) checkRules(r *Rules, field string) error {
	if r == nil {
		return specErr(field, "required")
	}
	if !slices.Contains(m.rules, "include") && (len(r.Include) > 0 || len(r.Exclude) > 0) {
		return specErr(field, "include/exclude are not used by this metric")
	}
	if slices.Contains(m.rules, "include") {
		if len(r.Include) == 0 && len(r.Exclude) == 0 {
			return specErr(field, "needs include or exclude")
		}
		if r.Expected != nil {
			return specErr(field+".expected", "not used by check_include_exclude")
		}
		return nil
	}
	if r.Expected == nil {
		return specErr(field+".expected", "required")
	}
	switch m.shape {
	case "number":
		if _, ok := number(r.Expected); !ok {
			return specErr(field+".expected", "want a number")
		}
	case "table":
		if _, ok := table(r.Expected); !ok {
			return specErr(field+".expected", "want a list of rows")
		}
	case "list":
		if _, ok := list(r.Expected); !ok {
			return specErr(field+".expected", "want a list")
		}
	default:
		if _, ok := scalar(r.Expected); !ok {
			return specErr(field+".expected", "want a string, number or bool")
		}
	}
	return nil
}

// Text renders a value as the metrics compare it: numbers the way the Sheet
// app shows them, booleans as true/false, nil as "".
func Text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return sheet.FormatNumber(x)
	case bool:
		return strconv.FormatBool(x)
	case []string:
		return strings.Join(x, ", ")
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = Text(e)
		}
		return strings.Join(parts, ", ")
	case [][]string:
		rows := make([]string, len(x))
		for i, r := range x {
			rows[i] = strings.Join(r, ",")
		}
		return strings.Join(rows, "; ")
	}
	return fmt.Sprint(v)
}

func scalar(v any) (string, bool) {
	switch v.(type) {
	case string, float64, bool:
		return Text(v), true
	}
	return "", false
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		return sheet.ParseNumber(x)
	}
	return 0, false
}

func list(v any) ([]string, bool) {
	switch x := v.(type) {
	case []string:
		return x, true
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			s, ok := scalar(e)
			if !ok {
				return nil, false
			}
			out[i] = s
		}
		return out, true
	}
	return nil, false
}

func table(v any) ([][]string, bool) {
	switch x := v.(type) {
	case [][]string:
		return x, true
	case []any:
		out := make([][]string, len(x))
		for i, r := range x {
			row, ok := list(r)
			if !ok {
				return nil, false
			}
			out[i] = row
		}
		return out, true
	}
	return nil, false
}

func norm(s string, o Options) string {
	if o.Strip {
		s = strings.TrimSpace(s)
	}
	if o.IgnoreCase {
		s = strings.ToLower(s)
	}
	return s
}

func wantOf(want any, r *Rules) any {
	if r != nil {
		return r.Expected
	}
	return want
}

func exactMatch(got, want any, r *Rules, o Options) (bool, string) {
	if got == nil {
		return false, "result missing"
	}
	g, w := norm(Text(got), o), norm(Text(wantOf(want, r)), o)
	if g == w {
		return true, ""
	}
	return false, fmt.Sprintf("got %q, want %q", clip(g), clip(w))
}

func fuzzyMatch(got, want any, r *Rules, o Options) (bool, string) {
	if got == nil {
		return false, "result missing"
	}
	th := o.Threshold
	if th == 0 {
		th = 0.9
	}
	sim := Similarity(norm(Text(got), o), norm(Text(wantOf(want, r)), o))
	if sim >= th {
		return true, ""
	}
	return false, fmt.Sprintf("similarity %.3f < %.3f", sim, th)
}

func includeExclude(got, _ any, r *Rules, o Options) (bool, string) {
	if got == nil {
		return false, "result missing"
	}
	g := norm(Text(got), o)
	for _, s := range r.Include {
		if !strings.Contains(g, norm(s, o)) {
			return false, fmt.Sprintf("missing %q", s)
		}
	}
	for _, s := range r.Exclude {
		if strings.Contains(g, norm(s, o)) {
			return false, fmt.Sprintf("contains excluded %q", s)
		}
	}
	return true, ""
}

func matchInList(got, _ any, r *Rules, o Options) (bool, string) {
	if got == nil {
		return false, "result missing"
	}
	l, _ := list(r.Expected)
	g := norm(Text(got), o)
	for _, w := range l {
		if norm(w, o) == g {
			return true, ""
		}
	}
	return false, fmt.Sprintf("%q not in the list", clip(g))
}

func compareNumber(got, want any, r *Rules, o Options) (bool, string) {
	g, ok := number(got)
	if !ok {
		return false, fmt.Sprintf("result %q is not a number", clip(Text(got)))
	}
	w, ok := number(wantOf(want, r))
	if !ok {
		return false, "expected value is not a number"
	}
	tol := o.Tolerance
	if tol == 0 {
		tol = 1e-6
	}
	if math.Abs(g-w) <= tol {
		return true, ""
	}
	return false, fmt.Sprintf("got %v, want %v (tolerance %v)", g, w, tol)
}

func cellEqual(a, b string, o Options) bool {
	if norm(a, o) == norm(b, o) {
		return true
	}
	x, okx := sheet.ParseNumber(a)
	y, oky := sheet.ParseNumber(b)
	if !okx || !oky {
		return false
	}
	tol := o.Tolerance
	if tol == 0 {
		tol = 1e-9
	}
	return math.Abs(x-y) <= tol
}

func trimTable(t [][]string) [][]string {
	out := make([][]string, 0, len(t))
	for _, r := range t {
		n := len(r)
		for n > 0 && strings.TrimSpace(r[n-1]) == "" {
			n--
		}
		out = append(out, r[:n])
	}
	for len(out) > 0 && len(out[len(out)-1]) == 0 {
		out = out[:len(out)-1]
	}
	return out
}

func compareTable(got, want any, r *Rules, o Options) (bool, string) {
	g, ok := table(got)
	if !ok {
		return false, "result is not a table"
	}
	w, ok := table(wantOf(want, r))
	if !ok {
		return false, "expected value is not a table"
	}
	g, w = trimTable(g), trimTable(w)
	if len(g) != len(w) {
		return false, fmt.Sprintf("%d rows, want %d", len(g), len(w))
	}
	for i := range g {
		if len(g[i]) != len(w[i]) {
			return false, fmt.Sprintf("row %d has %d cells, want %d", i+1, len(g[i]), len(w[i]))
		}
		for j := range g[i] {
			if !cellEqual(g[i][j], w[i][j], o) {
				return false, fmt.Sprintf("%s is %q, want %q", sheet.RefName(i, j), clip(g[i][j]), clip(w[i][j]))
			}
		}
	}
	return true, ""
}

func compareList(got, want any, r *Rules, o Options) (bool, string) {
	g, ok := list(got)
	if !ok {
		return false, "result is not a list"
	}
	w, ok := list(wantOf(want, r))
	if !ok {
		return false, "expected value is not a list"
	}
	g, w = append([]string(nil), g...), append([]string(nil), w...)
	for i := range g {
		g[i] = norm(g[i], o)
	}
	for i := range w {
		w[i] = norm(w[i], o)
	}
	if o.IgnoreOrder {
		sort.Strings(g)
		sort.Strings(w)
	}
	if slices.Equal(g, w) {
		return true, ""
	}
	return false, fmt.Sprintf("got [%s], want [%s]", clip(strings.Join(g, ", ")), clip(strings.Join(w, ", ")))
}

// Similarity is 1 - Levenshtein distance / longer length, over runes.
func Similarity(a, b string) float64 {
	ra, rb := []rune(a), []rune(b)
	if len(ra) == 0 && len(rb) == 0 {
		return 1
	}
	if len(ra) > 5000 || len(rb) > 5000 {
		// Long texts: compare exactly rather than spend quadratic time.
		if a == b {
			return 1
		}
		return 0
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return 1 - float64(prev[len(rb)])/float64(max(len(ra), len(rb)))
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
