package synthesize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/judge"
)

// Role names, as --without and the synthesis table spell them.
const (
	RoleProposer = "proposer"
	RoleRules    = "rule-validator"
	RoleJudger   = "judger"
	RoleChecker  = "checker"
	RoleFixer    = "fixer"
)

// Backends a role can run on.
const (
	BackendBuiltin = "builtin"
	BackendOpenAI  = "openai"
)

// proposeRequest is one proposer call: several candidates from one
// document.
type proposeRequest struct {
	doc   Doc
	call  int
	n     int
	seed  uint64
	avoid []string // instructions already in the pool for the doc's app
}

// proposerRole writes candidate tasks from a knowledge document.
type proposerRole interface {
	propose(ctx context.Context, req proposeRequest) ([]*Candidate, Cost, error)
}

// judgerRole reviews instruction and judge together; no issues means accept.
type judgerRole interface {
	review(ctx context.Context, c *Candidate) ([]Issue, string, Cost, error)
}

// fixerRole repairs a rejected candidate; a nil candidate means it could not.
type fixerRole interface {
	fix(ctx context.Context, w *worker, c *Candidate, issues []Issue, seed int64) (*Candidate, []string, Cost, error)
}

// Builtin roles.

type builtinProposer struct{ flawRate float64 }

func (p builtinProposer) propose(_ context.Context, req proposeRequest) ([]*Candidate, Cost, error) {
	var caps []string
	for _, id := range req.doc.Capabilities() {
		if _, ok := grammar[id]; ok {
			caps = append(caps, id)
		}
	}
	if len(caps) == 0 {
		// A document that names no capability: everything the grammar
		// knows for its app.
		for id := range grammar {
			if strings.HasPrefix(id, req.doc.App+".") {
				caps = append(caps, id)
			}
		}
		slices.Sort(caps)
	}
	if len(caps) == 0 {
		return nil, Cost{}, fmt.Errorf("synthesize: document %s names no capability the builtin proposer knows (want ids like `files.rename`); use --proposer openai for it", req.doc.Name)
	}
	var out []*Candidate
	for j := 0; j < req.n; j++ {
		r := rand.New(rand.NewPCG(req.seed, uint64(j)))
		id := pickOne(r, caps)
		d := grammar[id].gen(r)
		app, _, _ := strings.Cut(id, ".")
		ref := &reference{setup: simdesk.BuildSetup(d.setup...), judge: judge.Build("and", d.criteria...), conveys: d.conveys}
		flaw := ""
		if r.Float64() < p.flawRate {
			for _, k := range r.Perm(len(FlawKinds)) {
				dd := d.clone()
				if plantFlaw(r, &dd, FlawKinds[k]) {
					d, flaw = dd, FlawKinds[k]
					break
				}
			}
		}
		out = append(out, &Candidate{Instruction: d.instruction, App: app, Setup: simdesk.BuildSetup(d.setup...),
			Judge: judge.Build("and", d.criteria...), Abilities: d.abilities, Method: "synthesized", Origin: req.doc.Name,
			Meta: map[string]any{"capability": id}, Flaw: flaw, ref: ref})
	}
	return out, Cost{Calls: 1}, nil
}

type builtinJudger struct{}

func (builtinJudger) review(_ context.Context, c *Candidate) ([]Issue, string, Cost, error) {
	issues := reviewBuiltin(c)
	reason := "the instruction is specific and the judge checks what it states"
	if len(issues) > 0 {
		reason = reasons(issues)
	}
	return issues, reason, Cost{Calls: 1}, nil
}

type builtinFixer struct{}

func (builtinFixer) fix(_ context.Context, w *worker, c *Candidate, issues []Issue, seed int64) (*Candidate, []string, Cost, error) {
	n, fixes := fixBuiltin(w, c, issues, seed)
	return n, fixes, Cost{Calls: 1}, nil
}

// OpenAI roles: each is a prompt written for cualake, with a JSON reply
// validated against a schema.

var (
	anyJSON       = &schema{}
	stringList    = &schema{Type: "array", Items: &schema{Type: "string"}}
	taskSchemaFor = func(extra map[string]*schema, required ...string) *schema {
		props := map[string]*schema{
			"instruction": {Type: "string", Desc: "what the user asks; states every path and value the judge checks"},
			"app":         {Type: "string", Desc: "the application"},
			"setup":       {Type: "array", Items: anyJSON, Desc: "declarative setup steps {type, parameters}"},
			"judge":       {Type: "object", Desc: "declarative evaluator spec {func, result, expected, options} or lists with conj"},
			"abilities":   stringList,
		}
		for k, v := range extra {
			props[k] = v
		}
		return &schema{Type: "object", Props: props, Required: append([]string{"instruction", "app", "setup", "judge"}, required...)}
	}
	proposerSchema = &schema{Type: "object", Required: []string{"candidates"}, Props: map[string]*schema{
		"candidates": {Type: "array", MinItems: 1, Items: &schema{Type: "object", Required: []string{"instruction"}, Props: map[string]*schema{
			"instruction": {Type: "string"}, "app": {Type: "string"}, "abilities": stringList}}}}}
	judgerSchema = &schema{Type: "object", Required: []string{"verdict", "reason"}, Props: map[string]*schema{
		"verdict": {Type: "string", Enum: []string{"accept", "reject"}},
		"reason":  {Type: "string", Desc: "one or two sentences"},
		"issues":  stringList}}
	fixerSchema = taskSchemaFor(map[string]*schema{"fixes": stringList}, "fixes")
)

const proposerPrompt = `You design practice tasks for an agent that uses a desktop computer only through its screen, mouse and keyboard.
A task is a JSON object with:
- "instruction": what a user asks, in plain words. It states every file path, name, value and setting the judge checks, so that exactly one outcome satisfies it.
- "app": the application the task is about.
- "setup": a list of declarative setup steps ({"type": ..., "parameters": {...}}) that build the starting state. Every file the instruction refers to as existing must be created here. Use only the step types the document lists.
- "judge": a declarative evaluator spec over the final state, built from the getters and metrics the document lists. It must score 0 on the starting state and 1 once the instruction is carried out. Judges are data: never write Python, shell or any other code.
- "abilities": a few short skill labels, e.g. "navigate", "rename", "formula".
Reply with one JSON object {"candidates": [task, ...]} and nothing else. Reply schema:
`

const judgerPrompt = `You review tasks proposed for training computer-use agents, before anyone runs them. For the task you are shown, check:
1. The instruction is unambiguous: it names every file, value and setting the judge checks, and only one outcome satisfies it.
2. The task is meaningful: a real user could ask for it, and it takes at least one action in the app.
3. The judge agrees with the instruction: it checks the same paths, cells, settings and values the instruction asks for, in the same direction, and nothing the instruction does not ask for; it cannot already pass on the starting state the setup creates.
Reply with one JSON object {"verdict": "accept" or "reject", "reason": "..."} and nothing else. Reply schema:
`

const fixerPrompt = `You repair a task for training computer-use agents that reviewers rejected. Keep what the task is about and change only what the feedback requires: the instruction's wording, the setup steps or the judge. Setup steps and judges are declarative JSON data; never write code.
Reply with one JSON object: the whole corrected task (instruction, app, setup, judge, abilities) plus "fixes", a list of short notes on what you changed, and nothing else. Reply schema:
`

type openaiProposer struct{ llm *llmClient }

func (p openaiProposer) propose(ctx context.Context, req proposeRequest) ([]*Candidate, Cost, error) {
	var user strings.Builder
	fmt.Fprintf(&user, "Knowledge document %s:\n\n%s\n\nWrite %d new tasks for the %s app. Vary the operations, names and values.", req.doc.Name, req.doc.Text, req.n, req.doc.App)
	if len(req.avoid) > 0 {
		user.WriteString(" Do not repeat any of these existing tasks:\n")
		for _, a := range req.avoid {
			fmt.Fprintf(&user, "- %s\n", clip(strings.ReplaceAll(a, "\n", " "), 160))
		}
	}
	v, cost, err := p.llm.completeJSON(ctx, proposerPrompt+proposerSchema.String(), user.String(), proposerSchema)
	if err != nil {
		if errors.Is(err, ErrEndpoint) || ctx.Err() != nil {
			return nil, cost, err
		}
		return []*Candidate{{Raw: err.Error(), App: req.doc.App, Method: "synthesized", Origin: req.doc.Name}}, cost, nil
	}
	var out []*Candidate
	items, _ := v["candidates"].([]any)
	for _, it := range items {
		m, _ := it.(map[string]any)
		c := candidateFromReply(m, req.doc.App)
		c.Method, c.Origin = "synthesized", req.doc.Name
		out = append(out, c)
	}
	if len(out) > req.n {
		out = out[:req.n]
	}
	return out, cost, nil
}

// candidateFromReply reads a task object of a model's reply. Setup and
// judge keep whatever the model wrote; the rule validator judges them.
func candidateFromReply(m map[string]any, app string) *Candidate {
	c := &Candidate{App: app}
	c.Instruction, _ = m["instruction"].(string)
	if a, ok := m["app"].(string); ok && a != "" {
		c.App = a
	}
	c.Setup = jsonText(m["setup"])
	c.Judge = jsonText(m["judge"])
	if l, ok := m["abilities"].([]any); ok {
		for _, x := range l {
			if s, ok := x.(string); ok {
				c.Abilities = append(c.Abilities, s)
			}
		}
	}
	for k := range m {
		switch k {
		case "instruction", "app", "setup", "judge", "abilities", "fixes":
		default:
			c.Extra = append(c.Extra, k)
		}
	}
	sort.Strings(c.Extra)
	return c
}

// jsonText renders a reply value as JSON text; a string holding JSON is
// unwrapped, any other string is kept as is (and rejected later).
func jsonText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// roleContext is what the judger and fixer are shown besides the task: the
// app's knowledge document.
func roleContext(docs map[string]Doc, app string) string {
	if d, ok := docs[app]; ok {
		return "Knowledge document " + d.Name + ":\n\n" + d.Text
	}
	return ""
}

type openaiJudger struct {
	llm  *llmClient
	docs map[string]Doc
}

func (j openaiJudger) review(ctx context.Context, c *Candidate) ([]Issue, string, Cost, error) {
	user := "Task:\n" + c.JSONForModel() + "\n\n" + roleContext(j.docs, c.App)
	v, cost, err := j.llm.completeJSON(ctx, judgerPrompt+judgerSchema.String(), user, judgerSchema)
	if err != nil {
		if errors.Is(err, ErrEndpoint) || ctx.Err() != nil {
			return nil, "", cost, err
		}
		// A judger that gives no usable verdict does not pass the task.
		why := "no usable verdict: " + err.Error()
		return []Issue{{Role: RoleJudger, Code: codeUnreadable, Criterion: -1, Detail: why}}, why, cost, nil
	}
	reason, _ := v["reason"].(string)
	if v["verdict"] == "accept" {
		return nil, reason, cost, nil
	}
	return []Issue{{Role: RoleJudger, Code: "review", Criterion: -1, Detail: reason}}, reason, cost, nil
}

type openaiFixer struct {
	llm  *llmClient
	docs map[string]Doc
}

func (f openaiFixer) fix(ctx context.Context, _ *worker, c *Candidate, issues []Issue, _ int64) (*Candidate, []string, Cost, error) {
	var fb strings.Builder
	for _, is := range issues {
		fmt.Fprintf(&fb, "- %s: %s\n", is.Role, is.Detail)
	}
	user := "Task:\n" + c.JSONForModel() + "\n\nFeedback:\n" + fb.String() + "\n" + roleContext(f.docs, c.App)
	v, cost, err := f.llm.completeJSON(ctx, fixerPrompt+fixerSchema.String(), user, fixerSchema)
	if err != nil {
		if errors.Is(err, ErrEndpoint) || ctx.Err() != nil {
			return nil, nil, cost, err
		}
		return nil, nil, cost, nil
	}
	n := candidateFromReply(v, c.App)
	n.Method, n.Origin, n.Parents, n.Meta, n.Flaw, n.ref = c.Method, c.Origin, slices.Clone(c.Parents), c.Meta, c.Flaw, c.ref
	var fixes []string
	if l, ok := v["fixes"].([]any); ok {
		for _, x := range l {
			if s, ok := x.(string); ok {
				fixes = append(fixes, s)
			}
		}
	}
	if n.Instruction == c.Instruction && n.Setup == c.Setup && canonicalJudge(n.Judge) == canonicalJudge(c.Judge) {
		return nil, nil, cost, nil // nothing changed
	}
	if len(fixes) == 0 {
		fixes = []string{"rewritten by the model"}
	}
	return n, fixes, cost, nil
}

// JSONForModel renders the task part of a candidate for a model: no
// provenance, no planted-flaw label.
func (c *Candidate) JSONForModel() string {
	b, _ := json.MarshalIndent(map[string]any{"instruction": c.Instruction, "app": c.App,
		"setup": rawOrString(c.Setup), "judge": rawOrString(c.Judge), "abilities": c.Abilities}, "", "  ")
	return string(b)
}
