package synthesize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/rollout"
	"github.com/cualake/cualake/pipeline/simdesk"
)

// scripted is an OpenAI-compatible server whose replies a test scripts per
// role (told apart by their system prompts).
type scripted struct {
	mu    sync.Mutex
	calls map[string]int
	reply func(role string, n int, req chatRequest) (status int, body string)
}

type chatRequest struct {
	Model    string    `json:"model"`
	Messages []chatMsg `json:"messages"`
}

func (s *scripted) server(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		cr := chatRequest{Model: req.Model}
		for _, m := range req.Messages {
			text, _ := m.Content.(string)
			cr.Messages = append(cr.Messages, chatMsg{Role: m.Role, Content: text})
		}
		sys := cr.Messages[0].Content
		role := "checker"
		switch {
		case strings.HasPrefix(sys, "You design"):
			role = RoleProposer
		case strings.HasPrefix(sys, "You review"):
			role = RoleJudger
		case strings.HasPrefix(sys, "You repair"):
			role = RoleFixer
		}
		s.mu.Lock()
		n := s.calls[role]
		s.calls[role]++
		s.mu.Unlock()
		status, body := s.reply(role, n, cr)
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// completion wraps content as a chat completion with token usage.
func completion(content string) string {
	b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
		"usage": map[string]any{"prompt_tokens": 90, "completion_tokens": 10, "total_tokens": 100}})
	return string(b)
}

func refusal(text string) string {
	b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": "", "refusal": text}}},
		"usage": map[string]any{"total_tokens": 20}})
	return string(b)
}

func llmParams(srv *httptest.Server) Params {
	p := DefaultParams()
	p.Workers = 1
	p.LLM = LLMConfig{BaseURL: srv.URL + "/v1", Model: "scripted", Timeout: 5 * time.Second, Retries: 1, Backoff: time.Millisecond, Client: srv.Client()}
	return p
}

// freeToggle is a switch no built-in task turns on.
func freeToggle(t *testing.T) *simdesk.SettingDef {
	t.Helper()
	pool := simdesk.Pool()
	for _, def := range settingsOfKind(simdesk.KindToggle) {
		if def.Default != "false" {
			continue
		}
		used := false
		for _, task := range pool {
			used = used || strings.Contains(task.Judge, `"`+def.Key+`"`)
		}
		if !used {
			return def
		}
	}
	t.Fatal("every switch is used by the pool")
	return nil
}

func TestOpenAIRolesWithScriptedReplies(t *testing.T) {
	def := freeToggle(t)
	dup := poolTask(t, "settings-choice-002")
	good := map[string]any{"instruction": fmt.Sprintf("Turn on %q.", def.Label), "app": "settings", "setup": []any{},
		"judge": map[string]any{"func": "is_true", "result": map[string]any{"type": "setting", "key": def.Key}}, "abilities": []any{"toggle"}}
	code := map[string]any{"instruction": "Enable dark mode.", "app": "settings", "setup": []any{},
		"judge": "def check(state):\n    return state['display.dark_mode']", "python": "import os"}
	var dupJudge any
	_ = json.Unmarshal([]byte(dup.Judge), &dupJudge)
	copyOfPool := map[string]any{"instruction": dup.Instruction, "app": "settings", "setup": []any{}, "judge": dupJudge}
	s := &scripted{calls: map[string]int{}, reply: func(role string, n int, req chatRequest) (int, string) {
		last := req.Messages[len(req.Messages)-1].Content
		switch role {
		case RoleProposer:
			if n == 0 {
				return 200, completion("Sure! Here are three tasks you could use.")
			}
			if !strings.Contains(last, "could not be used") {
				return 500, "expected a re-ask"
			}
			b, _ := json.Marshal(map[string]any{"candidates": []any{good, code, copyOfPool}})
			return 200, completion("```json\n" + string(b) + "\n```")
		case RoleJudger:
			switch {
			case n == 0:
				return 200, completion(`{"verdict": "maybe", "reason": "not sure"}`)
			case strings.Contains(last, "Display settings"):
				return 200, completion(`{"verdict": "accept", "reason": "The instruction names the switch, its page and the direction; the judge checks exactly that."}`)
			default:
				return 200, completion(`{"verdict": "reject", "reason": "The instruction does not say on which settings page the switch is."}`)
			}
		case RoleFixer:
			if strings.Contains(last, "def check") {
				return 200, refusal("I can't help with that.")
			}
			fixed := map[string]any{}
			for k, v := range good {
				fixed[k] = v
			}
			fixed["instruction"] = fmt.Sprintf("Turn on %q in the Display settings.", def.Label)
			fixed["fixes"] = []any{"named the settings page"}
			b, _ := json.Marshal(fixed)
			return 200, completion(string(b))
		}
		return 500, "unexpected role " + role
	}}
	srv := s.server(t)
	p := llmParams(srv)
	p.Proposer, p.Judger, p.Fixer, p.Checker = BackendOpenAI, BackendOpenAI, BackendOpenAI, BackendBuiltin
	p.Count, p.PerCall, p.MaxCandidates = 1, 3, 3
	res, err := Run(context.Background(), Input{Docs: mustDocs(t, "settings")}, p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Config != "proposer=openai,judger=openai,checker=builtin,fixer=openai" {
		t.Fatalf("config %q", res.Summary.Config)
	}
	if len(res.Records) != 4 || len(res.Accepted) != 1 {
		for _, r := range res.Records {
			t.Logf("%+v", r)
		}
		t.Fatalf("%d rows, %d accepted", len(res.Records), len(res.Accepted))
	}
	a0, a1, b, c := res.Records[0], res.Records[1], res.Records[2], res.Records[3]
	if a0.JudgerVerdict != "reject" || !strings.Contains(a0.JudgerReason, "page") || a0.Calls < 2+1+2+1 || a0.Tokens < 500 {
		t.Errorf("round 0 of the good candidate: %+v", a0)
	}
	if !a1.Accepted || !a1.Executable || !strings.Contains(a1.Fixes, "named the settings page") || a1.JudgerVerdict != "accept" {
		t.Errorf("round 1 of the good candidate: %+v", a1)
	}
	if b.RuleValid || !strings.Contains(b.RuleReason, "never run") || !strings.Contains(b.RuleReason, `"python"`) || b.Dropped != "unfixable" {
		t.Errorf("code candidate: %+v", b)
	}
	if c.Dropped != "duplicate" || !strings.Contains(c.RuleReason, dup.TaskID) {
		t.Errorf("copy of the pool: %+v", c)
	}
	sim, _ := simdesk.NewSim(simdesk.Options{TreeOnly: true})
	verifyTask(t, sim, res.Accepted[0])
	if res.Summary.Tokens == 0 || res.Summary.TokensPerAccepted == 0 {
		t.Errorf("token cost missing: %+v", res.Summary)
	}
}

func TestOpenAIInvalidRepliesAndRefusals(t *testing.T) {
	s := &scripted{calls: map[string]int{}, reply: func(role string, n int, _ chatRequest) (int, string) {
		if n%2 == 0 {
			return 200, completion(`{"candidates": "not a list"`)
		}
		return 200, refusal("I'm sorry, I cannot do that.")
	}}
	srv := s.server(t)
	p := llmParams(srv)
	p.Proposer, p.Count, p.MaxCandidates, p.PerCall = BackendOpenAI, 1, 2, 1
	res, err := Run(context.Background(), Input{Docs: mustDocs(t, "files")}, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Accepted) != 0 || len(res.Records) != 2 {
		t.Fatalf("%d accepted, %d rows", len(res.Accepted), len(res.Records))
	}
	for _, r := range res.Records {
		if r.Dropped != "invalid-reply" || r.RuleValid || !strings.Contains(r.RuleReason, "not a task") || r.Calls == 0 {
			t.Errorf("row %+v", r)
		}
	}
	if !strings.Contains(res.Records[1].Candidate, "refused") {
		t.Errorf("the refusal is not recorded: %s", res.Records[1].Candidate)
	}
}

func TestOpenAIEndpointDownStopsTheStage(t *testing.T) {
	s := &scripted{calls: map[string]int{}, reply: func(string, int, chatRequest) (int, string) { return 503, "overloaded" }}
	srv := s.server(t)
	p := llmParams(srv)
	p.Judger, p.Count = BackendOpenAI, 2
	_, err := Run(context.Background(), Input{Docs: mustDocs(t, "files")}, p)
	if !errors.Is(err, ErrEndpoint) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("err %v", err)
	}
	if _, err := Run(context.Background(), Input{}, Params{Judger: BackendOpenAI}); err == nil || !strings.Contains(err.Error(), "endpoint") {
		t.Fatalf("no endpoint: %v", err)
	}
}

// The openai checker acts in the simulator through rollout's policy
// interface; a policy that stops at once does not reach the goal.
func TestOpenAICheckerActsThroughThePolicyInterface(t *testing.T) {
	s := &scripted{calls: map[string]int{}, reply: func(role string, _ int, req chatRequest) (int, string) {
		if role != "checker" || req.Messages[0].Content != rollout.SystemPrompt {
			return 500, "only the checker should call"
		}
		return 200, completion("The task looks done.\nAction: done")
	}}
	srv := s.server(t)
	p := llmParams(srv)
	p.Checker, p.Count, p.MaxCandidates, p.PerCall, p.MaxRounds, p.FlawRate = BackendOpenAI, 1, 1, 1, 0, -1
	p.CheckerTreeOnly = true
	res, err := Run(context.Background(), Input{Docs: mustDocs(t, "settings")}, p)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Records[0]
	if r.Accepted || r.CheckerReachable || !strings.Contains(r.CheckerReason, "did not reach the goal") || r.Calls < 2 || r.Dropped != "max-rounds" {
		t.Fatalf("row %+v", r)
	}
	if s.calls["checker"] != 1 {
		t.Fatalf("checker calls %d", s.calls["checker"])
	}
}

func TestSchemaValidation(t *testing.T) {
	for _, tc := range []struct {
		reply string
		ok    bool
	}{
		{`{"verdict":"accept","reason":"fine"}`, true},
		{"Here you go:\n```json\n{\"verdict\":\"reject\",\"reason\":\"vague\"}\n```", true},
		{`{"verdict":"accept"}`, false},
		{`{"verdict":"yes","reason":"x"}`, false},
		{`{"verdict":"accept","reason":3}`, false},
		{`[1,2]`, false},
		{`no json here`, false},
	} {
		v, err := parseJSONReply(tc.reply)
		if err == nil {
			err = judgerSchema.validate(v, "$")
		}
		if (err == nil) != tc.ok {
			t.Errorf("%q: %v", tc.reply, err)
		}
	}
	if !strings.Contains(judgerSchema.String(), `"enum"`) {
		t.Errorf("schema rendering: %s", judgerSchema)
	}
}
