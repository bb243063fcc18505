// Package judge compiles and evaluates declarative task judges in the shape
// of OSWorld's evaluator specs:
//
//	{"func": "exact_match",
//	 "result": {"type": "file_content", "path": "~/Documents/a.txt"},
//	 "expected": {"type": "rule", "rules": {"expected": "hello"}},
//	 "options": {"strip": true}}
//
// or the list form {"func": [...], "result": [...], "expected": [...],
// "options": [...], "conj": "and"|"or"}, or {"func": "infeasible"} for tasks
// whose correct answer is to report failure. A judge never runs code: the
// getters read state through a Source and the metrics are Go functions.
// Unknown functions, getters, parameters or options are compile errors that
// name the offending field, so a synthesis rule validator can call Check.
package judge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
)

// ErrSpec marks a judge spec that does not compile.
var ErrSpec = errors.New("invalid judge spec")

// Rules is the payload of an expected getter of type "rule".
type Rules struct {
	Expected any      `json:"expected,omitempty"`
	Include  []string `json:"include,omitempty"`
	Exclude  []string `json:"exclude,omitempty"`
}

// Getter says where a value comes from: a result getter reads the final
// state, an expected getter is usually a "rule" with a literal.
type Getter struct {
	Type  string `json:"type"`
	Path  string `json:"path,omitempty"`
	Dest  string `json:"dest,omitempty"` // OSWorld's vm_file local name; ignored
	Cell  string `json:"cell,omitempty"`
	Key   string `json:"key,omitempty"`
	Field string `json:"field,omitempty"`
	App   string `json:"app,omitempty"`
	Index *int   `json:"index,omitempty"`
	Rules *Rules `json:"rules,omitempty"`
	// Command and Shell are vm_command_line's: a list of words or a
	// string, and OSWorld's shell flag.
	Command json.RawMessage `json:"command,omitempty"`
	Shell   json.RawMessage `json:"shell,omitempty"`
}

// Options tune a metric.
type Options struct {
	IgnoreCase  bool    `json:"ignore_case,omitempty"`
	Strip       bool    `json:"strip,omitempty"`        // trim surrounding whitespace before comparing
	Tolerance   float64 `json:"tolerance,omitempty"`    // absolute numeric tolerance
	Threshold   float64 `json:"threshold,omitempty"`    // fuzzy_match similarity needed (default 0.9)
	IgnoreOrder bool    `json:"ignore_order,omitempty"` // compare_list
}

// Criterion is one metric applied to one result (and expected) value.
type Criterion struct {
	Func     string
	Result   *Getter // nil for infeasible
	Expected *Getter // nil when the metric takes none
	Options  Options
}

// Judge is a compiled evaluator spec.
type Judge struct {
	Criteria []Criterion
	Conj     string // "and" or "or"
	// Postconfig is OSWorld's evaluator.postconfig: setup steps (a JSON
	// list) the environment runs on the final state before judging it,
	// such as saving the document; "" when there are none.
	Postconfig string
	spec       string
}

// Infeasible reports whether the judge scores a reported failure (the
// correct answer to an infeasible task).
func (j *Judge) Infeasible() bool {
	return len(j.Criteria) == 1 && j.Criteria[0].Func == "infeasible"
}

// Spec returns the canonical JSON of the judge.
func (j *Judge) Spec() string { return j.spec }

// Paths returns the file paths the judge reads, sorted and unique, for rule
// validators that check them against a task's setup.
func (j *Judge) Paths() []string {
	var out []string
	for _, c := range j.Criteria {
		for _, g := range []*Getter{c.Result, c.Expected} {
			if g != nil && g.Path != "" && !slices.Contains(out, g.Path) {
				out = append(out, g.Path)
			}
		}
	}
	sort.Strings(out)
	return out
}

type rawSpec struct {
	Func     json.RawMessage `json:"func"`
	Result   json.RawMessage `json:"result"`
	Expected json.RawMessage `json:"expected"`
	Options  json.RawMessage `json:"options"`
	Conj     string          `json:"conj"`
	// Postconfig is run by the environment, not the judge.
	Postconfig json.RawMessage `json:"postconfig"`
}

func specErr(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrSpec, field, fmt.Sprintf(format, args...))
}

// HasMetric reports whether name is a metric judges can use.
func HasMetric(name string) bool { _, ok := metrics[name]; return ok }

// HasGetter reports whether name is a getter judges can use.
func HasGetter(name string) bool { _, ok := getters[name]; return ok }

// Check reports whether spec compiles; the error names the offending field.
func Check(spec string) error {
	_, err := Compile(spec)
	return err
}

// Compile parses and checks an evaluator spec.
func Compile(spec string) (*Judge, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(spec)))
	dec.DisallowUnknownFields()
	var raw rawSpec
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSpec, err)
	}
	if dec.More() {
		return nil, specErr("spec", "trailing data after the JSON object")
	}
	var funcs []string
	list := false
	switch {
	case len(raw.Func) == 0 || string(raw.Func) == "null":
		return nil, specErr("func", "required")
	case raw.Func[0] == '[':
		list = true
		if err := json.Unmarshal(raw.Func, &funcs); err != nil {
			return nil, specErr("func", "want a name or a list of names: %v", err)
		}
		if len(funcs) == 0 {
			return nil, specErr("func", "empty list")
		}
	default:
		var f string
		if err := json.Unmarshal(raw.Func, &f); err != nil {
			return nil, specErr("func", "want a name or a list of names: %v", err)
		}
		funcs = []string{f}
	}
	j := &Judge{Conj: "and"}
	switch raw.Conj {
	case "", "and":
	case "or":
		j.Conj = "or"
	default:
		return nil, specErr("conj", "%q (want and or or)", raw.Conj)
	}
	results, err := splitList(raw.Result, list, len(funcs), "result")
	if err != nil {
		return nil, err
	}
	expecteds, err := splitList(raw.Expected, list, len(funcs), "expected")
	if err != nil {
		return nil, err
	}
	options, err := splitList(raw.Options, list, len(funcs), "options")
	if err != nil {
		return nil, err
	}
	for i, f := range funcs {
		field := func(name string) string {
			if list {
				return fmt.Sprintf("%s[%d]", name, i)
			}
			return name
		}
		c, err := compileCriterion(f, results[i], expecteds[i], options[i], field)
		if err != nil {
			return nil, err
		}
		j.Criteria = append(j.Criteria, c)
	}
	if len(j.Criteria) > 1 && slices.ContainsFunc(j.Criteria, func(c Criterion) bool { return c.Func == "infeasible" }) {
		return nil, specErr("func", "infeasible cannot be combined with other metrics")
	}
	j.spec = Build(j.Conj, j.Criteria...)
	if pc := bytes.TrimSpace(raw.Postconfig); len(pc) > 0 && string(pc) != "null" && string(pc) != "[]" {
		var steps []map[string]json.RawMessage
		if err := json.Unmarshal(pc, &steps); err != nil {
			return nil, specErr("postconfig", "want a list of setup steps {type, parameters}: %v", err)
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, pc); err != nil {
			return nil, specErr("postconfig", "%v", err)
		}
		j.Postconfig = buf.String()
		// The canonical spec keeps it, after the criteria.
		j.spec = j.spec[:len(j.spec)-1] + `,"postconfig":` + j.Postconfig + "}"
	}
	return j, nil
}

// splitList returns n raw elements: the list's items in list form, or the
// single value repeated as one element.
func splitList(raw json.RawMessage, list bool, n int, field string) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, n)
	if len(raw) == 0 || string(raw) == "null" {
		return out, nil
	}
	if !list {
		out[0] = raw
		return out, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, specErr(field, "want a list of %d items with a list of funcs: %v", n, err)
	}
	if len(items) != n {
		return nil, specErr(field, "has %d items for %d funcs", len(items), n)
	}
	copy(out, items)
	return out, nil
}

func compileCriterion(f string, result, expected, options json.RawMessage, field func(string) string) (Criterion, error) {
	m, ok := metrics[f]
	if !ok {
		return Criterion{}, specErr(field("func"), "unknown metric %q (known: %s)", f, MetricNames())
	}
	c := Criterion{Func: f}
	var err error
	if m.result {
		if c.Result, err = compileGetter(result, field("result"), false); err != nil {
			return c, err
		}
		if c.Result == nil {
			return c, specErr(field("result"), "required by %s", f)
		}
	} else if len(result) > 0 && string(result) != "null" {
		return c, specErr(field("result"), "%s takes no result", f)
	}
	if m.expected != expNone {
		if c.Expected, err = compileGetter(expected, field("expected"), true); err != nil {
			return c, err
		}
		if c.Expected == nil {
			return c, specErr(field("expected"), "required by %s", f)
		}
		if c.Expected.Type == "rule" {
			if err := m.checkRules(c.Expected.Rules, field("expected")+".rules"); err != nil {
				return c, err
			}
		} else if m.expected == expRule {
			return c, specErr(field("expected"), "%s needs a rule, not a %s getter", f, c.Expected.Type)
		}
	} else if len(expected) > 0 && string(expected) != "null" && string(expected) != "{}" {
		return c, specErr(field("expected"), "%s takes no expected value", f)
	}
	if len(options) > 0 && string(options) != "null" {
		dec := json.NewDecoder(bytes.NewReader(options))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c.Options); err != nil {
			return c, specErr(field("options"), "%v", err)
		}
		if c.Options.Tolerance < 0 || c.Options.Threshold < 0 || c.Options.Threshold > 1 {
			return c, specErr(field("options"), "tolerance must be >= 0 and threshold in 0..1")
		}
	}
	return c, nil
}

// Build writes criteria as a canonical spec: the single form for one
// criterion, the list form otherwise.
func Build(conj string, cs ...Criterion) string {
	type single struct {
		Func     string   `json:"func"`
		Result   *Getter  `json:"result,omitempty"`
		Expected *Getter  `json:"expected,omitempty"`
		Options  *Options `json:"options,omitempty"`
	}
	type multi struct {
		Func     []string   `json:"func"`
		Result   []*Getter  `json:"result"`
		Expected []*Getter  `json:"expected"`
		Options  []*Options `json:"options"`
		Conj     string     `json:"conj"`
	}
	opt := func(o Options) *Options {
		if o == (Options{}) {
			return nil
		}
		return &o
	}
	var b []byte
	if len(cs) == 1 {
		c := cs[0]
		b, _ = json.Marshal(single{Func: c.Func, Result: c.Result, Expected: c.Expected, Options: opt(c.Options)})
	} else {
		m := multi{Conj: conj}
		if m.Conj == "" {
			m.Conj = "and"
		}
		for _, c := range cs {
			m.Func = append(m.Func, c.Func)
			m.Result = append(m.Result, c.Result)
			m.Expected = append(m.Expected, c.Expected)
			m.Options = append(m.Options, opt(c.Options))
		}
		b, _ = json.Marshal(m)
	}
	return string(b)
}
