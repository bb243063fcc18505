package synthesize

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/schemas"
)

// Candidate is one proposed task as it moves through the loop. Setup and
// Judge are kept as the text the proposer (or fixer) wrote, valid or not:
// the rule validator says what is wrong with them.
type Candidate struct {
	Instruction string
	App         string
	Setup       string // JSON list of setup steps
	Judge       string // JSON evaluator spec
	Abilities   []string
	// Extra names fields a model returned beyond the task schema (code,
	// scripts, ...); the rule validator rejects them, nothing runs them.
	Extra []string
	// Raw is a model reply that could not be read as a task at all.
	Raw string

	Method  string // synthesized, split, composed
	Origin  string
	Parents []string
	// Meta is provenance recorded with the candidate (the deviation of a
	// split, the document capability of a proposal).
	Meta map[string]any
	// Flaw is the defect the builtin proposer planted on purpose ("" when
	// none). It is recorded for analysis and never shown to another role.
	Flaw string

	ref *reference // what the instruction means, when the proposer knows
}

// reference is the proposer's intended task: the correct setup and judge
// for the instruction, and the literals the instruction must state. The
// referee measures executability against it.
type reference struct {
	setup   string
	judge   string
	conveys []string
}

// clone returns a deep copy (fixers work on copies).
func (c *Candidate) clone() *Candidate {
	n := *c
	n.Abilities = slices.Clone(c.Abilities)
	n.Extra = slices.Clone(c.Extra)
	n.Parents = slices.Clone(c.Parents)
	return &n
}

// JSON renders the candidate for the synthesis table: setup and judge as
// embedded JSON when they parse, else as strings.
func (c *Candidate) JSON() string {
	type out struct {
		Instruction string          `json:"instruction"`
		App         string          `json:"app"`
		Setup       json.RawMessage `json:"setup"`
		Judge       json.RawMessage `json:"judge"`
		Abilities   []string        `json:"abilities"`
		Extra       []string        `json:"extra,omitempty"`
		Raw         string          `json:"raw,omitempty"`
		Flaw        string          `json:"flaw,omitempty"`
		Meta        map[string]any  `json:"meta,omitempty"`
	}
	o := out{Instruction: c.Instruction, App: c.App, Setup: rawOrString(c.Setup), Judge: rawOrString(c.Judge),
		Abilities: c.Abilities, Extra: c.Extra, Raw: c.Raw, Flaw: c.Flaw, Meta: c.Meta}
	if o.Abilities == nil {
		o.Abilities = []string{}
	}
	b, err := json.Marshal(o)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// rawOrString embeds valid JSON compacted, anything else as a JSON string.
func rawOrString(s string) json.RawMessage {
	if strings.TrimSpace(s) != "" && json.Valid([]byte(s)) {
		var buf bytes.Buffer
		if json.Compact(&buf, []byte(s)) == nil {
			return buf.Bytes()
		}
	}
	b, _ := json.Marshal(s)
	return b
}

// canonicalSetup re-marshals a setup that parses (so equal setups compare
// equal), else returns it as is.
func canonicalSetup(s string) string {
	steps, err := simdesk.ParseSetup(s)
	if err != nil {
		return s
	}
	for i := range steps {
		var buf bytes.Buffer
		if json.Compact(&buf, steps[i].Parameters) == nil {
			steps[i].Parameters = buf.Bytes()
		}
	}
	return simdesk.BuildSetup(steps...)
}

// canonicalJudge returns the compiled judge's canonical spec when it
// compiles, else the text as is.
func canonicalJudge(s string) string {
	if j, err := judge.Compile(s); err == nil {
		return j.Spec()
	}
	return s
}

// task turns the candidate into a task row with id.
func (c *Candidate) task(id string) schemas.Task {
	t := schemas.Task{TaskID: id, Domain: c.App, App: c.App, Instruction: c.Instruction,
		Setup: canonicalSetup(c.Setup), Judge: canonicalJudge(c.Judge), Feasible: true,
		Abilities: slices.Clone(c.Abilities), Source: c.Method, ParentTaskIDs: slices.Clone(c.Parents),
		Origin: c.Origin, Split: "train"}
	if t.Abilities == nil {
		t.Abilities = []string{}
	}
	if t.ParentTaskIDs == nil {
		t.ParentTaskIDs = []string{}
	}
	if j, err := judge.Compile(c.Judge); err == nil && j.Infeasible() {
		t.Feasible = false
	}
	return t
}

// candidateOf is the inverse of task, for pool tasks used as parents.
func candidateOf(t schemas.Task) *Candidate {
	return &Candidate{Instruction: t.Instruction, App: t.App, Setup: t.Setup, Judge: t.Judge,
		Abilities: slices.Clone(t.Abilities)}
}

// Issue is one problem a role found, structured so that a fixer can act on
// it; Detail is the human-readable reason.
type Issue struct {
	Role      string `json:"role"`
	Code      string `json:"code"`
	Criterion int    `json:"criterion"` // -1 when not about one criterion
	Field     string `json:"field,omitempty"`
	Path      string `json:"path,omitempty"`
	Value     string `json:"value,omitempty"`
	Detail    string `json:"detail"`
}

func reasons(issues []Issue) string {
	var out []string
	for _, is := range issues {
		out = append(out, is.Detail)
	}
	return strings.Join(out, "; ")
}

// Cost is what a role spent: calls (requests to a model, or invocations of
// a builtin role) and tokens (prompt plus completion; 0 for builtin roles).
type Cost struct {
	Calls  int64
	Tokens int64
}

func (c *Cost) add(o Cost) { c.Calls += o.Calls; c.Tokens += o.Tokens }
