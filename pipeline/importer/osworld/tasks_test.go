package osworld

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/importer/internal/testenv"
	"github.com/cualake/cualake/pipeline/importer/record"
	"github.com/cualake/cualake/schemas"
)

// memSink collects what a reader produces.
type memSink struct {
	tasks    []schemas.Task
	episodes []*record.Episode
	rejects  []*record.Error
	known    map[string]bool
}

func (s *memSink) Task(t schemas.Task) error       { s.tasks = append(s.tasks, t); return nil }
func (s *memSink) Episode(e *record.Episode) error { s.episodes = append(s.episodes, e); return nil }
func (s *memSink) Reject(e *record.Error) error    { s.rejects = append(s.rejects, e); return nil }
func (s *memSink) KnownTrajectory(id string) bool  { return s.known[id] }
func (s *memSink) Progress(done, total int)        {}

func TestSampleTasks(t *testing.T) {
	dir := testenv.OSWorldSample(t)
	s := &memSink{}
	res, err := ReadTasks(context.Background(), dir, "", s)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.rejects) != 0 {
		t.Fatalf("the sample has bad tasks: %v", s.rejects[0])
	}
	perDomain := map[string]int{}
	lists, infeasible := 0, 0
	for _, task := range s.tasks {
		perDomain[task.Domain]++
		raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(task.Origin)))
		if err != nil {
			t.Fatal(err)
		}
		if task.Raw != string(raw) {
			t.Errorf("%s: Raw is not the file's bytes", task.TaskID)
		}
		var orig map[string]any
		json.Unmarshal(raw, &orig)
		ev := orig["evaluator"].(map[string]any)
		var judge map[string]any
		if err := json.Unmarshal([]byte(task.Judge), &judge); err != nil {
			t.Fatal(err)
		}
		if _, isList := ev["func"].([]any); isList {
			lists++
			if _, ok := judge["conj"]; !ok && ev["conj"] != nil {
				t.Errorf("%s: conj lost", task.TaskID)
			}
			if len(judge["func"].([]any)) != len(judge["result"].([]any)) {
				t.Errorf("%s: result not parallel to func", task.TaskID)
			}
		}
		if ev["func"] == "infeasible" {
			infeasible++
			if task.Feasible {
				t.Errorf("%s: infeasible task marked feasible", task.TaskID)
			}
		} else if !task.Feasible {
			t.Errorf("%s: feasible task marked infeasible", task.TaskID)
		}
		if task.Instruction != orig["instruction"] || task.Source != schemas.SourceImported || !strings.HasPrefix(task.Origin, "examples/"+task.Domain+"/") {
			t.Errorf("%s: columns wrong: %+v", task.TaskID, task)
		}
		if apps, _ := orig["related_apps"].([]any); len(apps) > 0 && task.App != apps[0] {
			t.Errorf("%s: app %q, related_apps %v", task.TaskID, task.App, apps)
		}
		if cfg, ok := orig["config"]; ok {
			want, _ := json.Marshal(cfg)
			var a, b any
			json.Unmarshal(want, &a)
			json.Unmarshal([]byte(task.Setup), &b)
			if !jsonEqual(a, b) {
				t.Errorf("%s: setup differs from config", task.TaskID)
			}
		} else if task.Setup != "[]" {
			t.Errorf("%s: no config should give setup [], got %s", task.TaskID, task.Setup)
		}
	}
	want := map[string]int{"chrome": 46, "gimp": 26, "libreoffice_calc": 47, "os": 24, "thunderbird": 15, "vs_code": 23}
	for d, n := range want {
		if perDomain[d] != n {
			t.Errorf("domain %s: %d tasks, want %d", d, perDomain[d], n)
		}
	}
	if len(s.tasks) != 181 || res.Files != 181 || lists == 0 || infeasible == 0 {
		t.Fatalf("tasks %d files %d list judges %d infeasible %d", len(s.tasks), res.Files, lists, infeasible)
	}
	t.Logf("181 tasks, %d list-form judges, %d infeasible", lists, infeasible)
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func TestIndexAndMissing(t *testing.T) {
	src := testenv.OSWorldSample(t)
	s := &memSink{}
	res, err := ReadTasks(context.Background(), src, "test_small.json", s)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.tasks) != 16 || len(res.Missing) != 0 {
		t.Fatalf("test_small: %d tasks, missing %v", len(s.tasks), res.Missing)
	}
	// An index naming tasks that are not there reports them.
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "examples", "os"), 0o755)
	raw, _ := os.ReadFile(filepath.Join(src, "examples", "os", "5ea617a3-0e86-4ba6-aab2-dac9aa2e8d57.json"))
	os.WriteFile(filepath.Join(dir, "examples", "os", "5ea617a3-0e86-4ba6-aab2-dac9aa2e8d57.json"), raw, 0o644)
	os.WriteFile(filepath.Join(dir, "idx.json"), []byte(`{"os": ["5ea617a3-0e86-4ba6-aab2-dac9aa2e8d57", "gone-1", "../escape"], "chrome": ["gone-2"]}`), 0o644)
	s = &memSink{}
	res, err = ReadTasks(context.Background(), dir, "idx.json", s)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.tasks) != 1 || strings.Join(res.Missing, ",") != "chrome/gone-2,os/../escape,os/gone-1" {
		t.Fatalf("tasks %d missing %v", len(s.tasks), res.Missing)
	}
}

func TestParseTaskErrors(t *testing.T) {
	good := `{
  "id": "t1",
  "instruction": "do it",
  "config": [{"type": "launch", "parameters": {"command": ["x"]}}],
  "evaluator": {
    "func": ["a", "b"],
    "result": [{"type": "x"}, {"type": "y"}],
    "expected": [{"type": "rule"}, {"type": "rule"}],
    "conj": "or"
  },
  "future_field": {"kept": [1, 2]}
}`
	task, err := ParseTask("examples/os/t1.json", "os", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if task.Raw != good || !strings.Contains(task.Judge, `"conj":"or"`) || task.App != "os" || !task.Feasible {
		t.Fatalf("%+v", task)
	}
	cases := []struct {
		edit  func(string) string
		field string
		line  int
	}{
		{func(s string) string { return strings.Replace(s, `"id": "t1"`, `"id": "t2"`, 1) }, "id", 2},
		{func(s string) string { return strings.Replace(s, `"do it"`, `42`, 1) }, "instruction", 3},
		{func(s string) string { return strings.Replace(s, `"type": "launch"`, `"kind": "launch"`, 1) }, "config[0].type", 4},
		{func(s string) string { return strings.Replace(s, `"func": ["a", "b"]`, `"func": 7`, 1) }, "evaluator.func", 6},
		{func(s string) string {
			return strings.Replace(s, `[{"type": "x"}, {"type": "y"}]`, `[{"type": "x"}]`, 1)
		}, "evaluator.result", 7},
		{func(s string) string { return strings.Replace(s, `"conj": "or"`, `"conj": "xor"`, 1) }, "evaluator.conj", 9},
		{func(s string) string { return strings.Replace(s, `"conj": "or"`, `"conj": "or",`, 1) }, "json", 10},
		{func(s string) string { return strings.Replace(s, `"evaluator": {`, `"evaluator": [{`, 1) + "]" }, "json", 0},
	}
	for i, c := range cases {
		_, err := ParseTask("examples/os/t1.json", "os", []byte(c.edit(good)))
		var re *record.Error
		if !errors.As(err, &re) {
			t.Errorf("case %d: want a record error, got %v", i, err)
			continue
		}
		if re.Field != c.field || (c.line > 0 && re.Line != c.line) || re.File != "examples/os/t1.json" || re.Raw == "" {
			t.Errorf("case %d: got %s (line %d field %s), want line %d field %s", i, re, re.Line, re.Field, c.line, c.field)
		}
	}
}

// FuzzParseTask: no input panics, and an accepted task is a valid row that
// keeps its bytes.
func FuzzParseTask(f *testing.F) {
	if dir, err := sampleDir(); err == nil {
		files, _ := filepath.Glob(filepath.Join(dir, "examples", "*", "*.json"))
		for i, p := range files {
			if i%6 == 0 {
				b, _ := os.ReadFile(p)
				f.Add(b)
			}
		}
	}
	f.Add([]byte(`{"id":"x","instruction":"","evaluator":{"func":"infeasible"}}`))
	f.Add([]byte(`{"id":"x","instruction":"i","config":null,"evaluator":{"func":["a"],"result":[{}],"options":[{}],"conj":"and"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		task, err := ParseTask("examples/d/x.json", "d", raw)
		if err != nil {
			var re *record.Error
			if !errors.As(err, &re) || re.Field == "" {
				t.Fatalf("error without a field: %v", err)
			}
			return
		}
		if err := schemas.Tasks.Validate(&task); err != nil || task.Raw != string(raw) {
			t.Fatalf("accepted an invalid task: %v", err)
		}
	})
}

// sampleDir finds the OSWorld sample without a testing.T (fuzz seeding).
func sampleDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, "..", "shared", "data", "osworld")
			_, err := os.Stat(p)
			return p, err
		}
		if filepath.Dir(dir) == dir {
			return "", os.ErrNotExist
		}
		dir = filepath.Dir(dir)
	}
}
