package synthesize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/cualake/cualake/pipeline/llm"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// LLMConfig points the openai roles at an OpenAI-compatible chat endpoint
// (vLLM, SGLang, a hosted API).
type LLMConfig struct {
	BaseURL     string        `json:"endpoint"` // e.g. http://localhost:8000/v1
	Model       string        `json:"model"`
	APIKey      string        `json:"-"`                     // sent as a bearer token when set; never recorded
	Temperature float64       `json:"temperature,omitempty"` // default 0.7
	MaxTokens   int           `json:"max_tokens,omitempty"`  // default 2048
	Timeout     time.Duration `json:"-"`                     // per request; default 120s
	Retries     int           `json:"-"`                     // retries on timeouts, 429 and 5xx; default 3
	Backoff     time.Duration `json:"-"`                     // first retry delay, doubled each time; default 500ms
	Repairs     int           `json:"-"`                     // re-asks after an unusable reply; default 2, negative for none
	Client      *http.Client  `json:"-"`
}

// ErrRefused marks a model that declined to answer.
var ErrRefused = errors.New("the model refused")

// errUnusable marks a reply that stayed invalid after the re-asks.
var errUnusable = errors.New("unusable reply")

// ErrEndpoint marks an endpoint that could not be reached or kept failing;
// it stops the stage (unlike a bad reply, which only costs its candidate).
var ErrEndpoint = errors.New("LLM endpoint failed")

type llmClient struct{ cfg LLMConfig }

func newLLMClient(cfg LLMConfig) (*llmClient, error) {
	if cfg.BaseURL == "" {
		return nil, errors.New("synthesize: openai roles need an endpoint (--endpoint or OPENAI_BASE_URL)")
	}
	if cfg.Model == "" {
		return nil, errors.New("synthesize: openai roles need a model (--model)")
	}
	if cfg.Temperature == 0 {
		cfg.Temperature = 0.7
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = 2048
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 120 * time.Second
	}
	if cfg.Retries == 0 {
		cfg.Retries = 3
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = 500 * time.Millisecond
	}
	if cfg.Repairs == 0 {
		cfg.Repairs = 2
	}
	if cfg.Repairs < 0 {
		cfg.Repairs = 0
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	return &llmClient{cfg: cfg}, nil
}

type chatMsg struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatReply struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
			Refusal string `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
		TotalTokens      int64 `json:"total_tokens"`
	} `json:"usage"`
}

var refusalRe = regexp.MustCompile(`(?i)^\s*(i'm sorry|i am sorry|i can't|i cannot|i won't|sorry, (but )?i|as an ai)`)

// completeJSON asks for one JSON object that matches sch. A reply that is
// not JSON or does not match is sent back with what is wrong, up to Repairs
// times; every request counts in the cost.
func (c *llmClient) completeJSON(ctx context.Context, system, user string, sch *schema) (map[string]any, Cost, error) {
	var cost Cost
	msgs := []chatMsg{{Role: "system", Content: system}, {Role: "user", Content: user}}
	var last error
	for attempt := 0; attempt <= c.cfg.Repairs; attempt++ {
		text, refusal, err := c.chat(ctx, msgs, &cost)
		if err != nil {
			return nil, cost, err
		}
		if refusal != "" {
			return nil, cost, fmt.Errorf("%w: %s", ErrRefused, clip(refusal, 200))
		}
		v, err := parseJSONReply(text)
		if err == nil {
			err = sch.validate(v, "$")
		}
		if err == nil {
			return v.(map[string]any), cost, nil
		}
		if !strings.Contains(text, "{") && refusalRe.MatchString(text) {
			return nil, cost, fmt.Errorf("%w: %s", ErrRefused, clip(text, 200))
		}
		last = err
		msgs = append(msgs, chatMsg{Role: "assistant", Content: text},
			chatMsg{Role: "user", Content: "That reply could not be used: " + err.Error() + ". Answer again with only one JSON object that matches the schema, and nothing else."})
	}
	return nil, cost, fmt.Errorf("%w after %d attempts: %v", errUnusable, c.cfg.Repairs+1, last)
}

// chat sends one request with retries on timeouts, 429 and 5xx; it returns
// the reply text, or the refusal text when the model declined.
func (c *llmClient) chat(ctx context.Context, msgs []chatMsg, cost *Cost) (string, string, error) {
	body, err := json.Marshal(map[string]any{"model": c.cfg.Model, "messages": msgs, "temperature": c.cfg.Temperature,
		"max_tokens": c.cfg.MaxTokens, "response_format": map[string]string{"type": "json_object"}})
	if err != nil {
		return "", "", err
	}
	url := c.cfg.BaseURL + "/chat/completions"
	data, attempts, err := llm.Post(ctx, llm.Transport{URL: url, APIKey: c.cfg.APIKey, Timeout: c.cfg.Timeout,
		Retries: c.cfg.Retries, Backoff: c.cfg.Backoff, Client: c.cfg.Client}, body)
	cost.Calls += int64(attempts)
	if err != nil {
		if ctx.Err() != nil {
			return "", "", ctx.Err()
		}
		return "", "", fmt.Errorf("%w: %v", ErrEndpoint, err)
	}
	var out chatReply
	if err := json.Unmarshal(data, &out); err != nil {
		return "", "", fmt.Errorf("%w: POST %s: the reply is not a chat completion: %v", ErrEndpoint, url, err)
	}
	if out.Usage.TotalTokens > 0 {
		cost.Tokens += out.Usage.TotalTokens
	} else {
		cost.Tokens += out.Usage.PromptTokens + out.Usage.CompletionTokens
	}
	if len(out.Choices) == 0 {
		return "", "", fmt.Errorf("%w: POST %s: the reply has no choices", ErrEndpoint, url)
	}
	ch := out.Choices[0]
	if ch.Message.Refusal != "" {
		return "", ch.Message.Refusal, nil
	}
	if ch.FinishReason == "content_filter" {
		return "", "content filter: " + ch.Message.Content, nil
	}
	return ch.Message.Content, "", nil
}

var fenceRe = regexp.MustCompile("(?s)```(?:json)?\\s*\\n?(.*?)```")

// parseJSONReply reads the JSON object of a reply, tolerating a code fence
// or prose around it.
func parseJSONReply(text string) (any, error) {
	s := strings.TrimSpace(text)
	if m := fenceRe.FindStringSubmatch(s); m != nil {
		s = strings.TrimSpace(m[1])
	}
	if !strings.HasPrefix(s, "{") {
		i, j := strings.Index(s, "{"), strings.LastIndex(s, "}")
		if i < 0 || j < i {
			return nil, errors.New("no JSON object in the reply")
		}
		s = s[i : j+1]
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, errors.New("the reply is not a JSON object")
	}
	return v, nil
}

// schema is the subset of JSON Schema the role replies use: types,
// properties, required keys, items, enums. It is rendered into the prompts
// and validates the replies.
type schema struct {
	Type     string // object, array, string, number, boolean, or "" for any
	Props    map[string]*schema
	Required []string
	Items    *schema
	Enum     []string
	MinItems int
	Closed   bool // no properties beyond Props
	Desc     string
}

func (s *schema) validate(v any, at string) error {
	if s == nil || s.Type == "" {
		return nil
	}
	switch s.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object", at)
		}
		for _, k := range s.Required {
			if _, ok := m[k]; !ok {
				return fmt.Errorf("%s.%s: required", at, k)
			}
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p, ok := s.Props[k]
			if !ok {
				if s.Closed {
					return fmt.Errorf("%s.%s: unexpected property", at, k)
				}
				continue
			}
			if err := p.validate(m[k], at+"."+k); err != nil {
				return err
			}
		}
	case "array":
		l, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: want an array", at)
		}
		if len(l) < s.MinItems {
			return fmt.Errorf("%s: want at least %d items", at, s.MinItems)
		}
		for i, e := range l {
			if err := s.Items.validate(e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: want a string", at)
		}
		if len(s.Enum) > 0 && !slices.Contains(s.Enum, str) {
			return fmt.Errorf("%s: want one of %s", at, strings.Join(s.Enum, ", "))
		}
	case "number":
		if _, ok := v.(float64); !ok {
			return fmt.Errorf("%s: want a number", at)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: want true or false", at)
		}
	}
	return nil
}

// JSON renders the schema as JSON Schema, for prompts.
func (s *schema) JSON() map[string]any {
	m := map[string]any{}
	if s.Type != "" {
		m["type"] = s.Type
	}
	if s.Desc != "" {
		m["description"] = s.Desc
	}
	if len(s.Enum) > 0 {
		m["enum"] = s.Enum
	}
	if s.Props != nil {
		props := map[string]any{}
		for k, p := range s.Props {
			props[k] = p.JSON()
		}
		m["properties"] = props
	}
	if len(s.Required) > 0 {
		m["required"] = s.Required
	}
	if s.Items != nil {
		m["items"] = s.Items.JSON()
	}
	if s.MinItems > 0 {
		m["minItems"] = s.MinItems
	}
	if s.Closed {
		m["additionalProperties"] = false
	}
	return m
}

// String renders the schema as indented JSON Schema.
func (s *schema) String() string {
	b, _ := json.MarshalIndent(s.JSON(), "", "  ")
	return string(b)
}
