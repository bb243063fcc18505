package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/importer/internal/fixture"
	"github.com/cualake/cualake/pipeline/importer/internal/testenv"
	"github.com/cualake/cualake/pipeline/importer/record"
	"github.com/cualake/cualake/schemas"
)

type memSink struct {
	tasks    []schemas.Task
	episodes []*record.Episode
	rejects  []*record.Error
}

func (s *memSink) Task(t schemas.Task) error       { s.tasks = append(s.tasks, t); return nil }
func (s *memSink) Episode(e *record.Episode) error { s.episodes = append(s.episodes, e); return nil }
func (s *memSink) Reject(e *record.Error) error    { s.rejects = append(s.rejects, e); return nil }
func (s *memSink) KnownTrajectory(string) bool     { return false }
func (s *memSink) Progress(int, int)               {}

func TestRolloutsFixture(t *testing.T) {
	dir := filepath.Join(testenv.Testdata(t), "jsonl")
	s := &memSink{}
	if err := ReadFiles(context.Background(), []string{filepath.Join(dir, "rollouts.jsonl")}, s); err != nil {
		t.Fatal(err)
	}
	if len(s.rejects) != 0 || len(s.episodes) != 3 || len(s.tasks) != 1 {
		t.Fatalf("episodes %d tasks %d rejects %v", len(s.episodes), len(s.tasks), s.rejects)
	}
	a := s.episodes[0]
	if tr := a.Trajectory; tr.TrajectoryID != "slime-run7-000001" || tr.GroupID != "iter2-"+fixture.ChromeTask || tr.PolicyVersion != 3 ||
		tr.Iteration != 2 || tr.Seed != 17 || tr.Outcome != "success" || tr.Source != "slime" || tr.Steps != 3 || tr.JudgeDetail != `{"match_in_list":1}` {
		t.Fatalf("%+v", tr)
	}
	st := a.Steps[0]
	if st.Step != 1 || st.ActionKind != "click" || *st.X != 966 || len(st.ResponseIDs) != 3 || st.Logprobs[2] != -1.25 ||
		st.PromptTokens != 1200 || st.Observation != a.Blobs[0].Hash || a.Blobs[0].Width != 1280 {
		t.Fatalf("%+v", st)
	}
	b := s.episodes[1]
	task := s.tasks[0]
	if task.TaskID != fixture.JSONLTask || task.Domain != "os" || !strings.Contains(task.Raw, `"x_custom_field":{"kept":true}`) ||
		b.Trajectory.TaskID != task.TaskID || !strings.HasPrefix(b.Trajectory.TrajectoryID, "jsonl-") || b.Trajectory.Outcome != "failure" {
		t.Fatalf("embedded task: %+v / %+v", task, b.Trajectory)
	}
	if b.Steps[0].ActionKind != "hotkey" || b.Steps[0].RawAction != "hotkey(ctrl, alt, t)" || b.Blobs[0].Hash != b.Blobs[1].Hash || b.Steps[1].ActionKind != "type" {
		t.Fatalf("base64 / typed: %+v", b.Steps)
	}
	if c := s.episodes[2]; c.Trajectory.Outcome != "incomplete" || c.Steps[1].Direction != "down" || c.Steps[1].Amount != 3 {
		t.Fatalf("%+v", c.Steps)
	}
}

func TestBadFixture(t *testing.T) {
	file := filepath.Join(testenv.Testdata(t), "jsonl", "bad.jsonl")
	s := &memSink{}
	if err := ReadFiles(context.Background(), []string{file}, s); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		line  int
		field string
	}{{2, "json"}, {3, "steps[0].logprobs[1]"}, {4, "reward"}, {5, "rewrd"}, {6, "steps[0].screenshot"}}
	if len(s.episodes) != 1 || len(s.rejects) != len(want) {
		t.Fatalf("episodes %d rejects %v", len(s.episodes), s.rejects)
	}
	for i, w := range want {
		r := s.rejects[i]
		if r.File != file || r.Line != w.line || r.Field != w.field || r.Raw == "" {
			t.Errorf("reject %d: %s (field %s), want line %d field %s", i, r, r.Field, w.line, w.field)
		}
	}
}

func TestParseLineCases(t *testing.T) {
	load := func(string) ([]byte, error) { return nil, fs.ErrNotExist }
	for _, c := range []struct{ line, field string }{
		{`{"task_id": "t", "reward": 1, "steps": [{"action": {"kind": "teleport"}}]}`, "steps[0].action"},
		{`{"task_id": "t", "reward": 1, "steps": [{"action": {"kind": "click", "x": 5000, "y": 1}}]}`, "steps[0].action"},
		{`{"task_id": "t", "reward": 1, "steps": [{"action": "DONE", "screenshot_base64": "!!!"}]}`, "steps[0].screenshot_base64"},
		{`{"task_id": "t", "reward": 1, "steps": [{"action": "DONE", "response_ids": [1], "logprobs": []}, {"step": 1, "action": "DONE"}]}`, "steps[1].step"},
		{`{"task_id": "t", "reward": 1, "steps": [{"action": "DONE", "response_ids": [1.5]}]}`, "steps.response_ids"},
		{`{"task_id": "t", "reward": 1, "outcome": "great", "steps": []}`, "outcome"},
		{`{"task_id": "", "reward": 1, "steps": []}`, "task_id"},
		{`{"task_id": "t", "reward": 1}`, "steps"},
		{`{"task_id": "t", "reward": 1, "steps": []} {"again": 1}`, "json"},
		{`{"task": {"id": "x", "instruction": "i", "evaluator": {"func": "f"}}, "reward": 1, "steps": []}`, "domain"},
		{`{"task": {"id": "x", "instruction": 5, "evaluator": {"func": "f"}}, "domain": "os", "reward": 1, "steps": []}`, "task.instruction"},
	} {
		_, err := ParseLine("f.jsonl", 4, []byte(c.line), load)
		var re *record.Error
		if !errors.As(err, &re) || re.Field != c.field || re.Line != 4 {
			t.Errorf("%s: got %v (field %v), want field %s", c.line, err, fieldOf(re), c.field)
		}
	}
	// Unparseable pyautogui is kept as an unknown action, not rejected.
	p, err := ParseLine("f.jsonl", 1, []byte(`{"task_id": "t", "reward": 1, "steps": [{"action": "while True: pass"}]}`), load)
	if err != nil || p.Episode.Steps[0].ActionKind != "unknown" || p.Episode.Steps[0].RawAction != "while True: pass" {
		t.Fatalf("%v %+v", err, p)
	}
}

// A script of several actions becomes one row per action: the response's
// tokens on the first, reward and done on the last, later actions of the
// same response moved up; trajectories.steps counts rows.
func TestMultiActionScript(t *testing.T) {
	load := func(string) ([]byte, error) { return nil, fs.ErrNotExist }
	line := `{"task_id": "t", "reward": 1, "screen": {"width": 1000, "height": 1000}, "steps": [` +
		`{"step": 1, "sub": 1, "action": "DONE", "done": true},` +
		`{"step": 1, "action": "pyautogui.click(10, 20); time.sleep(1); pyautogui.write('hi'); pyautogui.press('enter')",` +
		` "response": "r", "response_ids": [5, 6], "logprobs": [-1, -2], "prompt_tokens": 9, "response_tokens": 2, "reward": 0.5, "done": true, "info": {"k": 1}},` +
		`{"step": 2, "sub": 0, "action": "pyautogui.hotkey('ctrl', 's')"}]}`
	p, err := ParseLine("f.jsonl", 1, []byte(line), load)
	if err != nil {
		t.Fatal(err)
	}
	rows := p.Episode.Steps
	type key struct {
		step, sub int32
		kind      string
	}
	var got []key
	for _, r := range rows {
		got = append(got, key{r.Step, r.Sub, r.ActionKind})
	}
	want := []key{{1, 3, "done"}, {1, 0, "click"}, {1, 1, "type"}, {1, 2, "key"}, {2, 0, "hotkey"}}
	if fmt.Sprint(got) != fmt.Sprint(want) || p.Episode.Trajectory.Steps != 5 {
		t.Fatalf("rows %v (trajectory steps %d), want %v", got, p.Episode.Trajectory.Steps, want)
	}
	click, typ, enter := rows[1], rows[2], rows[3]
	if *click.X != 10 || *click.Y != 20 || typ.Text != "hi" || enter.Keys[0] != "enter" {
		t.Fatalf("actions: %+v %+v %+v", click, typ, enter)
	}
	if len(click.ResponseIDs) != 2 || click.PromptTokens != 9 || click.ResponseTokens != 2 || typ.ResponseIDs != nil || enter.Logprobs != nil || enter.PromptTokens != 0 {
		t.Fatalf("tokens belong to the first row: %+v / %+v", click, enter)
	}
	if click.Reward != 0 || click.Done || typ.Done || enter.Reward != 0.5 || !enter.Done {
		t.Fatalf("reward and done belong to the last row: %+v / %+v", click, enter)
	}
	for _, r := range rows[1:4] {
		if r.Response != "r" || r.Info != `{"k":1}` || !strings.HasPrefix(r.RawAction, "pyautogui.click(10, 20); time.sleep(1)") {
			t.Fatalf("shared columns: %+v", r)
		}
	}
	// Without multi-action scripts every (step, sub) stays as given.
	p, err = ParseLine("f.jsonl", 1, []byte(`{"task_id": "t", "reward": 1, "steps": [{"step": 4, "sub": 7, "action": "DONE"}, {"step": 4, "sub": 2, "action": "pyautogui.press('a')"}]}`), load)
	if err != nil || p.Episode.Steps[0].Sub != 7 || p.Episode.Steps[1].Sub != 2 || p.Episode.Steps[0].Step != 4 {
		t.Fatalf("%v %+v", err, p.Episode.Steps)
	}
	// A sub that would overflow once shifted is a bad line, not a wrap.
	_, err = ParseLine("f.jsonl", 1, []byte(`{"task_id": "t", "reward": 1, "steps": [{"action": "pyautogui.press('a'); pyautogui.press('b')"}, {"step": 1, "sub": 2147483647, "action": "DONE"}]}`), load)
	var re *record.Error
	if !errors.As(err, &re) || re.Field != "steps" {
		t.Fatalf("overflow: %v", err)
	}
}

func fieldOf(e *record.Error) string {
	if e == nil {
		return "<none>"
	}
	return e.Field
}

func TestLongLine(t *testing.T) {
	var buf bytes.Buffer
	buf.WriteString(strings.Repeat("x", 100))
	buf.WriteString("\nsecond\n")
	r := bufio.NewReaderSize(&buf, 16)
	l, long, err := readLine(r)
	if err != nil || long || len(l) != 100 {
		t.Fatal(len(l), long, err)
	}
	l, _, _ = readLine(r)
	if string(l) != "second" {
		t.Fatalf("%q", l)
	}
}

// FuzzParseJSONL: no line panics; an accepted line yields valid rows.
func FuzzParseJSONL(f *testing.F) {
	for _, name := range []string{"rollouts.jsonl", "bad.jsonl"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "jsonl", name))
		if err != nil {
			continue
		}
		for _, l := range bytes.Split(b, []byte("\n")) {
			if len(l) < 4096 { // the base64 line is long; its shape is covered below
				f.Add(l)
			}
		}
	}
	f.Add([]byte(`{"task_id": "t", "reward": -1e308, "steps": [{"action": {"kind": "drag", "x2": 1000, "y2": 0}, "screenshot_base64": "data:image/png;base64,iVBORw0KGgo="}]}`))
	shot, _ := fixture.Screenshot(8, 8, 1)
	load := func(p string) ([]byte, error) {
		if strings.HasSuffix(p, ".png") {
			return shot, nil
		}
		return nil, fs.ErrNotExist
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := ParseLine("f.jsonl", 3, raw, load)
		if err != nil {
			var re *record.Error
			if !errors.As(err, &re) || re.Field == "" || re.Line != 3 {
				t.Fatalf("error without location: %v", err)
			}
			return
		}
		if err := schemas.Trajectories.Validate(&p.Episode.Trajectory); err != nil {
			t.Fatal(err)
		}
		for i := range p.Episode.Steps {
			if err := schemas.Steps.Validate(&p.Episode.Steps[i]); err != nil {
				t.Fatal(err)
			}
		}
		for i := range p.Episode.Blobs {
			if err := schemas.Blobs.Validate(&p.Episode.Blobs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if p.Task != nil {
			if err := schemas.Tasks.Validate(p.Task); err != nil {
				t.Fatal(err)
			}
		}
	})
}
