package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/schemas"
)

func collect(t *testing.T, tasks []schemas.Task, f AgentFactory, p Params) []Episode {
	t.Helper()
	var out []Episode
	err := Run(context.Background(), tasks, f, SimEnvs(p), p, func(ep Episode) error {
		out = append(out, ep)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func someTasks(t *testing.T, n int) []schemas.Task {
	t.Helper()
	pool := simdesk.Pool()
	if len(pool) < n {
		t.Fatalf("pool has %d tasks", len(pool))
	}
	// Spread over the pool so every app is represented.
	var out []schemas.Task
	for i := 0; i < n; i++ {
		out = append(out, pool[i*len(pool)/n])
	}
	return out
}

func TestOracleSucceedsRandomRarely(t *testing.T) {
	p := DefaultParams()
	p.N, p.Workers, p.TreeOnly = 1, 2, true
	tasks := someTasks(t, 12)
	for _, ep := range collect(t, tasks, Oracle{}, p) {
		if ep.Trajectory.Outcome != schemas.OutcomeSuccess || ep.Trajectory.Reward != 1 {
			t.Errorf("oracle on %s: %s (%s) %s", ep.Trajectory.TaskID, ep.Trajectory.Outcome, ep.Trajectory.Error, ep.Trajectory.JudgeDetail)
		}
		if err := schemas.Trajectories.Validate(&ep.Trajectory); err != nil {
			t.Error(err)
		}
		for i := range ep.Steps {
			if err := schemas.Steps.Validate(&ep.Steps[i]); err != nil {
				t.Error(err)
			}
		}
	}
	p.N = 4
	wins := 0
	eps := collect(t, tasks, Random{}, p)
	for _, ep := range eps {
		if ep.Trajectory.Outcome == schemas.OutcomeSuccess {
			wins++
		}
	}
	if rate := float64(wins) / float64(len(eps)); rate > 0.15 {
		t.Fatalf("random policy succeeded %.0f%% of the time", 100*rate)
	}
}

func TestSameOutputAnyWorkers(t *testing.T) {
	p := DefaultParams()
	p.N, p.MaxTurns, p.Seed = 3, 8, 7
	tasks := someTasks(t, 4)
	p.Workers = 1
	a := collect(t, tasks, Random{}, p)
	p.Workers = 3
	b := collect(t, tasks, Random{}, p)
	if len(a) != 12 || !reflect.DeepEqual(a, b) {
		t.Fatal("output depends on the number of workers")
	}
	for _, ep := range a {
		for _, bl := range ep.Blobs {
			if bl.Mime == "image/png" && (bl.Width != 1280 || bl.Height != 800) {
				t.Fatalf("screenshot is %dx%d", bl.Width, bl.Height)
			}
		}
		if ep.Trajectory.Outcome == schemas.OutcomeIncomplete && ep.Trajectory.Reward != IncompletePenalty {
			t.Fatalf("incomplete reward %v", ep.Trajectory.Reward)
		}
	}
	p.Seed = 8
	c := collect(t, tasks, Random{}, p)
	if reflect.DeepEqual(a, c) {
		t.Fatal("the seed does not matter")
	}
}

type flaky struct{ failAt int }

func (flaky) Name() string   { return "flaky" }
func (flaky) Version() int32 { return 3 }
func (f flaky) New(task schemas.Task, seed int64) (Agent, error) {
	if strings.HasSuffix(task.TaskID, "x") {
		return nil, errors.New("cannot start")
	}
	r, _ := Random{}.New(task, seed)
	return agentFunc(func(ctx context.Context, t schemas.Task, o simdesk.Obs, h []Turn) (Decision, error) {
		if len(h) == f.failAt && t.TaskID == "boom" {
			return Decision{}, errors.New("model crashed")
		}
		return r.Act(ctx, t, o, h)
	}), nil
}

type agentFunc func(context.Context, schemas.Task, simdesk.Obs, []Turn) (Decision, error)

func (f agentFunc) Act(ctx context.Context, t schemas.Task, o simdesk.Obs, h []Turn) (Decision, error) {
	return f(ctx, t, o, h)
}

func TestCrashedEpisodeDoesNotLoseOthers(t *testing.T) {
	p := DefaultParams()
	p.N, p.MaxTurns, p.TreeOnly = 2, 5, true
	tasks := someTasks(t, 2)
	boom := tasks[0]
	boom.TaskID = "boom"
	tasks = append(tasks, boom)
	eps := collect(t, tasks, flaky{failAt: 2}, p)
	if len(eps) != 6 {
		t.Fatalf("%d episodes", len(eps))
	}
	for _, ep := range eps {
		tr := ep.Trajectory
		if tr.TaskID == "boom" {
			if tr.Outcome != schemas.OutcomeError || !strings.Contains(tr.Error, "model crashed") || tr.Steps != 2 {
				t.Fatalf("crashed episode: %+v", tr)
			}
		} else if tr.Outcome == schemas.OutcomeError || tr.PolicyVersion != 3 {
			t.Fatalf("healthy episode: %+v", tr)
		}
	}
}

// scripted serves canned chat completions, one per request.
func scripted(t *testing.T, replies []func(w http.ResponseWriter)) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req["model"] != "m" {
			t.Errorf("bad request: %v %v", err, req["model"])
		}
		i := int(n.Add(1)) - 1
		if i >= len(replies) {
			i = len(replies) - 1
		}
		replies[i](w)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func reply(content string, tokens ...string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		var lp []map[string]any
		for i, tok := range tokens {
			lp = append(lp, map[string]any{"token": tok, "logprob": -0.1 * float64(i+1)})
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{
			"message": map[string]any{"content": content}, "logprobs": map[string]any{"content": lp}}},
			"usage": map[string]any{"prompt_tokens": 1234}})
	}
}

func status(code int) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) { http.Error(w, "overloaded", code) }
}

func TestOpenAIPolicy(t *testing.T) {
	ctx := context.Background()
	task := someTasks(t, 1)[0]
	sim, _ := simdesk.NewSim(simdesk.Options{})
	obs, err := sim.Reset(task, 1)
	if err != nil {
		t.Fatal(err)
	}
	srv, n := scripted(t, []func(http.ResponseWriter){
		status(500), status(429),
		reply("I see the desktop.\nAction: click 500 400", "token_id:11", "token_id:12"),
		reply("no idea what to do"),
		reply("```python\npyautogui.hotkey('ctrl', 's')\n```", "token_id:5", "plain"),
	})
	f, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL, Model: "m", Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ag, _ := f.New(task, 1)
	d, err := ag.Act(ctx, task, obs, nil)
	if err != nil {
		t.Fatalf("retries on 500 and 429 should succeed: %v", err)
	}
	if n.Load() != 3 || d.Action.Kind != "click" || *d.Action.X != 500 || !reflect.DeepEqual(d.ResponseIDs, []int32{11, 12}) || len(d.Logprobs) != 2 || d.PromptTokens != 1234 {
		t.Fatalf("decision: %+v", d)
	}
	d, err = ag.Act(ctx, task, obs, []Turn{{Obs: obs, Decision: d}})
	if err != nil || d.Action.Kind != "unknown" {
		t.Fatalf("malformed reply should be an unknown no-op action: %+v %v", d, err)
	}
	d, err = ag.Act(ctx, task, obs, nil)
	if err != nil || d.Action.Kind != "hotkey" || d.ResponseIDs != nil || d.Logprobs != nil {
		t.Fatalf("pyautogui reply with unusable token ids: %+v %v", d, err)
	}
	// Timeouts and a dead endpoint are clear errors.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { time.Sleep(200 * time.Millisecond) }))
	defer slow.Close()
	f, _ = NewOpenAI(OpenAIConfig{BaseURL: slow.URL, Model: "m", Timeout: 20 * time.Millisecond, Retries: 1, Backoff: time.Millisecond})
	ag, _ = f.New(task, 1)
	if _, err := ag.Act(ctx, task, obs, nil); err == nil || !strings.Contains(err.Error(), "after 2 attempts") {
		t.Fatalf("timeout: %v", err)
	}
	f, _ = NewOpenAI(OpenAIConfig{BaseURL: "http://127.0.0.1:1", Model: "m", Retries: 1, Backoff: time.Millisecond})
	ag, _ = f.New(task, 1)
	if _, err := ag.Act(ctx, task, obs, nil); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("dead endpoint: %v", err)
	}
	if _, err := NewOpenAI(OpenAIConfig{Model: "m"}); err == nil {
		t.Fatal("missing endpoint accepted")
	}
	_ = fmt.Sprint
}

// redrawing answers turn 0 with text that is no action after 3 draws,
// turn 1 with a random action after 2 draws, and acts randomly after.
type redrawing struct{}

func (redrawing) Name() string   { return "redrawing" }
func (redrawing) Version() int32 { return 1 }
func (redrawing) New(task schemas.Task, seed int64) (Agent, error) {
	r, _ := Random{}.New(task, seed)
	return agentFunc(func(ctx context.Context, t schemas.Task, o simdesk.Obs, h []Turn) (Decision, error) {
		switch len(h) {
		case 0:
			return Decision{RawAction: "click nowhere", Draws: 3}, nil
		case 1:
			d, err := r.Act(ctx, t, o, h)
			d.Draws = 2 // redrawn into an action
			return d, err
		}
		return r.Act(ctx, t, o, h)
	}), nil
}

// TestSummaryCountsUnparsedAndRedrawn: the summary counts the steps that
// executed no action (action_kind unknown, as stored) and the turns the
// policy drew more than one response on.
func TestSummaryCountsUnparsedAndRedrawn(t *testing.T) {
	p := DefaultParams()
	p.N, p.MaxTurns, p.TreeOnly = 2, 4, true
	var sum Summary
	unknown := 0
	for _, ep := range collect(t, someTasks(t, 3), redrawing{}, p) {
		sum.Add(ep)
		for _, st := range ep.Steps {
			if st.ActionKind == "unknown" {
				unknown++
			}
		}
		if len(ep.Steps) == 0 || ep.Steps[0].ActionKind != "unknown" || ep.Steps[0].RawAction != "click nowhere" {
			t.Fatalf("%s: first step %+v, want the unparsed text stored as action_kind unknown", ep.Trajectory.TrajectoryID, ep.Steps[0])
		}
	}
	if sum.Trajectories != 6 || sum.Unparsed != 6 || unknown != 6 {
		t.Fatalf("summary %+v: %d unknown steps stored; want 6, turn 0 of each episode", sum, unknown)
	}
	if want := 12; sum.Redrawn != want {
		t.Fatalf("redrawn turns %d, want %d (turns 0 and 1 of 6 episodes)", sum.Redrawn, want)
	}
}

// TestSelectTasksNegativeLimit: a negative limit is an error naming the
// flag, not "all tasks"; 0 still means all.
func TestSelectTasksNegativeLimit(t *testing.T) {
	pool := []schemas.Task{{TaskID: "a"}, {TaskID: "b"}, {TaskID: "c"}}
	if got, err := SelectTasks(pool, nil, -3); err == nil || !strings.Contains(err.Error(), "--limit-tasks is -3, want >= 0") {
		t.Errorf("limit -3: %d tasks, %v; want an error naming --limit-tasks", len(got), err)
	}
	if got, err := SelectTasks(pool, nil, 0); err != nil || len(got) != 3 {
		t.Errorf("limit 0: %d tasks, %v; want all 3", len(got), err)
	}
	if got, err := SelectTasks(pool, nil, 2); err != nil || len(got) != 2 {
		t.Errorf("limit 2: %d tasks, %v; want 2", len(got), err)
	}
}

// TestSummaryAllErrored: only a run in which every episode ended in error
// is refused; one played-out episode, or none at all, is not.
func TestSummaryAllErrored(t *testing.T) {
	ep := func(id, outcome, msg string) Episode {
		return Episode{Trajectory: schemas.Trajectory{TrajectoryID: id, Outcome: outcome, Error: msg}}
	}
	var s Summary
	if err := s.AllErrored(); err != nil {
		t.Fatalf("empty summary: %v", err)
	}
	for i := 0; i < 5; i++ {
		s.Add(ep(fmt.Sprintf("t%d", i), schemas.OutcomeError, "endpoint down"))
	}
	err := s.AllErrored()
	if !errors.Is(err, ErrAllErrored) || !strings.Contains(err.Error(), "5 of 5 episodes") || !strings.Contains(err.Error(), "t2: endpoint down") || strings.Contains(err.Error(), "t3:") {
		t.Fatalf("all errored: %v", err)
	}
	s.Add(ep("t5", schemas.OutcomeFailure, ""))
	if err := s.AllErrored(); err != nil {
		t.Fatalf("one played-out episode: %v", err)
	}
}
