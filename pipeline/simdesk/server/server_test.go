package server

import (
	"bytes"
	"encoding/json"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/simdesk"
)

func newServer(t *testing.T) (*httptest.Server, *simdesk.Desktop) {
	t.Helper()
	d, err := simdesk.New(1280, 800, 1)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(New(d))
	t.Cleanup(ts.Close)
	return ts, d
}

func call(t *testing.T, ts *httptest.Server, method, p, ctype, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, ts.URL+p, strings.NewReader(body))
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

func TestEndpoints(t *testing.T) {
	ts, d := newServer(t)
	if code, b := call(t, ts, "GET", "/platform", "", ""); code != 200 || string(b) != "Linux" {
		t.Fatalf("platform %d %q", code, b)
	}
	code, b := call(t, ts, "GET", "/screenshot", "", "")
	if img, err := png.Decode(bytes.NewReader(b)); code != 200 || err != nil || img.Bounds().Dx() != 1280 {
		t.Fatalf("screenshot %d %v", code, err)
	}
	var at map[string]string
	_, b = call(t, ts, "GET", "/accessibility", "", "")
	if err := json.Unmarshal(b, &at); err != nil || !strings.HasPrefix(at["AT"], "<desktop-frame xmlns:st=") {
		t.Fatalf("accessibility %v %.80s", err, at["AT"])
	}
	_, b = call(t, ts, "GET", "/accessibility?format=json", "", "")
	if err := json.Unmarshal(b, &at); err != nil || !json.Valid([]byte(at["AT"])) {
		t.Fatalf("accessibility as JSON %v", err)
	}
	if _, b := call(t, ts, "POST", "/screen_size", "", ""); string(b) != "{\"height\":800,\"width\":1280}\n" {
		t.Fatalf("screen size %s", b)
	}
	// A pyautogui command as OSWorld's PythonController sends it.
	cmd := `{"command": ["python", "-c", "import pyautogui; import time; pyautogui.FAILSAFE = False; pyautogui.moveTo(100, 200)"], "shell": false}`
	code, b = call(t, ts, "POST", "/execute", "application/json", cmd)
	var r struct {
		Status     string `json:"status"`
		Error      string `json:"error"`
		ReturnCode int    `json:"returncode"`
	}
	if json.Unmarshal(b, &r); code != 200 || r.Status != "success" || r.ReturnCode != 0 {
		t.Fatalf("execute %d %s", code, b)
	}
	// Pixels go through the 1000-wide grid: on a 1280-wide screen x=100 is
	// not on it and lands one pixel over.
	if _, b := call(t, ts, "GET", "/cursor_position", "", ""); string(b) != "[101,200]\n" {
		t.Fatalf("cursor %s", b)
	}
	_, b = call(t, ts, "POST", "/execute", "application/json", `{"command": "python -c 'pyautogui.fly()'", "shell": true}`)
	if json.Unmarshal(b, &r); r.ReturnCode == 0 || !strings.Contains(r.Error, "fly") {
		t.Fatalf("bad pyautogui: %s", b)
	}
	code, b = call(t, ts, "POST", "/execute", "application/json", `{"command": ["curl", "evil.example"]}`)
	if code != 500 || !strings.Contains(string(b), `"status":"error"`) || !strings.Contains(string(b), "No such file or directory: 'curl'") {
		t.Fatalf("unknown program: %d %s", code, b)
	}
	if code, _ := call(t, ts, "POST", "/execute", "application/json", `{"command": 5}`); code != 500 {
		t.Fatalf("malformed command: %d", code)
	}
	// Upload, then read back through /file and /list_directory.
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("file_path", "~/Documents/up.txt")
	fw, _ := mw.CreateFormFile("file_data", "up.txt")
	fw.Write([]byte("uploaded"))
	mw.Close()
	if code, b := call(t, ts, "POST", "/setup/upload", mw.FormDataContentType(), buf.String()); code != 200 || !strings.Contains(string(b), "8 bytes") {
		t.Fatalf("upload %d %s", code, b)
	}
	form := url.Values{"file_path": {"~/Documents/up.txt"}}.Encode()
	if code, b := call(t, ts, "POST", "/file", "application/x-www-form-urlencoded", form); code != 200 || string(b) != "uploaded" {
		t.Fatalf("file %d %s", code, b)
	}
	if code, _ := call(t, ts, "POST", "/file", "application/x-www-form-urlencoded", url.Values{"file_path": {"~/nope"}}.Encode()); code != 404 {
		t.Fatalf("missing file: %d", code)
	}
	code, b = call(t, ts, "POST", "/list_directory", "application/json", `{"path": "~/Documents"}`)
	if code != 200 || !strings.Contains(string(b), `"name":"up.txt"`) {
		t.Fatalf("list %d %s", code, b)
	}
	if code, _ := call(t, ts, "POST", "/list_directory", "application/json", `{"path": "~/Documents/up.txt"}`); code != 400 {
		t.Fatalf("list a file: %d", code)
	}
	// Setup endpoints.
	if code, _ := call(t, ts, "POST", "/setup/open_file", "application/json", `{"path": "~/Documents/up.txt"}`); code != 200 || d.S.Focused() != "editor" {
		t.Fatalf("open_file %d, focus %s", code, d.S.Focused())
	}
	if code, _ := call(t, ts, "POST", "/setup/launch", "application/json", `{"command": ["nautilus"]}`); code != 200 || d.S.Focused() != "files" {
		t.Fatalf("launch %d", code)
	}
	if code, _ := call(t, ts, "POST", "/setup/activate_window", "application/json", `{"window_name": "Text Editor"}`); code != 200 || d.S.Focused() != "editor" {
		t.Fatalf("activate %d", code)
	}
	if code, _ := call(t, ts, "POST", "/setup/close_window", "application/json", `{"window_name": "org.gnome.Nautilus", "by_class": true}`); code != 200 || len(d.S.Windows) != 1 {
		t.Fatalf("close %d %v", code, d.S.OpenApps())
	}
	if code, _ := call(t, ts, "POST", "/setup/activate_window", "application/json", `{"window_name": "Browser"}`); code != 404 {
		t.Fatalf("activate a missing window: %d", code)
	}
	if code, _ := call(t, ts, "POST", "/setup/download_file", "application/json", `{"url": "http://x", "path": "~/x"}`); code != 501 {
		t.Fatalf("download: %d", code)
	}
	code, b = call(t, ts, "POST", "/run_bash_script", "application/json", `{"script": "mkdir -p ~/B/C\nls ~/B"}`)
	if code != 200 || !strings.Contains(string(b), `"output":"C\n"`) {
		t.Fatalf("bash %d %s", code, b)
	}
}

func TestSimdeskExtensions(t *testing.T) {
	ts, d := newServer(t)
	var info Info
	_, b := call(t, ts, "GET", "/simdesk/info", "", "")
	if json.Unmarshal(b, &info); info.Name != "simdesk" || info.Width != 1280 {
		t.Fatalf("info %s", b)
	}
	setup := `{"seed": 3, "setup": [{"type": "create_file", "parameters": {"path": "~/r.txt", "content": "x"}}]}`
	if code, b := call(t, ts, "POST", "/simdesk/reset", "application/json", setup); code != 200 {
		t.Fatalf("reset %d %s", code, b)
	}
	if d.S.Seed != 3 {
		t.Fatal("reset ignored the seed")
	}
	_, st := call(t, ts, "GET", "/simdesk/state", "", "")
	call(t, ts, "POST", "/setup/execute", "application/json", `{"command": ["rm", "~/r.txt"]}`)
	if code, _ := call(t, ts, "POST", "/simdesk/state", "application/json", string(st)); code != 200 {
		t.Fatal("restore refused")
	}
	eval := `{"judge": "{\"func\":\"is_true\",\"result\":{\"type\":\"file_exists\",\"path\":\"~/r.txt\"}}"}`
	var rep EvaluateReply
	_, b = call(t, ts, "POST", "/simdesk/evaluate", "application/json", eval)
	if json.Unmarshal(b, &rep); rep.Score != 1 {
		t.Fatalf("evaluate %s", b)
	}
	eval = `{"judge": "{\"func\":\"is_true\",\"result\":{\"type\":\"file_exists\",\"path\":\"~/r.txt\"}}", "terminal": "fail"}`
	_, b = call(t, ts, "POST", "/simdesk/evaluate", "application/json", eval)
	if json.Unmarshal(b, &rep); rep.Score != 0 {
		t.Fatalf("a feasible task ended with fail scored %s", b)
	}
	if code, _ := call(t, ts, "POST", "/simdesk/evaluate", "application/json", `{"judge": "{\"func\":\"bogus\"}"}`); code != 400 {
		t.Fatal("bad judge accepted")
	}
	if code, _ := call(t, ts, "POST", "/simdesk/state", "application/json", `{"version": 99}`); code != 400 {
		t.Fatal("bad state accepted")
	}
}
