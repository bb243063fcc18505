package simdesk

import (
	"errors"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/schemas"
)

func TestOSWorldRoundTrip(t *testing.T) {
	for _, task := range Pool()[:40] {
		b, err := ToOSWorld(task)
		if err != nil {
			t.Fatal(err)
		}
		back, err := FromOSWorld(b)
		if err != nil {
			t.Fatalf("%s: %v", task.TaskID, err)
		}
		if back.TaskID != task.TaskID || back.Setup != task.Setup || back.Judge != task.Judge || back.Feasible != task.Feasible || back.Domain != task.Domain {
			t.Fatalf("%s: round trip changed the task", task.TaskID)
		}
	}
}

func TestCheckTaskNamesField(t *testing.T) {
	base := schemas.Task{TaskID: "x", Feasible: true, Setup: "[]"}
	cases := []struct{ judge, setup, want string }{
		{`{"func":"is_true","result":{"type":"setting","key":"display.bluetooth"}}`, "[]", "result.key: unknown setting"},
		{`{"func":["is_true","is_true"],"result":[{"type":"file_exists","path":"~/a"},{"type":"window_open","app":"browser"}],"expected":[null,null]}`, "[]", "result[1].app: unknown app"},
		{`{"func":"bogus","result":{"type":"file_exists","path":"~/a"}}`, "[]", "func: unknown metric"},
		{`{"func":"is_true","result":{"type":"file_exists","path":"~/a"}}`, `[{"type":"format_disk","parameters":{}}]`, "setup[0].type: unknown setup type"},
		{`{"func":"is_true","result":{"type":"file_exists","path":"~/a"}}`, `[{"type":"create_file","parameters":{"path":"~/a","colour":"red"}}]`, "setup[0] (create_file): parameters"},
		{`{"func":"infeasible"}`, "[]", "feasible is true"},
	}
	for _, c := range cases {
		task := base
		task.Judge, task.Setup = c.judge, c.setup
		err := CheckTask(task)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckTask(%s, %s) = %v, want an error containing %q", c.judge, c.setup, err, c.want)
		}
	}
	ok := base
	ok.Judge = `{"func":"is_true","result":{"type":"setting","key":"display.dark_mode"}}`
	if err := CheckTask(ok); err != nil {
		t.Fatal(err)
	}
}

// The planner refuses judges it has no strategy for, with ErrNoPlan, and
// plans judges written by hand (as a synthesizer would) that no built-in
// family uses.
func TestOracleFromJudge(t *testing.T) {
	_, err := Oracle(schemas.Task{TaskID: "x", Judge: `{"func":"compare_list","result":{"type":"dir_listing","path":"~/Documents"},"expected":{"type":"rule","rules":{"expected":["a"]}}}`})
	if !errors.Is(err, ErrNoPlan) {
		t.Fatalf("want ErrNoPlan, got %v", err)
	}
	synth := []schemas.Task{
		{TaskID: "synth-1", Setup: BuildSetup(createFile("~/Documents/a.txt", "x\n")),
			Judge: judge.Build("and", exists("~/Desktop/Inbox/a.txt"), missing("~/Documents/a.txt"), settingCrit("display.dark_mode", "true"),
				crit("exact_match", getter("active_window"), rule("files")))},
		{TaskID: "synth-2", Judge: judge.Build("or", crit("is_true", &judge.Getter{Type: "window_open", App: "mail"}, nil), settingCrit("sound.mute", "true"))},
		{TaskID: "synth-3", Setup: BuildSetup(createFile("~/Documents/n.txt", "alpha\nbeta\n")),
			Judge: judge.Build("and", crit("check_include_exclude", fileGetter("file_content", "~/Documents/n.txt"), &judge.Getter{Type: "rule", Rules: &judge.Rules{Include: []string{"gamma"}, Exclude: []string{"beta"}}}))},
		{TaskID: "synth-4", Setup: BuildSetup(openApp("editor"), Step("type_text", map[string]string{"text": "draft"})),
			Judge: judge.Build("and", crit("exact_match", getter("editor_text"), rule("final text")), crit("is_false", &judge.Getter{Type: "window_open", App: "files"}, nil))},
		{TaskID: "synth-5", Setup: BuildSetup(openApp("files"), openApp("sheet")),
			Judge: judge.Build("and", crit("is_false", &judge.Getter{Type: "window_open", App: "files"}, nil), crit("exact_match", &judge.Getter{Type: "sheet_cell", Path: "~/Documents/new.csv", Cell: "C30"}, rule("x")))},
	}
	sim, _ := NewSim(Options{TreeOnly: true})
	for _, task := range synth {
		task.Feasible = true
		if err := CheckTask(task); err != nil {
			t.Fatalf("%s: %v", task.TaskID, err)
		}
		steps, err := oracleSteps(sim, task)
		if err != nil {
			t.Fatalf("%s: %v", task.TaskID, err)
		}
		t.Logf("%s solved in %d steps", task.TaskID, steps)
	}
}
