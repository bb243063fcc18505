package simdesk

import (
	"errors"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/schemas"
)

// TestWindowTitles: the apps are titled as the programs OSWorld's tasks
// name (docs/simdesk.md has the table).
func TestWindowTitles(t *testing.T) {
	d := newDesk(t, 1)
	steps := BuildSetup(Step("create_file", map[string]string{"path": "~/SalesRep.csv", "content": "a,1\n"}),
		Step("open_file", map[string]string{"path": "~/SalesRep.csv"}),
		Step("create_file", map[string]string{"path": "~/Documents/notes.txt", "content": "x"}),
		Step("open_file", map[string]string{"path": "~/Documents/notes.txt"}),
		Step("open_file", map[string]string{"path": "~/Documents"}),
		Step("open_app", map[string]string{"app": "settings"}), Step("open_app", map[string]string{"app": "mail"}))
	if err := d.ApplySetup(steps); err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"sheet":    {"SalesRep.csv - LibreOffice Calc", "libreoffice.libreoffice-calc"},
		"editor":   {"notes.txt - Text Editor", "gnome-text-editor.Gnome-text-editor"},
		"files":    {"Documents", "org.gnome.Nautilus.Org.gnome.Nautilus"},
		"settings": {"Settings", "gnome-control-center.Gnome-control-center"},
		"mail":     {"Inbox - Mozilla Thunderbird", "Mail.thunderbird"},
	}
	for _, w := range d.S.WindowList() {
		if got := [2]string{w.Title, w.Class}; got != want[w.App] {
			t.Errorf("%s: %q, want %q", w.App, got, want[w.App])
		}
	}
	// Unsaved changes leave Calc's title alone (strict steps match it).
	d.S.Sheet.Dirty = true
	if got := d.S.FindWindow("SalesRep.csv - LibreOffice Calc", true, false); got != "sheet" {
		t.Fatalf("strict title of a modified sheet: %q", got)
	}
	cases := []struct {
		name            string
		strict, byClass bool
		want            string
	}{
		{"libreoffice calc", false, false, "sheet"},
		{"SalesRep.csv - LibreOffice Calc", true, false, "sheet"},
		{"salesrep.csv - libreoffice calc", true, false, ""}, // strict is case-sensitive
		{"LibreOffice Calc", true, false, ""},                // and whole
		{"Mail.thunderbird", true, true, "mail"},
		{"thunderbird", false, true, "mail"},
		{"thunderbird", true, true, ""},
		{"Mozilla Thunderbird", false, false, "mail"},
		{"nautilus", false, true, "files"},
		{"Google Chrome", false, false, ""},
		{"Visual Studio Code", false, false, ""},
	}
	for _, c := range cases {
		if got := d.S.FindWindow(c.name, c.strict, c.byClass); got != c.want {
			t.Errorf("FindWindow(%q, strict %v, by_class %v) = %q, want %q", c.name, c.strict, c.byClass, got, c.want)
		}
	}
	// OSWorld's postconfig steps close Thunderbird by class.
	if err := d.ApplySetup(`[{"type":"close_window","parameters":{"window_name":"Mail.thunderbird","strict":true,"by_class":true}}]`); err != nil || d.S.window("mail") != nil {
		t.Fatalf("close by class: %v", err)
	}
	if err := d.ApplySetup(`[{"type":"activate_window","parameters":{"window_name":"SalesRep.csv - LibreOffice Calc","strict":true}}]`); err != nil || d.S.Focused() != "sheet" {
		t.Fatalf("activate strict: %v, focus %s", err, d.S.Focused())
	}
}

// TestOSWorldSetupSteps: OSWorld's step types either run or say why not.
func TestOSWorldSetupSteps(t *testing.T) {
	for _, c := range []struct{ setup, want string }{
		{`[{"type":"download","parameters":{"files":[{"url":"https://x/a.xlsx","path":"/home/user/a.xlsx"}]}}]`, "no network"},
		{`[{"type":"chrome_open_tabs","parameters":{"urls_to_open":["https://x"]}}]`, "no browser"},
		{`[{"type":"open","parameters":{"path":"/home/user/a.xlsx"}}]`, "no simulator app opens .xlsx"},
		{`[{"type":"launch","parameters":{"command":["google-chrome","--remote-debugging-port=1337"]}}]`, "google-chrome"},
		{`[{"type":"execute","parameters":{"command":["gsettings","set","a","b","c"]}}]`, "gsettings"},
		{`[{"type":"execute","parameters":{"command":"echo {CLIENT_PASSWORD} | sudo -S apt install jq -y","shell":true}}]`, "sudo"},
		{`[{"type":"execute","parameters":{"command":["python","-c","import pyautogui; pyautogui.locateOnScreen('a.png')"]}}]`, "locateOnScreen"},
	} {
		err := CheckSetup(c.setup)
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrUnsupported mentioning %q", c.setup, err, c.want)
		}
	}
	d := newDesk(t, 1)
	for _, setup := range []string{
		`[{"type":"execute","parameters":{"command":"mkdir -p ~/Desktop/photos && mkdir -p ~/Desktop/cpjpg","shell":"true"}}]`,
		`[{"type":"command","parameters":{"command":["mkdir","-p","/home/user/project/.vscode"]}}]`,
		`[{"type":"execute","parameters":{"command":["python","-c","import pyautogui; import time; pyautogui.click({SCREEN_WIDTH_HALF}, {SCREEN_HEIGHT_HALF}); time.sleep(0.5);"]}}]`,
		`[{"type":"execute","parameters":{"command":"ls ~/Desktop","stdout":"ls.txt","until":{"stdout":"photos"},"shell":true}}]`,
		`[{"type":"launch","parameters":{"command":"nautilus ~/Desktop","shell":false}}]`,
		`[{"type":"execute_with_verification","parameters":{"command":["gedit"],"verification":{"window_exists":"Text Editor"},"max_wait_time":10}}]`,
	} {
		if err := d.ApplySetup(setup); err != nil {
			t.Errorf("%s: %v", setup, err)
		}
	}
	if !d.S.FS.IsDir("/home/user/Desktop/cpjpg") || !d.S.FS.IsDir("/home/user/project/.vscode") || d.S.Mouse != (Point{640, 400}) {
		t.Fatalf("state after the steps: mouse %v", d.S.Mouse)
	}
	if err := d.ApplySetup(`[{"type":"execute","parameters":{"command":"ls ~/Desktop","until":{"stdout":"nothing"},"shell":true}}]`); err == nil {
		t.Fatal("an until that is not met passed")
	}
	if err := d.ApplySetup(`[{"type":"execute_with_verification","parameters":{"command":["true"],"verification":{"window_exists":"Google Chrome"}}}]`); err == nil || !strings.Contains(err.Error(), "verification_failed") {
		t.Fatalf("verification: %v", err)
	}
	if err := CheckSetup(`[{"type":"execute_with_verification","parameters":{"command":["true"],"verification":{"window_gone":"x"}}}]`); err == nil {
		t.Fatal("an unknown verification key passed")
	}
}

// TestPostconfigRunsBeforeJudging: OSWorld saves the document in the
// evaluator's postconfig, after the agent answered done.
func TestPostconfigRunsBeforeJudging(t *testing.T) {
	sim, err := NewSim(Options{TreeOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	task := schemas.Task{TaskID: "pc", Feasible: true,
		Setup: `[{"type":"create_file","parameters":{"path":"~/n.txt","content":"old"}},{"type":"open","parameters":{"path":"~/n.txt"}}]`,
		Judge: `{"func":"exact_match","result":{"type":"file_content","path":"~/n.txt"},"expected":{"type":"rule","rules":{"expected":"oldnew"}},` +
			`"postconfig":[{"type":"activate_window","parameters":{"window_name":"n.txt - Text Editor"}},` +
			`{"type":"execute","parameters":{"command":["python","-c","import pyautogui; pyautogui.hotkey(\"ctrl\", \"s\");"]}}]}`}
	if _, err := sim.Reset(task, 1); err != nil {
		t.Fatal(err)
	}
	for _, a := range []schemas.Action{{Kind: "hotkey", Keys: []string{"ctrl", "end"}}, {Kind: "type", Text: "new"}, {Kind: "done"}} {
		if o, err := sim.Step(a); err != nil || o.ActionError != "" {
			t.Fatalf("%+v: %v %s", a, err, o.ActionError)
		}
	}
	score, detail, err := sim.Evaluate()
	if err != nil || score != 1 {
		t.Fatalf("score %v %s %v", score, detail, err)
	}
}

// TestVMCommandLineGetter: OSWorld's vm_command_line getter runs its
// command on the desktop.
func TestVMCommandLineGetter(t *testing.T) {
	j, err := judge.Compile(`{"func":"exact_match","result":{"type":"vm_command_line","command":"[ -d ~/Desktop/todo_list_Jan_2 ] && echo 'Directory exists.' || echo 'Directory does not exist.'","shell":true},` +
		`"expected":{"type":"rule","rules":{"expected":"Directory exists.\n"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	d := newDesk(t, 1)
	if r, err := j.Evaluate(d); err != nil || r.Score != 0 {
		t.Fatalf("before: %+v %v", r, err)
	}
	d.RunShell("mkdir ~/Desktop/todo_list_Jan_2")
	if r, err := j.Evaluate(d); err != nil || r.Score != 1 {
		t.Fatalf("after: %+v %v", r, err)
	}
	bad, _ := judge.Compile(`{"func":"exact_match","result":{"type":"vm_command_line","command":["gsettings","get","a","b"]},"expected":{"type":"rule","rules":{"expected":"x"}}}`)
	if _, err := bad.Evaluate(d); !errors.Is(err, judge.ErrUnsupported) {
		t.Fatalf("a command the simulator lacks: %v", err)
	}
}
