package server

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/simdesk"
)

// The requests below are the shapes OSWorld's PythonController
// (desktop_env/controllers/python.py) and SetupController (setup.py) send,
// written from their documented behaviour.

// pkgsPrefix is what PythonController.execute_python_command puts before a
// command.
const pkgsPrefix = "import pyautogui; import time; pyautogui.FAILSAFE = False; "

type execResult struct {
	Status       string `json:"status"`
	Output       string `json:"output"`
	Error        string `json:"error"`
	ReturnCode   int    `json:"returncode"`
	Message      string `json:"message"`
	Verification string `json:"verification"`
}

// pyCommand posts {"command": ["python", "-c", prefix + cmd], "shell":
// false} to /execute, as execute_python_command does.
func pyCommand(t *testing.T, base, cmd string) (int, execResult) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"command": []string{"python", "-c", pkgsPrefix + cmd}, "shell": false})
	return postExec(t, base, "/execute", string(body))
}

func postExec(t *testing.T, base, p, body string) (int, execResult) {
	t.Helper()
	code, b := callURL(t, "POST", base+p, "application/json", body)
	var r execResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s %s: reply %d %q is not JSON: %v", p, body, code, b, err)
	}
	return code, r
}

// TestPythonControllerActions sends every execute_action type as
// PythonController writes it.
func TestPythonControllerActions(t *testing.T) {
	ts, d := newServer(t)
	// get_vm_platform / get_vm_machine.
	for cmd, want := range map[string]string{"import platform; print(platform.system())": "Linux", "import platform; print(platform.machine())": "x86_64"} {
		if code, r := pyCommand(t, ts.URL, cmd); code != 200 || strings.TrimSpace(r.Output) != want {
			t.Fatalf("%s: %d %+v", cmd, code, r)
		}
	}
	// Each line: the command, then a check on the desktop afterwards.
	steps := []struct {
		cmd   string
		check func() error
	}{
		{"pyautogui.moveTo(640, 400, 0.7316, pyautogui.easeInQuad)", mouseAt(d, 640, 400)},
		{"pyautogui.moveTo(320, 200, 0.51, pyautogui.easeOutQuad)", mouseAt(d, 320, 200)},
		{"pyautogui.moveTo(330, 210, 0.9, pyautogui.easeInOutQuad)", mouseAt(d, 330, 210)},
		{"pyautogui.moveTo(340, 220, 0.6, pyautogui.easeInBounce)", mouseAt(d, 340, 220)},
		{"pyautogui.moveTo(350, 230, 0.7, pyautogui.easeInElastic)", mouseAt(d, 350, 230)},
		{"pyautogui.moveTo()", mouseAt(d, 350, 230)},
		{"pyautogui.click()", nil},
		{"pyautogui.click(button='left', x=60, y=16, clicks=1)", focused(d, "files")},
		{"pyautogui.click(button='left', clicks=2)", nil},
		{"pyautogui.click(button='right')", nil},
		{"pyautogui.click(x=700, y=500)", nil},
		{"pyautogui.click(x=700, y=500, clicks=1)", nil},
		{"pyautogui.mouseDown()", held(d, true)},
		{"pyautogui.mouseUp()", held(d, false)},
		{"pyautogui.mouseDown(button='left')", held(d, true)},
		{"pyautogui.moveTo(720, 520, 0.5, pyautogui.easeInQuad)", nil},
		{"pyautogui.mouseUp(button='left')", held(d, false)},
		{"pyautogui.rightClick()", nil},
		{"pyautogui.rightClick(x=700, y=500)", nil},
		{"pyautogui.press('esc')", nil},
		{"pyautogui.doubleClick()", nil},
		{"pyautogui.doubleClick(x=700, y=500)", nil},
		{"pyautogui.dragTo(710, 510, duration=1.0, button='left', mouseDownUp=True)", mouseAt(d, 710, 510)},
		{"pyautogui.hscroll(-2)", nil},
		{"pyautogui.vscroll(-3)", nil},
		{"pyautogui.typewrite('it\\'s \"quoted\"\\n')", nil},
		{"pyautogui.press('enter')", nil},
		{"pyautogui.keyDown('ctrl')", modifiers(d, "ctrl")},
		{"pyautogui.press('a')", nil},
		{"pyautogui.keyUp('ctrl')", modifiers(d)},
		{"pyautogui.hotkey('ctrl', 'c')", nil},
	}
	for _, st := range steps {
		code, r := pyCommand(t, ts.URL, st.cmd)
		if code != 200 || r.Status != "success" || r.ReturnCode != 0 {
			t.Fatalf("%s: %d %+v", st.cmd, code, r)
		}
		if st.check != nil {
			if err := st.check(); err != nil {
				t.Fatalf("%s: %v", st.cmd, err)
			}
		}
	}
	// A script outside the subset fails explicitly (rc 1), changing nothing.
	before, _ := d.MarshalState()
	if code, r := pyCommand(t, ts.URL, "pyautogui.click(10, 10); pyautogui.locateOnScreen('a.png')"); code != 200 || r.ReturnCode != 1 || !strings.Contains(r.Error, "locateOnScreen") {
		t.Fatalf("outside the subset: %d %+v", code, r)
	}
	if after, _ := d.MarshalState(); !bytes.Equal(before, after) {
		t.Fatal("a refused script changed the state")
	}
	// run_python (PythonController.run_python_script).
	code, b := callURL(t, "POST", ts.URL+"/run_python", "application/json", `{"code": "import platform\nprint(platform.system())"}`)
	var rp struct {
		Status, Message, Output string
		ReturnCode              int `json:"return_code"`
	}
	if json.Unmarshal(b, &rp); code != 200 || rp.Status != "success" || rp.Output != "Linux\n" {
		t.Fatalf("run_python: %d %s", code, b)
	}
	// run_bash_script (PythonController.run_bash_script).
	code, b = callURL(t, "POST", ts.URL+"/run_bash_script", "application/json", `{"script": "cd Documents\nmkdir -p a && ls", "timeout": 30, "working_dir": "~"}`)
	if code != 200 || !strings.Contains(string(b), `"output":"a\n`) {
		t.Fatalf("run_bash_script: %d %s", code, b)
	}
}

func mouseAt(d *simdesk.Desktop, x, y int) func() error {
	return func() error {
		// Pixels go through the 1000-wide grid (one pixel of slack).
		if dx, dy := d.S.Mouse.X-x, d.S.Mouse.Y-y; dx < 0 || dx > 1 || dy < 0 || dy > 1 {
			return fmt.Errorf("mouse at %v, want (%d, %d)", d.S.Mouse, x, y)
		}
		return nil
	}
}

func focused(d *simdesk.Desktop, app string) func() error {
	return func() error {
		if d.S.Focused() != app {
			return fmt.Errorf("focus %q, want %q", d.S.Focused(), app)
		}
		return nil
	}
}

func held(d *simdesk.Desktop, down bool) func() error {
	return func() error {
		if (d.S.Input != nil && d.S.Input.At != nil) != down {
			return fmt.Errorf("button held: %+v, want %v", d.S.Input, down)
		}
		return nil
	}
}

func modifiers(d *simdesk.Desktop, keys ...string) func() error {
	return func() error {
		var got []string
		if d.S.Input != nil {
			got = d.S.Input.Keys
		}
		if strings.Join(got, "+") != strings.Join(keys, "+") {
			return fmt.Errorf("held keys %v, want %v", got, keys)
		}
		return nil
	}
}

// TestPythonControllerReads: screenshot, accessibility tree (XML that
// ElementTree-like parsers read), files, directory trees, sizes.
func TestPythonControllerReads(t *testing.T) {
	ts, d := newServer(t)
	code, b := callURL(t, "GET", ts.URL+"/accessibility", "", "")
	var at struct {
		AT string `json:"AT"`
	}
	if json.Unmarshal(b, &at); code != 200 {
		t.Fatalf("accessibility %d", code)
	}
	var root struct {
		XMLName xml.Name
	}
	if err := xml.Unmarshal([]byte(at.AT), &root); err != nil || root.XMLName.Local != "desktop-frame" {
		t.Fatalf("AT is not OSWorld's XML: %v %.100s", err, at.AT)
	}
	if lin, err := simdesk.LinearizeAT([]byte(at.AT)); err != nil || !strings.HasPrefix(lin, "tag\tname\ttext") {
		t.Fatalf("linearize: %v", err)
	}
	// get_file: form file_path.
	if err := d.ApplySetup(simdesk.BuildSetup(simdesk.Step("create_file", map[string]string{"path": "~/Desktop/a b.txt", "content": "bytes"}))); err != nil {
		t.Fatal(err)
	}
	code, b = callURL(t, "POST", ts.URL+"/file", "application/x-www-form-urlencoded", url.Values{"file_path": {"/home/user/Desktop/a b.txt"}}.Encode())
	if code != 200 || string(b) != "bytes" {
		t.Fatalf("file %d %q", code, b)
	}
	// get_vm_directory_tree, get_vm_desktop_path, get_vm_screen_size, get_vm_window_size.
	if code, b := callURL(t, "POST", ts.URL+"/list_directory", "application/json", `{"path": "~/Desktop"}`); code != 200 || !strings.Contains(string(b), `"a b.txt"`) {
		t.Fatalf("list_directory %d %s", code, b)
	}
	if code, b := callURL(t, "POST", ts.URL+"/desktop_path", "", ""); code != 200 || !strings.Contains(string(b), "/home/user/Desktop") {
		t.Fatalf("desktop_path %d %s", code, b)
	}
	if code, b := callURL(t, "POST", ts.URL+"/screen_size", "", ""); code != 200 || !strings.Contains(string(b), `"width":1280`) {
		t.Fatalf("screen_size %d %s", code, b)
	}
	if code, b := callURL(t, "GET", ts.URL+"/terminal", "", ""); code != 200 || !strings.Contains(string(b), `"output":null`) {
		t.Fatalf("terminal %d %s", code, b)
	}
}

// TestSetupControllerRequests: the setup endpoints with the bodies
// SetupController sends.
func TestSetupControllerRequests(t *testing.T) {
	ts, d := newServer(t)
	// _upload_file_setup / _download_setup: multipart file_path + file_data.
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("file_path", "/home/user/Desktop/setup.sh")
	fw, _ := mw.CreateFormFile("file_data", "setup.sh")
	fw.Write([]byte("#!/bin/bash\nmkdir -p ~/Desktop/made_by_script\n"))
	mw.Close()
	if code, b := callURL(t, "POST", ts.URL+"/setup/upload", mw.FormDataContentType(), buf.String()); code != 200 {
		t.Fatalf("upload %d %s", code, b)
	}
	// _execute_setup: list and string commands, shell as a bool or string.
	for _, c := range []struct {
		body string
		out  string
	}{
		{`{"command": ["mkdir", "-p", "/home/user/project/.vscode"], "shell": false}`, ""},
		{`{"command": "mkdir -p ~/Desktop/photos && mkdir -p ~/Desktop/cpjpg", "shell": true}`, ""},
		{`{"command": "mkdir -p ~/Desktop/x && ls ~/Desktop", "shell": "true"}`, "cpjpg\nphotos\nsetup.sh\ntodo.txt\nx\n"},
		{`{"command": ["/bin/bash", "-c", "cd /home/user/Desktop && chmod +x setup.sh && ./setup.sh"], "shell": false}`, ""},
		{`{"command": ["bash", "-c", "echo a | cat"]}`, "a\n"},
		{`{"command": "echo split by shlex", "shell": false}`, "split by shlex\n"},
		{`{"command": ["ls -a"], "shell": true}`, "."},
	} {
		code, r := postExec(t, ts.URL, "/setup/execute", c.body)
		if code != 200 || r.ReturnCode != 0 || !strings.HasPrefix(r.Output, c.out) {
			t.Errorf("%s: %d %+v", c.body, code, r)
		}
	}
	if !d.S.FS.IsDir("/home/user/Desktop/made_by_script") || !d.S.FS.IsDir("/home/user/project/.vscode") {
		t.Fatal("setup commands did not run")
	}
	// Unknown programs: OSWorld's error form, nothing changed, no stray file.
	before, _ := d.MarshalState()
	for _, body := range []string{
		`{"command": ["gsettings", "set", "org.gnome.desktop.session", "idle-delay", "300"]}`,
		`{"command": "mkdir -p ~/y && gio trash ~/x", "shell": true}`,
		`{"command": "mkdir -p ~/y && ls", "shell": false}`,
	} {
		code, r := postExec(t, ts.URL, "/setup/execute", body)
		if code != 500 || r.Status != "error" || r.Message == "" {
			t.Errorf("%s: %d %+v", body, code, r)
		}
	}
	if after, _ := d.MarshalState(); !bytes.Equal(before, after) {
		t.Fatal("a refused command changed the state")
	}
	// _launch_setup.
	for _, body := range []string{`{"command": ["nautilus", "/home/user/Desktop"], "shell": false}`, `{"command": "libreoffice --calc", "shell": true}`} {
		if code, b := callURL(t, "POST", ts.URL+"/setup/launch", "application/json", body); code != 200 || !strings.Contains(string(b), "launched successfully") {
			t.Errorf("launch %s: %d %s", body, code, b)
		}
	}
	if code, b := callURL(t, "POST", ts.URL+"/setup/launch", "application/json", `{"command": ["google-chrome", "--remote-debugging-port=1337"]}`); code != 500 || !strings.Contains(string(b), `"status":"error"`) {
		t.Errorf("launch chrome: %d %s", code, b)
	}
	// _open_setup.
	if code, b := callURL(t, "POST", ts.URL+"/setup/open_file", "application/json", `{"path": "/home/user/Desktop/setup.sh"}`); code != 200 {
		t.Errorf("open %d %s", code, b)
	}
	if code, _ := callURL(t, "POST", ts.URL+"/setup/open_file", "application/json", `{"path": "/home/user/missing.xlsx"}`); code != 404 {
		t.Errorf("open missing: %d", code)
	}
	// _activate_window_setup / _close_window_setup.
	for _, c := range []struct {
		p, body string
		code    int
	}{
		{"/setup/activate_window", `{"window_name": "LibreOffice Calc", "strict": false, "by_class": false}`, 200},
		{"/setup/activate_window", `{"window_name": "Untitled 1 - LibreOffice Calc", "strict": true, "by_class": false}`, 200},
		{"/setup/activate_window", `{"window_name": "untitled 1 - libreoffice calc", "strict": true}`, 404},
		{"/setup/activate_window", `{"window_name": "libreoffice-calc", "by_class": true}`, 200},
		{"/setup/activate_window", `{"window_name": "Google Chrome"}`, 404},
		{"/setup/activate_window", `{"strict": true}`, 400},
		{"/setup/close_window", `{"window_name": "Desktop", "strict": true, "by_class": false}`, 200},
	} {
		if code, b := callURL(t, "POST", ts.URL+c.p, "application/json", c.body); code != c.code {
			t.Errorf("%s %s: %d %s, want %d", c.p, c.body, code, b, c.code)
		}
	}
	if d.S.Focused() != "sheet" || d.S.FindWindow("nautilus", false, true) != "" {
		t.Fatalf("windows after the steps: %v", d.S.WindowList())
	}
	// _execute_with_verification_setup.
	for _, c := range []struct {
		body, status string
		code         int
	}{
		{`{"command": ["gedit"], "shell": false, "verification": {"window_exists": "Text Editor"}, "max_wait_time": 10, "check_interval": 1}`, "success", 200},
		{`{"command": ["true"], "verification": {"window_exists": "Google Chrome"}, "max_wait_time": 5}`, "verification_failed", 500},
		{`{"command": "mkdir -p ~/v", "shell": true, "verification": {"command_success": "ls ~/v"}}`, "success", 200},
		{`{"command": "true", "shell": true, "verification": {"command_success": "ls ~/nowhere"}}`, "verification_failed", 500},
		{`{"command": ["true"], "verification": {"window_gone": "x"}}`, "error", 500},
		{`{"command": ["true"]}`, "success", 200},
	} {
		code, r := postExec(t, ts.URL, "/setup/execute_with_verification", c.body)
		if code != c.code || r.Status != c.status {
			t.Errorf("%s: %d %+v, want %d %s", c.body, code, r, c.code, c.status)
		}
	}
	// Downloads need the network: the server's own endpoint says so.
	if code, b := callURL(t, "POST", ts.URL+"/setup/download_file", "application/json", `{"url": "https://x/a", "path": "~/a"}`); code != 501 || !strings.Contains(string(b), `"status":"error"`) {
		t.Errorf("download_file: %d %s", code, b)
	}
}

func callURL(t *testing.T, method, u, ctype, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
