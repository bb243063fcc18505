package verify

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/cualake/cualake/pipeline/llm"
	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/schemas"
)

// OpenAIConfig points the openai Judge and Probe at an OpenAI-compatible
// chat endpoint (vLLM, SGLang, a hosted API).
type OpenAIConfig struct {
	BaseURL     string        // e.g. http://localhost:8000/v1
	Model       string        // model name sent in each request
	APIKey      string        // sent as a bearer token when set
	Temperature float64       // default 0 (verification is not sampled)
	MaxTokens   int           // per reply; default 1024
	Timeout     time.Duration // per request; default 60s
	Retries     int           // retries on timeouts, 429 and 5xx; default 3
	Backoff     time.Duration // first retry delay, doubled each time; default 500ms
	Repairs     int           // re-asks after a malformed reply; default 1 (negative: none)
	TextOnly    bool          // send accessibility-tree text instead of screenshots
	Client      *http.Client
}

type chatClient struct{ cfg OpenAIConfig }

func newChatClient(cfg OpenAIConfig) (*chatClient, error) {
	if cfg.BaseURL == "" {
		return nil, errors.New("openai verifier: no endpoint (set --endpoint or OPENAI_BASE_URL)")
	}
	if cfg.Model == "" {
		return nil, errors.New("openai verifier: no model (set --model)")
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = 1024
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.Retries == 0 {
		cfg.Retries = 3
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = 500 * time.Millisecond
	}
	if cfg.Repairs == 0 {
		cfg.Repairs = 1
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	return &chatClient{cfg: cfg}, nil
}

type chatMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

type chatReply struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
			Refusal string `json:"refusal"`
		} `json:"message"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// complete sends one chat request (with retries on timeouts, 429 and 5xx)
// and returns the reply text and the tokens it cost.
func (c *chatClient) complete(ctx context.Context, msgs []chatMessage) (string, int, error) {
	body, err := json.Marshal(map[string]any{"model": c.cfg.Model, "messages": msgs,
		"temperature": c.cfg.Temperature, "max_tokens": c.cfg.MaxTokens})
	if err != nil {
		return "", 0, fmt.Errorf("openai verifier: encode request: %w", err)
	}
	url := c.cfg.BaseURL + "/chat/completions"
	data, _, err := llm.Post(ctx, llm.Transport{URL: url, APIKey: c.cfg.APIKey, Timeout: c.cfg.Timeout,
		Retries: c.cfg.Retries, Backoff: c.cfg.Backoff, Client: c.cfg.Client}, body)
	if err != nil {
		return "", 0, fmt.Errorf("openai verifier: %w", err)
	}
	var out chatReply
	if err := json.Unmarshal(data, &out); err != nil {
		return "", 0, fmt.Errorf("openai verifier: POST %s: malformed reply: %v: %s", url, err, llm.Snippet(data))
	}
	if len(out.Choices) == 0 {
		return "", 0, fmt.Errorf("openai verifier: POST %s: the reply has no choices", url)
	}
	text := out.Choices[0].Message.Content
	if text == "" {
		text = out.Choices[0].Message.Refusal
	}
	return text, out.Usage.PromptTokens + out.Usage.CompletionTokens, nil
}

// jsonObject cuts the JSON object out of a reply (models wrap it in prose
// or code fences) and decodes it strictly.
func jsonObject(text string, v any) error {
	i, j := strings.Index(text, "{"), strings.LastIndex(text, "}")
	if i < 0 || j < i {
		return errors.New("no JSON object in the reply")
	}
	dec := json.NewDecoder(strings.NewReader(text[i : j+1]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the JSON object does not match the format: %w", err)
	}
	return nil
}

func imagePart(png []byte) map[string]any {
	return map[string]any{"type": "image_url", "image_url": map[string]string{
		"url": "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)}}
}

func textPart(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

// maxScreenText bounds one screen's tree text in a prompt.
const maxScreenText = 8000

func screenText(s *Screen) string {
	if s == nil {
		return "(no readable accessibility tree)"
	}
	t := s.Text()
	if len(t) > maxScreenText {
		t = t[:maxScreenText] + "\n…"
	}
	return t
}

// JudgeSystemPrompt is the openai Judge's instructions, after VeriCUA's
// Judge prompt (appendix I), with a strict JSON answer.
const JudgeSystemPrompt = `You evaluate whether a GUI agent completed a task on a desktop computer.
1. Write 3 to 5 concise, concrete, verifiable task-success criteria. Name both the condition and where its evidence is (app, folder, settings page, dialog).
2. Mark each criterion success, failure or uncertain from the evidence you are given.
3. Give the overall status: success when every criterion is success; otherwise failure when any is failure; otherwise uncertain.
Mark a criterion uncertain when the evidence does not show it (for example an unsaved document, a file in a folder that is not on screen, a setting on another page); a probe agent can then inspect the live desktop for you.
When criteria are given, keep their text and order unchanged: the probe's statuses are your baseline; override one only on clear, direct visual contradiction.
Use only the user's task as requirements. Do not treat action-history words such as done, saved or clicked OK as evidence by themselves.
Answer with exactly one JSON object and nothing else:
{"criteria": [{"criterion": "<concrete standard and where to check it>", "status": "success|failure|uncertain"}], "status": "success|failure|uncertain"}`

// ProbeSystemPrompt is the openai Probe's instructions, after VeriCUA's
// desktop Probe prompt (appendix I), with a strict JSON answer.
const ProbeSystemPrompt = `You are a GUI evidence probe. Another agent has already attempted the user's task on this desktop. Do not redo the task: inspect the current GUI state, collect just enough evidence, and update the judge's criteria.
Each step, answer with exactly one JSON object (one tool call) and nothing else:
{"tool": "click|double_click|right_click|scroll|key|hotkey|wait|criteria|answer", "x": 0, "y": 0, "direction": "up|down", "amount": 1, "keys": ["ctrl", "home"], "index": 1, "status": "success|failure|uncertain", "note": "what you saw"}
Exploration tools (click, double_click, right_click, scroll, key, hotkey, wait) navigate and reveal evidence; coordinates are integers on a 1000x1000 grid over the screen, origin top-left.
The criteria tool updates exactly one criterion (index counts from 1) with its status and a note; the judge only sees updates made with it. Call answer when you have updated every criterion you found evidence for.
Never modify the environment: do not save, delete, rename, move, type into documents, change settings, or send or discard mail. Such actions are refused and counted against you.`

// OpenAIJudge is the Judge on an OpenAI-compatible endpoint.
type OpenAIJudge struct{ c *chatClient }

// NewOpenAIJudge checks the configuration and returns the Judge.
func NewOpenAIJudge(cfg OpenAIConfig) (*OpenAIJudge, error) {
	c, err := newChatClient(cfg)
	if err != nil {
		return nil, err
	}
	return &OpenAIJudge{c: c}, nil
}

type judgeReply struct {
	Criteria []struct {
		Criterion string `json:"criterion"`
		Status    string `json:"status"`
	} `json:"criteria"`
	Status string `json:"status"`
}

// judgeMessages builds the round's prompt from the whole history
// (VeriCUA section 2.2 and appendix I): the first-round input (the
// instruction, the action history and the latest observations), then for
// every earlier round the Judge's criteria as its own turn and the Probe's
// evidence as the next user turn, so the model decides on
// H^(k) = psi(tau) + (C^(0), e^(0)) + ... + (C^(k-1), e^(k-1)). Earlier
// turns are replayed as the canonical JSON of what was judged, without the
// model's prose.
func (j *OpenAIJudge) judgeMessages(req *JudgeRequest) []chatMessage {
	in := req.In
	var b strings.Builder
	fmt.Fprintf(&b, "User Intent: %s\n", in.Task.Instruction)
	b.WriteString("Criteria: No criteria available.\nAction History:\n")
	for _, h := range in.History {
		b.WriteString("Step " + h + "\n")
	}
	fmt.Fprintf(&b, "The following %d observations are the latest, in chronological order.", len(in.Screens))
	parts := []any{textPart(b.String())}
	parts = append(parts, j.observations(in.Screens, in.Images)...)
	msgs := []chatMessage{{Role: "system", Content: JudgeSystemPrompt}, {Role: "user", Content: parts}}
	for k, r := range req.History {
		msgs = append(msgs, chatMessage{Role: "assistant", Content: judgmentJSON(r.Criteria)},
			chatMessage{Role: "user", Content: j.probeTurn(in, req.History, k)})
	}
	return msgs
}

// judgmentJSON is a round's criteria in the Judge's answer format.
func judgmentJSON(cs []Criterion) string {
	var r judgeReply
	for _, c := range cs {
		r.Criteria = append(r.Criteria, struct {
			Criterion string `json:"criterion"`
			Status    string `json:"status"`
		}{c.Text, c.Status})
	}
	r.Status = Overall(Statuses(cs))
	b, _ := json.Marshal(r) // strings only: cannot fail
	return string(b)
}

// probeTurn is round k's evidence (e^(k)) after VeriCUA's "Input after
// probing": the criteria with the Probe's statuses, what it reported this
// round, and its screenshots, each labelled with the criteria it supports.
func (j *OpenAIJudge) probeTurn(in *Input, h []Round, k int) []any {
	r := h[k]
	var b strings.Builder
	fmt.Fprintf(&b, "Probe round %d.\nUser Intent: %s\nCriteria:\n%s", k+1, in.Task.Instruction, FormatCriteria(r.Probed))
	var notes []string
	for i := range r.Probed {
		if f := probeFindings(h, i)[k]; f != "" {
			notes = append(notes, fmt.Sprintf("%d. %s", i+1, f))
		}
	}
	if len(notes) > 0 {
		b.WriteString("Probe notes:\n" + strings.Join(notes, "\n") + "\n")
	}
	switch {
	case len(r.Evidence) == 0:
		b.WriteString("The probe returned no screenshots this round. Judge from its notes, the evidence of earlier rounds and the latest observations of the original trajectory above.")
		return []any{textPart(b.String())}
	case j.c.cfg.TextOnly:
		b.WriteString("The probe's screenshots are not shown (text only). Judge from its notes, the evidence of earlier rounds and the latest observations of the original trajectory above.")
		return []any{textPart(b.String())}
	}
	b.WriteString("The attached screenshots are evidence the probe collected for the criteria, in chronological order.")
	parts := []any{textPart(b.String())}
	for _, e := range r.Evidence {
		var labels []string
		for i, c := range r.Probed {
			if slices.Contains(c.Evidence, e.Hash) {
				labels = append(labels, fmt.Sprint(i+1))
			}
		}
		if len(labels) > 0 {
			parts = append(parts, textPart("Evidence image for criteria "+strings.Join(labels, ", ")+":"))
		}
		parts = append(parts, imagePart(e.Bytes))
	}
	return parts
}

func (j *OpenAIJudge) observations(screens []*Screen, images [][]byte) []any {
	var out []any
	for i, s := range screens {
		if i < len(images) && images[i] != nil && !j.c.cfg.TextOnly {
			out = append(out, imagePart(images[i]))
			continue
		}
		out = append(out, textPart(fmt.Sprintf("Observation %d (visible accessibility tree):\n%s", i+1, screenText(s))))
	}
	return out
}

// parse checks a reply against the format and the round's rules.
func parseJudgment(text string, prev []Criterion) ([]Criterion, string, error) {
	var r judgeReply
	if err := jsonObject(text, &r); err != nil {
		return nil, "", err
	}
	if prev == nil && (len(r.Criteria) < 3 || len(r.Criteria) > MaxCriteria) {
		return nil, "", fmt.Errorf("%d criteria, want 3 to %d", len(r.Criteria), MaxCriteria)
	}
	if prev != nil && len(r.Criteria) != len(prev) {
		return nil, "", fmt.Errorf("%d criteria, want the %d given, unchanged", len(r.Criteria), len(prev))
	}
	out := make([]Criterion, len(r.Criteria))
	for i, c := range r.Criteria {
		if strings.TrimSpace(c.Criterion) == "" {
			return nil, "", fmt.Errorf("criterion %d is empty", i+1)
		}
		if err := validStatus(c.Status); err != nil {
			return nil, "", fmt.Errorf("criterion %d: %w", i+1, err)
		}
		out[i] = Criterion{Text: c.Criterion, Status: c.Status, Note: "judge"}
		if prev != nil {
			// The criteria stay as written in the first round; the probe's
			// evidence stays attached.
			out[i].Text, out[i].Evidence, out[i].Note = prev[i].Text, prev[i].Evidence, prev[i].Note
		}
	}
	if err := validStatus(r.Status); err != nil {
		return nil, "", fmt.Errorf("overall %w", err)
	}
	return out, r.Status, nil
}

// Judge implements Judge. A reply that breaks the format is sent back with
// the reason (Repairs times); if it still does, the judgment is invalid
// (an unresolved attempt), not an error. Transport failures are errors.
func (j *OpenAIJudge) Judge(ctx context.Context, req *JudgeRequest) (*Judgment, error) {
	msgs := j.judgeMessages(req)
	out := &Judgment{}
	for try := 0; ; try++ {
		text, tokens, err := j.c.complete(ctx, msgs)
		if err != nil {
			return nil, err
		}
		out.Tokens += tokens
		cs, status, perr := parseJudgment(text, req.Criteria())
		if perr == nil {
			out.Criteria = cs
			keepTrail(out.Criteria, req.History)
			// The overall rule is fixed; a status that contradicts the
			// criteria is corrected rather than trusted.
			out.Status = Overall(Statuses(cs))
			if status != out.Status {
				for i := range out.Criteria {
					out.Criteria[i].Note = strings.TrimSpace(out.Criteria[i].Note + " (overall status " + status + " corrected)")
					break
				}
			}
			out.Probe = out.Status == Uncertain
			return out, nil
		}
		if try >= j.c.cfg.Repairs {
			out.Invalid = "the Judge's reply broke the format: " + perr.Error()
			out.Criteria = req.Criteria()
			return out, nil
		}
		msgs = append(msgs, chatMessage{Role: "assistant", Content: text},
			chatMessage{Role: "user", Content: "Your reply is invalid: " + perr.Error() + ". Answer again with only the JSON object in the required format."})
	}
}

// OpenAIProbe is the Probe on an OpenAI-compatible endpoint: a GUI agent
// loop over the live environment, every action through Live's guard.
type OpenAIProbe struct{ c *chatClient }

// NewOpenAIProbe checks the configuration and returns the Probe.
func NewOpenAIProbe(cfg OpenAIConfig) (*OpenAIProbe, error) {
	c, err := newChatClient(cfg)
	if err != nil {
		return nil, err
	}
	return &OpenAIProbe{c: c}, nil
}

type probeCall struct {
	Tool      string   `json:"tool"`
	X         *int     `json:"x"`
	Y         *int     `json:"y"`
	Direction string   `json:"direction"`
	Amount    int      `json:"amount"`
	Keys      []string `json:"keys"`
	Index     int      `json:"index"`
	Status    string   `json:"status"`
	Note      string   `json:"note"`
}

// toAction turns a GUI tool call into a simulator action.
func (p probeCall) toAction() (schemas.Action, error) {
	pt := func(kind string) (schemas.Action, error) {
		if p.X == nil || p.Y == nil {
			return schemas.Action{}, fmt.Errorf("%s needs x and y", kind)
		}
		return action.At(kind, *p.X, *p.Y), nil
	}
	switch p.Tool {
	case "click", "double_click", "right_click":
		return pt(p.Tool)
	case "scroll":
		a := action.ScrollAction(p.Direction, max(p.Amount, 1))
		if p.X != nil && p.Y != nil {
			a = action.ScrollAt(p.Direction, max(p.Amount, 1), *p.X, *p.Y)
		}
		return a, action.Validate(a)
	case "key":
		if len(p.Keys) != 1 {
			return schemas.Action{}, errors.New("key needs one key")
		}
		a := action.KeyAction(p.Keys[0], 1)
		return a, action.Validate(a)
	case "hotkey":
		a := action.HotkeyAction(p.Keys...)
		return a, action.Validate(a)
	case "wait":
		return action.Simple(action.Wait), nil
	}
	return schemas.Action{}, fmt.Errorf("unknown tool %q", p.Tool)
}

// Probe implements Probe. Each model call is one probe turn; the round ends
// at answer, when the GUI step budget is spent, or after Budget + number of
// criteria + 2 calls. Malformed calls and refused actions are reported back
// to the model on the next turn.
func (p *OpenAIProbe) Probe(ctx context.Context, req ProbeRequest) (ProbeReport, error) {
	rep := ProbeReport{Criteria: cloneCriteria(req.Criteria)}
	start := req.Live.Steps()
	var history []string
	feedback := ""
	maxCalls := req.Budget + len(req.Criteria) + 2
	for call := 0; call < maxCalls && req.Live.Steps()-start < req.Budget; call++ {
		msgs, err := p.stepMessages(req, rep.Criteria, history, feedback)
		if err != nil {
			return rep, err
		}
		text, tokens, err := p.c.complete(ctx, msgs)
		if err != nil {
			return rep, err
		}
		rep.Tokens += tokens
		feedback = ""
		var pc probeCall
		if err := jsonObject(text, &pc); err != nil {
			feedback = "Your last reply was invalid: " + err.Error()
			continue
		}
		switch pc.Tool {
		case "answer":
			return rep, nil
		case "criteria":
			if pc.Index < 1 || pc.Index > len(rep.Criteria) || validStatus(pc.Status) != nil {
				feedback = fmt.Sprintf("criteria needs an index from 1 to %d and a status success, failure or uncertain", len(rep.Criteria))
				continue
			}
			c := &rep.Criteria[pc.Index-1]
			c.Status, c.Note, c.tried = pc.Status, "probe: "+pc.Note, true
			shot, ok, err := req.Live.Shot()
			if err != nil {
				return rep, err
			}
			if ok {
				c.Evidence = append(c.Evidence, shot.Hash)
				rep.Evidence = append(rep.Evidence, shot)
			}
			history = append(history, fmt.Sprintf("criteria %d -> %s", pc.Index, pc.Status))
		default:
			a, err := pc.toAction()
			if err != nil {
				feedback = "Your last tool call was invalid: " + err.Error()
				continue
			}
			why, err := req.Live.Act(a)
			if err != nil {
				return rep, err
			}
			desc, _ := action.Format(a)
			if why != "" {
				feedback = "Your last action (" + desc + ") was refused: " + why + ". The probe must not modify the environment."
				history = append(history, desc+" (refused)")
				continue
			}
			history = append(history, desc)
		}
	}
	return rep, nil
}

func (p *OpenAIProbe) stepMessages(req ProbeRequest, cs []Criterion, history []string, feedback string) ([]chatMessage, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "User task: %s\nCurrent criteria:\n%s", req.Task.Instruction, FormatCriteria(cs))
	if len(req.Order) > 0 {
		var names []string
		for _, i := range req.Order {
			names = append(names, fmt.Sprint(i+1))
		}
		b.WriteString("Check first: criteria " + strings.Join(names, ", ") + "\n")
	}
	prev := "None"
	if len(history) > 0 {
		prev = strings.Join(history, "; ")
	}
	fmt.Fprintf(&b, "Previous actions: %s\n", prev)
	if feedback != "" {
		b.WriteString(feedback + "\n")
	}
	b.WriteString("Generate the next step: explore with an action tool, or update exactly one criterion with the criteria tool.\n<observation>")
	parts := []any{textPart(b.String())}
	png, err := req.Live.PNG()
	if err != nil {
		return nil, err
	}
	if png != nil && !p.c.cfg.TextOnly {
		parts = append(parts, imagePart(png))
	} else {
		s, err := ParseScreen(req.Live.d.Tree())
		if err != nil {
			return nil, err
		}
		parts = append(parts, textPart(screenText(s)))
	}
	parts = append(parts, textPart("</observation>"))
	return []chatMessage{{Role: "system", Content: ProbeSystemPrompt}, {Role: "user", Content: parts}}, nil
}

// NewOpenAIRunner returns the openai strategy's runner: Judge and Probe on
// the same endpoint.
func NewOpenAIRunner(cfg OpenAIConfig, maxRounds, stepsPerRound int, screenshots bool) (*Runner, error) {
	j, err := NewOpenAIJudge(cfg)
	if err != nil {
		return nil, err
	}
	p, err := NewOpenAIProbe(cfg)
	if err != nil {
		return nil, err
	}
	return &Runner{Name: StrategyOpenAI, Judge: j, Probe: p, MaxRounds: maxRounds, StepsPerRound: stepsPerRound, Screenshots: screenshots}, nil
}
