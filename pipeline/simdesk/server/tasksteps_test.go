package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"mime/multipart"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

// osworldStep is a step of an OSWorld task's config or postconfig.
type osworldStep struct {
	Type       string                     `json:"type"`
	Parameters map[string]json.RawMessage `json:"parameters"`
}

func loadOSWorldSteps(t *testing.T) map[string][]osworldStep {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "..", "shared", "data", "osworld", "examples")
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	if err != nil || len(files) == 0 {
		// The sample lives beside the checkout (../shared), as for the
		// exporter and audit tests; a checkout elsewhere has none to replay.
		t.Skipf("the OSWorld task sample is not beside the checkout at %s (%v)", dir, err)
	}
	sort.Strings(files)
	out := map[string][]osworldStep{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var task struct {
			Config    []osworldStep `json:"config"`
			Evaluator struct {
				Postconfig []osworldStep `json:"postconfig"`
			} `json:"evaluator"`
		}
		if err := json.Unmarshal(b, &task); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = append(task.Config, task.Evaluator.Postconfig...)
	}
	return out
}

// harnessFill replaces what OSWorld's harness fills into commands before
// sending them (SetupController: the screen size; DesktopEnv: the VM's
// password).
func harnessFill(raw json.RawMessage, w, h int) json.RawMessage {
	s := strings.NewReplacer("{SCREEN_WIDTH_HALF}", itoa(w/2), "{SCREEN_HEIGHT_HALF}", itoa(h/2), "{SCREEN_WIDTH}", itoa(w),
		"{SCREEN_HEIGHT}", itoa(h), "{CLIENT_PASSWORD}", "password").Replace(string(raw))
	return json.RawMessage(s)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestEveryOSWorldSetupStep sends every setup and postconfig step of the
// OSWorld sample to the server as SetupController would, each task on a
// fresh desktop: each step either succeeds and leaves the state it should,
// or fails in OSWorld's error form and changes nothing; no step leaves a
// stray file (one named after a shell operator, an option or a
// placeholder, or outside the user's folders).
func TestEveryOSWorldSetupStep(t *testing.T) {
	tasks := loadOSWorldSteps(t)
	counts := map[string]int{}
	for name, steps := range tasks {
		d, err := simdesk.New(simdesk.DefaultWidth, simdesk.DefaultHeight, 1)
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(New(d))
		for i, st := range steps {
			where := name + " step " + itoa(i) + " (" + st.Type + ")"
			before, _ := d.MarshalState()
			outcome := sendStep(t, ts.URL, d, st, where)
			counts[st.Type+" "+outcome]++
			if outcome == "refused" {
				if after, _ := d.MarshalState(); !bytes.Equal(before, after) {
					t.Errorf("%s: refused, yet the state changed", where)
				}
			}
		}
		for _, e := range d.S.FS.Entries {
			base := path.Base(e.Path)
			inHome := e.Path == "/home" || e.Path == vfs.Home || strings.HasPrefix(e.Path, vfs.Home+"/") || e.Path == "/tmp" || strings.HasPrefix(e.Path, "/tmp/")
			switch {
			case !inHome,
				strings.ContainsAny(base, "{}") && strings.Contains(base, "SCREEN"),
				strings.HasPrefix(base, "-"),
				base == "&&" || base == "||" || base == "|" || base == ";" || base == ">" || base == ">>" || base == "<" || base == "2>" || base == "&":
				t.Errorf("%s: stray entry %s", name, e.Path)
			}
		}
		ts.Close()
	}
	var keys []string
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%-40s %d", k, counts[k])
	}
	// The sample's steps, all sent: nothing went unexamined.
	total := 0
	for _, n := range counts {
		total += n
	}
	if total < 700 {
		t.Fatalf("only %d steps examined", total)
	}
}

// sendStep sends one step and checks the reply and state; it returns
// "ran", "refused" (OSWorld's error form, state unchanged) or "client"
// (a step SetupController runs without the desktop server).
func sendStep(t *testing.T, base string, d *simdesk.Desktop, st osworldStep, where string) string {
	t.Helper()
	post := func(p string, body any) (int, []byte) {
		b, _ := json.Marshal(body)
		return callURL(t, "POST", base+p, "application/json", string(b))
	}
	errorForm := func(code int, b []byte) bool {
		var r struct{ Status, Message string }
		return code == 500 && json.Unmarshal(b, &r) == nil && r.Status == "error" && r.Message != ""
	}
	switch st.Type {
	case "sleep":
		return "client" // SetupController sleeps on its side
	case "download":
		// SetupController fetches each file on the harness machine and
		// uploads it; here a stand-in body goes up, and the server's own
		// download endpoint says it has no network.
		var files []struct{ URL, Path string }
		if err := json.Unmarshal(st.Parameters["files"], &files); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		for _, f := range files {
			var buf bytes.Buffer
			mw := multipart.NewWriter(&buf)
			mw.WriteField("file_path", f.Path)
			fw, _ := mw.CreateFormFile("file_data", path.Base(f.Path))
			fw.Write([]byte("stand-in for " + f.URL))
			mw.Close()
			code, b := callURL(t, "POST", base+"/setup/upload", mw.FormDataContentType(), buf.String())
			p, _ := vfs.Clean(f.Path)
			if got, _ := d.S.FS.Read(p); code != 200 || got != "stand-in for "+f.URL {
				t.Errorf("%s: upload to %s: %d %s, file holds %q", where, f.Path, code, b, got)
			}
			if code, b := post("/setup/download_file", map[string]string{"url": f.URL, "path": f.Path}); code != 501 || !strings.Contains(string(b), `"status":"error"`) {
				t.Errorf("%s: download_file: %d %s", where, code, b)
			}
		}
		return "ran"
	case "launch":
		command, shell := st.Parameters["command"], st.Parameters["shell"]
		var line string
		if json.Unmarshal(command, &line) == nil && !isTrue(shell) && len(strings.Fields(line)) > 1 {
			command, _ = json.Marshal(strings.Fields(line)) // SetupController splits such strings
		}
		code, b := post("/setup/launch", map[string]json.RawMessage{"command": command, "shell": orFalse(shell)})
		switch {
		case code == 200 && strings.Contains(string(b), "launched successfully"):
			if d.S.Focused() == "" {
				t.Errorf("%s: launched, yet no window is open", where)
			}
			return "ran"
		case errorForm(code, b):
			return "refused"
		}
		t.Errorf("%s: %d %s", where, code, b)
	case "execute", "command":
		code, b := post("/setup/execute", map[string]json.RawMessage{"command": harnessFill(st.Parameters["command"], d.S.Width, d.S.Height), "shell": orFalse(st.Parameters["shell"])})
		var r struct {
			Status, Output, Error string
			ReturnCode            *int `json:"returncode"`
		}
		json.Unmarshal(b, &r)
		switch {
		case code == 200 && r.Status == "success" && r.ReturnCode != nil:
			if *r.ReturnCode != 0 && r.Error == "" {
				t.Errorf("%s: exit status %d without an error message", where, *r.ReturnCode)
			}
			checkMkdirs(t, d, st.Parameters["command"], *r.ReturnCode, where)
			return "ran"
		case errorForm(code, b):
			return "refused"
		}
		t.Errorf("%s: %d %s", where, code, b)
	case "open":
		var p string
		json.Unmarshal(st.Parameters["path"], &p)
		code, b := post("/setup/open_file", map[string]string{"path": p})
		switch {
		case code == 200:
			if !strings.Contains(d.S.WindowList()[len(d.S.Windows)-1].Title, path.Base(p)) {
				t.Errorf("%s: opened, yet the top window is %v", where, d.S.WindowList())
			}
			return "ran"
		case code == 404 && strings.HasPrefix(string(b), "File not found"), code == 500 && strings.HasPrefix(string(b), "Failed to open"):
			return "refused"
		}
		t.Errorf("%s: %d %s", where, code, b)
	case "activate_window", "close_window":
		var name string
		json.Unmarshal(st.Parameters["window_name"], &name)
		body := map[string]any{"window_name": name, "strict": isTrue(st.Parameters["strict"]), "by_class": isTrue(st.Parameters["by_class"])}
		want := d.S.FindWindow(name, isTrue(st.Parameters["strict"]), isTrue(st.Parameters["by_class"]))
		code, b := post("/setup/"+st.Type, body)
		switch {
		case code == 200 && want != "":
			if st.Type == "activate_window" && d.S.Focused() != want {
				t.Errorf("%s: activated, yet %s has the focus", where, d.S.Focused())
			}
			if st.Type == "close_window" && slicesContains(d.S.OpenApps(), want) {
				t.Errorf("%s: closed, yet %s is open", where, want)
			}
			return "ran"
		case code == 404 && want == "" && strings.Contains(string(b), "not found"):
			return "refused"
		}
		t.Errorf("%s: %d %s (window %q)", where, code, b, want)
	default:
		// Chrome's tabs, browsing history, Google Drive, logins: the
		// SetupController talks to Chrome's debugging port or to web
		// services, not to the desktop server; the simulator names them.
		raw, _ := json.Marshal(st.Parameters)
		if err := simdesk.CheckSetup(simdesk.BuildSetup(simdesk.SetupStep{Type: st.Type, Parameters: raw})); !errors.Is(err, simdesk.ErrUnsupported) {
			t.Errorf("%s: not reported unsupported: %v", where, err)
		}
		return "client"
	}
	return "failed"
}

// checkMkdirs: a mkdir -p command that succeeded made its folders.
func checkMkdirs(t *testing.T, d *simdesk.Desktop, command json.RawMessage, code int, where string) {
	t.Helper()
	var argv []string
	var line string
	if json.Unmarshal(command, &argv) != nil && json.Unmarshal(command, &line) == nil {
		argv = strings.Fields(line)
	}
	if code != 0 || len(argv) < 3 || argv[0] != "mkdir" || argv[1] != "-p" {
		return
	}
	for _, a := range argv[2:] {
		if a == "&&" || a == ";" {
			break
		}
		if p, err := vfs.Clean(a); err == nil && !d.S.FS.IsDir(p) {
			t.Errorf("%s: mkdir -p %s succeeded, yet there is no folder", where, a)
		}
	}
}

func isTrue(raw json.RawMessage) bool {
	v, _ := simdesk.ShellFlag(raw)
	return v
}

func orFalse(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("false")
	}
	return raw
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
