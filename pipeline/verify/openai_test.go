package verify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// scripted is an OpenAI-compatible endpoint that answers Judge and Probe
// requests from two scripts, recording what it was sent.
type scripted struct {
	mu           sync.Mutex
	judge, probe []string
	judgeReqs    []map[string]any
	probeCalls   int
	fail         int // first requests answered with HTTP 500
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail > 0 {
		s.fail--
		http.Error(w, "overloaded", http.StatusInternalServerError)
		return
	}
	if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer k" {
		http.Error(w, "bad request "+r.URL.Path, http.StatusBadRequest)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	msgs := req["messages"].([]any)
	system := msgs[0].(map[string]any)["content"].(string)
	var reply string
	switch {
	case system == JudgeSystemPrompt && len(s.judge) > 0:
		s.judgeReqs = append(s.judgeReqs, req)
		reply, s.judge = s.judge[0], s.judge[1:]
	case system == ProbeSystemPrompt && len(s.probe) > 0:
		s.probeCalls++
		reply, s.probe = s.probe[0], s.probe[1:]
	default:
		http.Error(w, "script exhausted", http.StatusBadRequest)
		return
	}
	json.NewEncoder(w).Encode(map[string]any{
		"choices": []any{map[string]any{"message": map[string]any{"content": reply}}},
		"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 20},
	})
}

func openaiRunner(t *testing.T, srv *httptest.Server) *Runner {
	t.Helper()
	r, err := NewOpenAIRunner(OpenAIConfig{BaseURL: srv.URL + "/v1", Model: "judge-model", APIKey: "k", Backoff: time.Millisecond}, 2, 15, true)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func wrongFolderInput(t *testing.T) *Input {
	tk := task("scenario-folder", "editor", "Use the text editor to create ~/Documents/memo.txt containing exactly this text:\nShip it on Friday.",
		nil, fileJudge("~/Documents/memo.txt", "Ship it on Friday."))
	ep := episode(t, tk, 5, click("dock/editor"), typeText("Ship it on Friday."), keys("ctrl", "s"), keys("ctrl", "a"),
		typeText("~/Desktop/memo.txt\n"), finish("done"))
	return input(t, ep)
}

const firstRound = "```json\n" + `{"criteria": [
 {"criterion": "memo.txt is open in the Text Editor", "status": "success"},
 {"criterion": "~/Documents/memo.txt exists (Files > ~/Documents)", "status": "uncertain"},
 {"criterion": "memo.txt holds exactly \"Ship it on Friday.\"", "status": "success"}],
 "status": "uncertain"}` + "\n```"

func TestOpenAIJudgeAndProbe(t *testing.T) {
	srv := &scripted{fail: 1,
		judge: []string{
			// Malformed criteria: two of them, one with an unknown status.
			`{"criteria": [{"criterion": "file saved", "status": "probably"}, {"criterion": "x", "status": "success"}], "status": "uncertain"}`,
			firstRound,
			// After probing: the criteria unchanged, the probe's failure kept;
			// the overall status the model wrote contradicts them and is fixed.
			`{"criteria": [{"criterion": "memo.txt is open in the Text Editor", "status": "success"},
			  {"criterion": "~/Documents/memo.txt exists (Files > ~/Documents)", "status": "failure"},
			  {"criterion": "memo.txt holds exactly \"Ship it on Friday.\"", "status": "success"}], "status": "success"}`,
		},
		probe: []string{
			`{"tool": "click", "x": 47, "y": 20}`,
			`{"tool": "hotkey", "keys": ["ctrl", "s"]}`,
			`not json at all`,
			`{"tool": "criteria", "index": 2, "status": "failure", "note": "Documents lists no memo.txt"}`,
			`{"tool": "answer"}`,
		}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	in := wrongFolderInput(t)
	att, err := openaiRunner(t, ts).Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	row := att.Row(in, StrategyOpenAI)
	if row.Verdict != Failure || !row.ProbeUsed || row.Rounds != 2 || row.Reward != RewardCorrectProbe {
		t.Fatalf("verdict %s probe %v rounds %d reward %v: %s", row.Verdict, row.ProbeUsed, row.Rounds, row.Reward, row.Criteria)
	}
	if row.ProbeSteps != 2 || row.RefusedActions != 1 || row.ProbeTokens != 5*120 {
		t.Errorf("probe steps %d refused %d tokens %d, want 2, 1, 600", row.ProbeSteps, row.RefusedActions, row.ProbeTokens)
	}
	if len(row.Evidence) != 1 || len(att.Evidence) != 1 || att.Evidence[0].Mime != "image/png" {
		t.Errorf("evidence %v", row.Evidence)
	}
	var cs []Criterion
	if err := json.Unmarshal([]byte(row.Criteria), &cs); err != nil || len(cs) != 3 || cs[1].Status != Failure {
		t.Errorf("criteria %s (%v)", row.Criteria, err)
	}
	// The first request carried the instruction, the history and the last
	// screenshots as images; the repair turn carried the reason.
	first, _ := json.Marshal(srv.judgeReqs[0])
	if !strings.Contains(string(first), "User Intent: Use the text editor") || !strings.Contains(string(first), "data:image/png;base64,") ||
		!strings.Contains(string(first), "Step 1. click") || srv.judgeReqs[0]["model"] != "judge-model" {
		t.Errorf("first Judge request: %.400s", first)
	}
	repair, _ := json.Marshal(srv.judgeReqs[1])
	if !strings.Contains(string(repair), "Your reply is invalid: 2 criteria, want 3 to 5") {
		t.Errorf("repair request: %.300s", repair[len(repair)-300:])
	}
	again, _ := json.Marshal(srv.judgeReqs[2])
	if !strings.Contains(string(again), "Documents lists no memo.txt") || !strings.Contains(string(again), "evidence the probe collected") {
		t.Errorf("second-round request lacks the probe's evidence")
	}
}

func TestOpenAIMalformedCriteriaAreInvalid(t *testing.T) {
	for name, replies := range map[string][]string{
		"bad status":  {`{"criteria": [{"criterion": "a", "status": "yes"}, {"criterion": "b", "status": "success"}, {"criterion": "c", "status": "success"}], "status": "success"}`},
		"no json":     {"The task looks done to me."},
		"extra field": {`{"criteria": [{"criterion": "a", "status": "success", "weight": 2}], "status": "success"}`},
		"six":         {`{"criteria": [{"criterion": "a", "status": "success"},{"criterion": "b", "status": "success"},{"criterion": "c", "status": "success"},{"criterion": "d", "status": "success"},{"criterion": "e", "status": "success"},{"criterion": "f", "status": "success"}], "status": "success"}`},
		"empty":       {`{"criteria": [{"criterion": " ", "status": "success"},{"criterion": "b", "status": "success"},{"criterion": "c", "status": "success"}], "status": "success"}`},
	} {
		t.Run(name, func(t *testing.T) {
			srv := &scripted{judge: []string{replies[0], replies[0]}}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			in := wrongFolderInput(t)
			att, err := openaiRunner(t, ts).Run(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			row := att.Row(in, StrategyOpenAI)
			if row.Verdict != Uncertain || row.Reward != RewardUnresolved || row.ProbeUsed || !strings.Contains(row.Criteria, "invalid") {
				t.Fatalf("verdict %s reward %v probe %v criteria %s", row.Verdict, row.Reward, row.ProbeUsed, row.Criteria)
			}
			if len(srv.judgeReqs) != 2 {
				t.Errorf("%d Judge requests, want the reply and one repair", len(srv.judgeReqs))
			}
		})
	}
}

func TestOpenAIErrors(t *testing.T) {
	if _, err := NewOpenAIRunner(OpenAIConfig{Model: "m"}, 2, 15, false); err == nil || !strings.Contains(err.Error(), "no endpoint") {
		t.Errorf("missing endpoint: %v", err)
	}
	if _, err := NewOpenAIRunner(OpenAIConfig{BaseURL: "http://x"}, 2, 15, false); err == nil || !strings.Contains(err.Error(), "no model") {
		t.Errorf("missing model: %v", err)
	}
	srv := &scripted{fail: 10}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	_, err := openaiRunner(t, ts).Run(context.Background(), wrongFolderInput(t))
	if err == nil || !strings.Contains(err.Error(), "failed after 4 attempts") || !strings.Contains(err.Error(), "HTTP 500") {
		t.Errorf("a dead endpoint: %v", err)
	}
}
