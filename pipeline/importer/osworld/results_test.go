package osworld

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/importer/internal/fixture"
	"github.com/cualake/cualake/pipeline/importer/internal/testenv"
	"github.com/cualake/cualake/pipeline/importer/record"
	"github.com/cualake/cualake/schemas"
)

func TestParseTrajLine(t *testing.T) {
	l, err := ParseTrajLine("traj.jsonl", 1, []byte(`{"step_num": 2, "action_timestamp": "20240418@120301", "action": "pyautogui.click(1, 2)", "response": "r", "reward": 0.5, "done": true, "info": {"fail": true}, "screenshot_file": "step_2_20240418@120301.png", "natural_language_action": "click the button"}`))
	if err != nil {
		t.Fatal(err)
	}
	if l.StepNum != 2 || l.Timestamp != "20240418@120301" || l.Reward != 0.5 || !l.Done || l.ScreenshotFile != "step_2_20240418@120301.png" ||
		l.Rest != `{"info":{"fail":true},"natural_language_action":"click the button"}` {
		t.Fatalf("%+v", l)
	}
	l, err = ParseTrajLine("traj.jsonl", 9, []byte(`{"Error": "Time limit exceeded in os/x"}`))
	if err != nil || !l.IsError() || l.Error != "Time limit exceeded in os/x" {
		t.Fatalf("%+v %v", l, err)
	}
	l, err = ParseTrajLine("traj.jsonl", 1, []byte(`{"step_num": 1, "action": {"action_type": "CLICK", "x": 5, "y": 6}, "response": {"thought": "x"}}`))
	if err != nil || l.Response != `{"thought":"x"}` || actionText(l.Action) != `{"action_type":"CLICK","x":5,"y":6}` {
		t.Fatalf("%+v %v", l, err)
	}
	for _, c := range []struct{ line, field string }{
		{`{"step_num": 1.5, "action": "DONE"}`, "step_num"},
		{`{"step_num": -1, "action": "DONE"}`, "step_num"},
		{`{"action": "DONE"}`, "step_num"},
		{`{"step_num": 1}`, "action"},
		{`{"step_num": 1, "action": 3}`, "action"},
		{`{"step_num": 1, "action": "DONE", "reward": "high"}`, "reward"},
		{`{"step_num": 1, "action": "DONE", "done": 1}`, "done"},
		{`{"step_num": 1, "action": "DONE", "screenshot_file": "../../etc/passwd"}`, "screenshot_file"},
		{`{"step_num": 1, "action": "DONE", "reward": NaN}`, "json"},
		{`[1, 2]`, "json"},
		{"{\"step_num\": 1, \"action\": \"\xff\"}", "json"},
	} {
		_, err := ParseTrajLine("traj.jsonl", 7, []byte(c.line))
		var re *record.Error
		if !errors.As(err, &re) || re.Field != c.field || re.Line != 7 || re.File != "traj.jsonl" {
			t.Errorf("%s: got %v, want field %s at line 7", c.line, err, c.field)
		}
	}
	if _, err := ParseResult("result.txt", []byte("0.25\n")); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "nan", "inf", "1.0 2.0"} {
		if _, err := ParseResult("result.txt", []byte(bad)); err == nil {
			t.Errorf("result %q accepted", bad)
		}
	}
}

func readFixture(t *testing.T, tree string) *memSink {
	t.Helper()
	s := &memSink{}
	if _, err := ReadResults(context.Background(), filepath.Join(testenv.Testdata(t), tree), 3, s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestReadResultsFixture(t *testing.T) {
	s := readFixture(t, "osworld-results")
	if len(s.rejects) != 0 || len(s.episodes) != 6 {
		t.Fatalf("%d episodes, rejects %v", len(s.episodes), s.rejects)
	}
	by := map[string]*record.Episode{}
	for _, e := range s.episodes {
		by[e.Trajectory.Policy+"/"+e.Trajectory.Domain] = e
		if err := schemas.Trajectories.Validate(&e.Trajectory); err != nil {
			t.Fatal(err)
		}
		if e.Trajectory.Source != "osworld" || e.Trajectory.GroupID != e.Trajectory.TaskID+"@"+e.Trajectory.Policy {
			t.Errorf("%+v", e.Trajectory)
		}
	}
	// Success, with every screenshot a blob and observations shifted by one
	// response: step k saw the screen saved after step k-1.
	ok := by["gpt-4o/chrome"]
	if ok.Trajectory.Outcome != "success" || ok.Trajectory.Reward != 1 || ok.Trajectory.TaskID != fixture.ChromeTask || len(ok.Steps) != 5 {
		t.Fatalf("%+v", ok.Trajectory)
	}
	if ok.Steps[0].Observation != "" || ok.Steps[1].Observation != ok.Blobs[0].Hash || ok.Steps[4].ActionKind != "done" {
		t.Fatalf("observations: %q %q", ok.Steps[0].Observation, ok.Steps[1].Observation)
	}
	var jd map[string]any
	json.Unmarshal([]byte(ok.Trajectory.JudgeDetail), &jd)
	if jd["final_screenshot"] != ok.Blobs[4].Hash || jd["result"] != "1.0" || jd["runtime_log"] == nil || jd["recording"] == nil {
		t.Fatalf("judge detail %v", jd)
	}
	if c := ok.Steps[0]; c.ActionKind != "click" || *c.X != 966 || *c.Y != 75 || !strings.Contains(c.RawAction, "pyautogui.click(1854, 81)") {
		t.Fatalf("typed action: %+v", c)
	}
	// Repeated step_num: subs 0 and 1 share the observation.
	os := by["gpt-4o/os"]
	if os.Trajectory.Outcome != "failure" || len(os.Steps) != 5 || os.Steps[1].Step != 2 || os.Steps[1].Sub != 0 || os.Steps[2].Step != 2 ||
		os.Steps[2].Sub != 1 || os.Steps[1].Observation != os.Steps[2].Observation || os.Steps[4].ActionKind != "drag" {
		t.Fatalf("repeated step_num: %+v", os.Steps)
	}
	// Crashed: error outcome with the error line's text; unknown action kept raw.
	crash := by["gpt-4o/gimp"]
	if crash.Trajectory.Outcome != "error" || !strings.Contains(crash.Trajectory.Error, "Time limit exceeded") ||
		crash.Steps[1].ActionKind != "unknown" || !strings.HasPrefix(crash.Steps[1].RawAction, "for i in range(3)") {
		t.Fatalf("crash: %+v %+v", crash.Trajectory, crash.Steps[1])
	}
	// No result.txt: the run stopped before evaluation.
	if m := by["claude-3-7-sonnet/chrome"]; m.Trajectory.Outcome != "error" || !strings.Contains(m.Trajectory.Error, "result.txt") {
		t.Fatalf("missing result: %+v", m.Trajectory)
	}
	if f := by["claude-3-7-sonnet/vs_code"]; f.Steps[1].ActionKind != "fail" || f.Trajectory.Outcome != "failure" {
		t.Fatalf("FAIL: %+v", f.Steps[1])
	}
	// Ids are deterministic and independent of the level the user points at.
	s2 := &memSink{}
	deeper := filepath.Join(testenv.Testdata(t), "osworld-results", "pyautogui", "screenshot", "gpt-4o")
	if _, err := ReadResults(context.Background(), deeper, 1, s2); err != nil {
		t.Fatal(err)
	}
	if len(s2.episodes) != 3 || s2.episodes[0].Trajectory.TrajectoryID != by["gpt-4o/chrome"].Trajectory.TrajectoryID {
		t.Fatalf("ids depend on the folder given: %d episodes", len(s2.episodes))
	}
	// A known trajectory is not loaded again.
	s3 := &memSink{known: map[string]bool{ok.Trajectory.TrajectoryID: true}}
	if _, err := ReadResults(context.Background(), deeper, 2, s3); err != nil {
		t.Fatal(err)
	}
	if s3.episodes[0].Steps != nil || s3.episodes[0].Trajectory.TrajectoryID != ok.Trajectory.TrajectoryID {
		t.Fatal("known episode was read in full")
	}
}

func TestReadResultsBad(t *testing.T) {
	s := readFixture(t, "osworld-results-bad")
	if len(s.episodes) != 1 {
		t.Fatalf("want only the good episode, got %d", len(s.episodes))
	}
	want := map[string]string{
		"pyautogui/screenshot/gpt-4o/os/bad-json/traj.jsonl:3":             "json",
		"pyautogui/screenshot/gpt-4o/os/bad-step-num/traj.jsonl:3":         "step_num",
		"pyautogui/screenshot/gpt-4o/gimp/missing-screenshot/traj.jsonl:3": "screenshot_file",
		"pyautogui/screenshot/gpt-4o/gimp/not-a-png/traj.jsonl:3":          "screenshot_file",
		"pyautogui/screenshot/gpt-4o/vs_code/bad-result/result.txt:1":      "result",
	}
	if len(s.rejects) != len(want) {
		t.Fatalf("rejects: %v", s.rejects)
	}
	for _, r := range s.rejects {
		key := r.File + ":" + itoa(r.Line)
		if want[key] != r.Field || r.Raw == "" {
			t.Errorf("unexpected reject %s (field %s, raw %q)", key, r.Field, r.Raw)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestFindEpisodesLayout(t *testing.T) {
	dir := t.TempDir()
	ep := filepath.Join(dir, "pyautogui", "som", "org", "model-7b", "os", "task-1")
	os.MkdirAll(ep, 0o755)
	os.WriteFile(filepath.Join(ep, "result.txt"), []byte("1.0\n"), 0o644)
	eps, err := FindEpisodes(dir)
	if err != nil || len(eps) != 1 {
		t.Fatal(eps, err)
	}
	// A model name with a slash (org/model-7b) makes one more folder level.
	if e := eps[0]; e.ActionSpace != "pyautogui" || e.ObservationType != "som" || e.Model != "org/model-7b" || e.Domain != "os" || e.ExampleID != "task-1" {
		t.Fatalf("%+v", e)
	}
	// Too shallow to tell the components apart.
	shallow := filepath.Join(string(filepath.Separator), "tmp")
	if _, err := episodePath(shallow, shallow); err == nil {
		t.Fatal("a folder without five levels was accepted")
	}
}

// FuzzParseTrajLine: no line panics; an accepted line yields a valid step.
func FuzzParseTrajLine(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "osworld-results*", "*", "*", "*", "*", "*", "traj.jsonl"))
	for _, p := range files {
		b, _ := os.ReadFile(p)
		for _, l := range splitLines(b) {
			f.Add(l)
		}
	}
	f.Add([]byte(`{"step_num": 1, "action": {"action_type": "DRAG_TO", "x": 1e308, "y": -1}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		l, err := ParseTrajLine("traj.jsonl", 1, raw)
		if err != nil {
			var re *record.Error
			if !errors.As(err, &re) || re.Field == "" || re.Line != 1 {
				t.Fatalf("error without location: %v", err)
			}
			return
		}
		if l.IsError() {
			return
		}
		base := schemas.Step{TrajectoryID: "t", Step: l.StepNum, Info: l.Rest, RawAction: actionText(l.Action)}
		rows, err := lineSteps(base, l, 0, 1920, 1080)
		if err != nil {
			t.Fatalf("accepted line gives an invalid step: %v", err)
		}
		for k, s := range rows {
			if s.Sub != int32(k) || s.RawAction != base.RawAction || (k < len(rows)-1 && (s.Reward != 0 || s.Done)) {
				t.Fatalf("row %d of %d: %+v", k, len(rows), s)
			}
			for _, c := range []*int32{s.X, s.Y, s.X2, s.Y2} {
				if c != nil && (*c < 0 || *c > 1000) {
					t.Fatalf("coordinate off the grid: %+v", s)
				}
			}
		}
	})
}

// A line whose script performs several actions becomes one row per action,
// numbered on from the subs of earlier lines with the same step_num; a
// later line of that step_num follows them.
func TestMultiActionLine(t *testing.T) {
	dir := t.TempDir()
	ep := filepath.Join(dir, "pyautogui", "screenshot", "m", "os", "task-1")
	os.MkdirAll(ep, 0o755)
	lines := []string{
		`{"step_num": 1, "action": "pyautogui.click(960, 540)\ntime.sleep(0.5)\npyautogui.typewrite('ls')\npyautogui.press('enter')", "response": "r1", "reward": 0.25, "done": false}`,
		`{"step_num": 1, "action": "pyautogui.hotkey('ctrl', 'l')", "response": "r1"}`,
		`{"step_num": 2, "action": "pyautogui.moveTo(960, 540); pyautogui.scroll(-3)", "response": "r2", "done": true, "reward": 1}`,
		`{"step_num": 3, "action": {"action_type": "PRESS", "key": "Return"}}`,
		`{"step_num": 4, "action": "pyautogui.keyDown('ctrl')"}`,
	}
	os.WriteFile(filepath.Join(ep, "traj.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	os.WriteFile(filepath.Join(ep, "result.txt"), []byte("1\n"), 0o644)
	s := &memSink{}
	if _, err := ReadResults(context.Background(), dir, 1, s); err != nil || len(s.rejects) != 0 || len(s.episodes) != 1 {
		t.Fatalf("%v %v", err, s.rejects)
	}
	e := s.episodes[0]
	var got []string
	for _, r := range e.Steps {
		got = append(got, fmt.Sprintf("%d.%d %s %v %v", r.Step, r.Sub, r.ActionKind, r.Reward, r.Done))
	}
	want := []string{"1.0 click 0 false", "1.1 type 0 false", "1.2 key 0.25 false", "1.3 hotkey 0 false", "2.0 scroll 1 true", "3.0 key 0 false", "4.0 unknown 0 false"}
	if strings.Join(got, "|") != strings.Join(want, "|") || e.Trajectory.Steps != 7 {
		t.Fatalf("rows\n got %v\nwant %v", got, want)
	}
	if r := e.Steps[2]; r.RawAction != e.Steps[0].RawAction || r.Response != "r1" || r.Keys[0] != "enter" {
		t.Fatalf("shared columns: %+v", r)
	}
	if r := e.Steps[4]; *r.X != 500 || *r.Y != 500 || r.Direction != "down" || r.Amount != 3 {
		t.Fatalf("move then scroll: %+v", r)
	}
	if r := e.Steps[5]; r.Keys[0] != "enter" {
		t.Fatalf("computer_13 key: %+v", r)
	}
}

// TestReadResultsNoneFound: a folder without any episode is an error naming
// it (import osworld-results /etc said "nothing new" and exited 0).
func TestReadResultsNoneFound(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sub", "deeper"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "notes.txt"), []byte("x"), 0o644)
	_, err := ReadResults(context.Background(), dir, 1, nil)
	if err == nil || !strings.Contains(err.Error(), "no OSWorld results found in "+dir+": no folder under it holds traj.jsonl, result.txt, runtime.log") {
		t.Fatalf("ReadResults of a folder without episodes: %v", err)
	}
}
