package rollout

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/cualake/cualake/pipeline/llm"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/schemas"
)

// OpenAIConfig points the openai policy at any OpenAI-compatible chat
// endpoint (vLLM, SGLang, a hosted API).
type OpenAIConfig struct {
	BaseURL     string        // e.g. http://localhost:8000/v1
	Model       string        // model name sent in each request
	APIKey      string        // sent as a bearer token when set
	Temperature float64       // default 0.8
	MaxTokens   int           // default 512
	Timeout     time.Duration // per request; default 60s
	Retries     int           // retries on timeouts, 429 and 5xx; default 3
	Window      int           // screenshots kept in context; default 3
	Backoff     time.Duration // first retry delay, doubled each time; default 500ms
	Client      *http.Client
}

// OpenAI is the openai policy.
type OpenAI struct{ cfg OpenAIConfig }

// NewOpenAI checks the configuration and returns the policy.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if cfg.BaseURL == "" {
		return nil, errors.New("openai policy: no endpoint (set --endpoint or OPENAI_BASE_URL)")
	}
	if cfg.Model == "" {
		return nil, errors.New("openai policy: no model (set --model)")
	}
	if cfg.Temperature == 0 {
		cfg.Temperature = 0.8
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = 512
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.Retries == 0 {
		cfg.Retries = 3
	}
	if cfg.Window == 0 {
		cfg.Window = 3
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = 500 * time.Millisecond
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	return &OpenAI{cfg: cfg}, nil
}

// Name implements AgentFactory.
func (o *OpenAI) Name() string { return "openai:" + o.cfg.Model }

// Version implements AgentFactory.
func (o *OpenAI) Version() int32 { return 0 }

// New implements AgentFactory.
func (o *OpenAI) New(schemas.Task, int64) (Agent, error) { return &openaiAgent{cfg: o.cfg}, nil }

type openaiAgent struct{ cfg OpenAIConfig }

// SystemPrompt tells the model the action format; written for cualake.
const SystemPrompt = `You operate a desktop computer through its screen. Each turn you see a screenshot.
Think briefly, then give exactly one action on the last line, prefixed with "Action:".
Coordinates are on a 1000x1000 grid over the screen (0,0 top-left).
Actions: click X Y | double_click X Y | right_click X Y | drag X Y X2 Y2 | move X Y |
type TEXT | key NAME | hotkey KEY1 KEY2 | scroll up|down N | wait | done | fail
Answer "Action: done" when the task is complete and "Action: fail" if it is impossible.`

type chatMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// messages builds the context: the instruction, older turns as a compact
// action history, and the last Window screenshots with their replies.
func (a *openaiAgent) messages(task schemas.Task, obs simdesk.Obs, history []Turn) []chatMessage {
	msgs := []chatMessage{{Role: "system", Content: SystemPrompt}}
	first := max(0, len(history)-(a.cfg.Window-1))
	var hist []string
	for i, t := range history[:first] {
		hist = append(hist, fmt.Sprintf("%d. %s", i+1, t.Decision.RawAction))
	}
	intro := "Task: " + task.Instruction
	if len(hist) > 0 {
		intro += "\nEarlier actions:\n" + strings.Join(hist, "\n")
	}
	msgs = append(msgs, chatMessage{Role: "user", Content: intro})
	image := func(o simdesk.Obs) any {
		if o.Screenshot == nil {
			return "Accessibility tree:\n" + string(o.Tree)
		}
		return []map[string]any{{"type": "image_url", "image_url": map[string]string{
			"url": "data:image/png;base64," + base64.StdEncoding.EncodeToString(o.Screenshot)}}}
	}
	for _, t := range history[first:] {
		msgs = append(msgs, chatMessage{Role: "user", Content: image(t.Obs)}, chatMessage{Role: "assistant", Content: t.Decision.Response})
	}
	return append(msgs, chatMessage{Role: "user", Content: image(obs)})
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
			Refusal string `json:"refusal"`
		} `json:"message"`
		Logprobs *struct {
			Content []struct {
				Token   string  `json:"token"`
				Logprob float64 `json:"logprob"`
			} `json:"content"`
		} `json:"logprobs"`
	} `json:"choices"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
	} `json:"usage"`
}

// Act implements Agent. A reply without a parseable action is a no-op
// action of kind unknown (the environment reports it), not an error; an
// endpoint that keeps failing is an error.
func (a *openaiAgent) Act(ctx context.Context, task schemas.Task, obs simdesk.Obs, history []Turn) (Decision, error) {
	body, err := json.Marshal(map[string]any{
		"model": a.cfg.Model, "messages": a.messages(task, obs, history), "temperature": a.cfg.Temperature,
		"max_tokens": a.cfg.MaxTokens, "logprobs": true,
		// vLLM returns tokens as "token_id:N" with this, so ids are exact.
		"return_tokens_as_token_ids": true,
	})
	if err != nil {
		return Decision{}, err
	}
	resp, err := a.post(ctx, body)
	if err != nil {
		return Decision{}, err
	}
	if len(resp.Choices) == 0 {
		return Decision{}, errors.New("openai policy: the reply has no choices")
	}
	ch := resp.Choices[0]
	text := ch.Message.Content
	if text == "" && ch.Message.Refusal != "" {
		text = ch.Message.Refusal
	}
	d := Decision{Response: text, PromptTokens: int32(resp.Usage.PromptTokens)}
	d.RawAction, d.Action = parseReply(text, obs)
	if ch.Logprobs != nil {
		ids := make([]int32, 0, len(ch.Logprobs.Content))
		lps := make([]float32, 0, len(ch.Logprobs.Content))
		for _, t := range ch.Logprobs.Content {
			id, ok := strings.CutPrefix(t.Token, "token_id:")
			n, err := strconv.ParseInt(id, 10, 32)
			if !ok || err != nil || t.Logprob > 0 {
				ids, lps = nil, nil // ids unknown: keep neither, never half
				break
			}
			ids, lps = append(ids, int32(n)), append(lps, float32(t.Logprob))
		}
		d.ResponseIDs, d.Logprobs = ids, lps
	}
	return d, nil
}

var actionLine = regexp.MustCompile(`(?im)^\s*action:\s*(.+?)\s*$`)
var codeBlock = regexp.MustCompile("(?s)```(?:python)?\\s*\\n(.*?)```")

// parseReply finds the action: an "Action:" line in our compact form, else
// a pyautogui code block (OSWorld style), else a bare DONE/FAIL/WAIT.
func parseReply(text string, obs simdesk.Obs) (string, schemas.Action) {
	if m := actionLine.FindAllStringSubmatch(text, -1); len(m) > 0 {
		raw := m[len(m)-1][1]
		if a, err := action.Parse(raw); err == nil {
			return raw, a
		}
		return raw, schemas.Action{Kind: "unknown", Text: raw}
	}
	code := text
	if m := codeBlock.FindStringSubmatch(text); m != nil {
		code = m[1]
	}
	if acts, err := action.ParsePyAutoGUI(code, action.Screen{Width: obs.Width, Height: obs.Height}); err == nil && len(acts) > 0 {
		return strings.TrimSpace(code), acts[0]
	}
	return strings.TrimSpace(text), schemas.Action{Kind: "unknown", Text: strings.TrimSpace(text)}
}

// post sends one request with retries on timeouts, 429 and 5xx.
func (a *openaiAgent) post(ctx context.Context, body []byte) (*chatResponse, error) {
	url := a.cfg.BaseURL + "/chat/completions"
	data, _, err := llm.Post(ctx, llm.Transport{URL: url, APIKey: a.cfg.APIKey, Timeout: a.cfg.Timeout,
		Retries: a.cfg.Retries, Backoff: a.cfg.Backoff, Client: a.cfg.Client}, body)
	if err != nil {
		return nil, fmt.Errorf("openai policy: %w", err)
	}
	var out chatResponse
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("openai policy: POST %s: malformed reply: %v: %s", url, err, llm.Snippet(data))
	}
	return &out, nil
}
