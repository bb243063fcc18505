// Package server exposes the simulator over HTTP with the API of OSWorld's
// desktop server (desktop_env/server/main.py), so OSWorld clients, and this
// module's osworld client, can drive it like a VM: /screenshot,
// /accessibility, /execute (pyautogui through "python -c" and a small shell),
// the /setup/... endpoints, /file, /list_directory, /platform,
// /cursor_position, /screen_size, and a few more. Endpoints under /simdesk/
// are extensions: reset with a seed and setup, state save and restore, and
// judge evaluation on the server's state.
package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

// maxBody bounds request bodies (uploads included).
const maxBody = 8 << 20

// Timeouts of the server NewHTTPServer returns. A client gets ReadTimeout
// to send a request, body included (8 MiB over a slow link), and the
// server WriteTimeout from the end of the headers to the end of its reply,
// waiting for the state lock included; idle keep-alive connections are
// closed after IdleTimeout.
const (
	ReadHeaderTimeout = 10 * time.Second
	ReadTimeout       = 60 * time.Second
	WriteTimeout      = 60 * time.Second
	IdleTimeout       = 120 * time.Second
)

// NewHTTPServer returns the HTTP server of `cualake simdesk serve`: New(d)
// behind the timeouts above, so that no client, however slow, holds a
// connection forever.
func NewHTTPServer(d *simdesk.Desktop) *http.Server {
	return &http.Server{Handler: New(d), ReadHeaderTimeout: ReadHeaderTimeout, ReadTimeout: ReadTimeout,
		WriteTimeout: WriteTimeout, IdleTimeout: IdleTimeout}
}

// Server serves one simulated desktop. Requests are serialised: the
// simulator is a single-threaded state machine.
type Server struct {
	mu  sync.Mutex
	d   *simdesk.Desktop
	mux *http.ServeMux
}

// New returns a server over d.
func New(d *simdesk.Desktop) *Server {
	s := &Server{d: d, mux: http.NewServeMux()}
	routes := []struct {
		pattern string
		h       func(http.ResponseWriter, *http.Request)
	}{
		{"GET /screenshot", s.screenshot},
		{"GET /accessibility", s.accessibility},
		{"POST /execute", s.execute},
		{"POST /setup/execute", s.execute},
		{"POST /execute_with_verification", s.executeVerified},
		{"POST /setup/execute_with_verification", s.executeVerified},
		{"POST /run_python", s.runPython},
		{"POST /run_bash_script", s.runBash},
		{"POST /setup/launch", s.launch},
		{"POST /setup/open_file", s.openFile},
		{"POST /setup/activate_window", s.windowOp(true)},
		{"POST /setup/close_window", s.windowOp(false)},
		{"POST /setup/upload", s.upload},
		{"POST /setup/download_file", unsupported("downloads are not supported: the simulator has no network; send the file's bytes with /setup/upload")},
		{"POST /setup/change_wallpaper", unsupported("the simulator has no wallpaper")},
		{"POST /start_recording", unsupported("recording is not supported")},
		{"POST /end_recording", unsupported("recording is not supported")},
		{"POST /wallpaper", unsupported("the simulator has no wallpaper")},
		{"GET /platform", s.platform},
		{"GET /cursor_position", s.cursor},
		{"POST /screen_size", s.screenSize},
		{"POST /window_size", s.windowSize},
		{"POST /desktop_path", s.desktopPath},
		{"POST /list_directory", s.listDirectory},
		{"POST /file", s.file},
		{"GET /terminal", s.terminal},
		{"GET /simdesk/info", s.info},
		{"POST /simdesk/reset", s.reset},
		{"GET /simdesk/state", s.getState},
		{"POST /simdesk/state", s.putState},
		{"POST /simdesk/evaluate", s.evaluate},
	}
	for _, r := range routes {
		s.mux.HandleFunc(r.pattern, r.h)
	}
	return s
}

// ServeHTTP implements http.Handler. The body is read whole, up to
// maxBody, before the state lock is taken: a client that sends half a body
// and stalls then holds only its own connection, not every other client.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"status": "error",
				"message": fmt.Sprintf("request body larger than %d bytes", maxBody)})
			return
		}
		writeJSON(w, http.StatusBadRequest, map[string]string{"status": "error", "message": "read body: " + err.Error()})
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mux.ServeHTTP(w, r)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v) // the client hung up; nothing to do
}

func writeText(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg)
}

func unsupported(msg string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusNotImplemented, map[string]string{"status": "error", "message": msg})
	}
}

// decode reads a JSON body into v; an empty body leaves v as is.
func decode(r *http.Request, v any) error {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode body: %w", err)
	}
	return nil
}

func (s *Server) screenshot(w http.ResponseWriter, _ *http.Request) {
	b, err := s.d.Screenshot()
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"status": "error", "message": err.Error()})
		return
	}
	w.Header().Set("Content-Type", "image/png")
	_, _ = w.Write(b)
}

// accessibility answers {"AT": tree}: OSWorld's XML form, or with
// ?format=json the simulator's JSON tree (with grid centers and widget
// ids).
func (s *Server) accessibility(w http.ResponseWriter, r *http.Request) {
	switch f := r.URL.Query().Get("format"); f {
	case "json":
		writeJSON(w, http.StatusOK, map[string]string{"AT": string(s.d.Tree())})
	case "", "xml":
		writeJSON(w, http.StatusOK, map[string]string{"AT": string(s.d.TreeXML())})
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"status": "error", "message": fmt.Sprintf("format %q: want xml (the default) or json", f)})
	}
}

// commandBody is the payload of /execute, /execute_with_verification and
// /setup/launch.
type commandBody struct {
	Command       json.RawMessage `json:"command"`
	Shell         json.RawMessage `json:"shell"`
	Verification  json.RawMessage `json:"verification"`
	MaxWaitTime   json.RawMessage `json:"max_wait_time"`
	CheckInterval json.RawMessage `json:"check_interval"`
}

// readCommand decodes a command body; errors are answered as OSWorld's
// server answers an exception: 500 {"status": "error", "message"}.
func readCommand(w http.ResponseWriter, r *http.Request) (commandBody, simdesk.Command, bool) {
	var body commandBody
	if err := decode(r, &body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"status": "error", "message": err.Error()})
		return body, simdesk.Command{}, false
	}
	c, err := simdesk.ParseCommand(body.Command, body.Shell)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"status": "error", "message": err.Error()})
		return body, c, false
	}
	return body, c, true
}

func execReply(res simdesk.CommandResult) map[string]any {
	return map[string]any{"status": "success", "output": res.Output, "error": res.Error, "returncode": res.ReturnCode}
}

func (s *Server) execute(w http.ResponseWriter, r *http.Request) {
	_, c, ok := readCommand(w, r)
	if !ok {
		return
	}
	res := s.d.Execute(c)
	if res.Unsupported != "" {
		// OSWorld's server answers a command it could not run with 500.
		writeJSON(w, http.StatusInternalServerError, map[string]string{"status": "error", "message": res.Unsupported})
		return
	}
	writeJSON(w, http.StatusOK, execReply(res))
}

// executeVerified runs a command and checks its verification block as
// OSWorld's execute_with_verification does; the simulator acts at once,
// so one check decides and wait_time is 0 on success.
func (s *Server) executeVerified(w http.ResponseWriter, r *http.Request) {
	body, c, ok := readCommand(w, r)
	if !ok {
		return
	}
	v, err := simdesk.ParseVerification(body.Verification)
	if err == nil {
		err = c.Check()
	}
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"status": "error", "message": err.Error()})
		return
	}
	res := s.d.Execute(c)
	if res.Unsupported != "" {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"status": "error", "message": res.Unsupported})
		return
	}
	reply := execReply(res)
	if v.Empty() {
		writeJSON(w, http.StatusOK, reply)
		return
	}
	passed, err := s.d.Verify(v)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"status": "error", "message": err.Error()})
		return
	}
	if passed {
		reply["verification"], reply["wait_time"] = "passed", 0
		writeJSON(w, http.StatusOK, reply)
		return
	}
	wait := any(10)
	if len(body.MaxWaitTime) > 0 && string(body.MaxWaitTime) != "null" {
		wait = body.MaxWaitTime
	}
	reply["status"], reply["verification"], reply["wait_time"] = "verification_failed", "failed", wait
	writeJSON(w, http.StatusInternalServerError, reply)
}

func (s *Server) runPython(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Code string `json:"code"`
	}
	if err := decode(r, &body); err != nil || body.Code == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"status": "error", "message": "Code not supplied!"})
		return
	}
	res := s.d.RunCommand([]string{"python", "-c", body.Code})
	status := "success"
	msg := res.Output
	if res.Error != "" {
		if msg != "" {
			msg += "\n"
		}
		msg += res.Error
	}
	if res.ReturnCode != 0 {
		status = "error"
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": status, "message": msg, "need_more": false,
		"output": res.Output, "error": res.Error, "return_code": res.ReturnCode})
}

// runBash runs a script as OSWorld's /run_bash_script does (bash on a
// file, standard error merged into the output).
func (s *Server) runBash(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Script     string          `json:"script"`
		Timeout    json.RawMessage `json:"timeout"`
		WorkingDir string          `json:"working_dir"`
	}
	if err := decode(r, &body); err != nil || body.Script == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"status": "error", "output": "Script not supplied!", "error": "", "returncode": -1})
		return
	}
	dir := body.WorkingDir
	if dir == "" {
		dir = "~"
	}
	res := s.d.RunShellIn(dir, body.Script)
	if res.Unsupported != "" {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"status": "error", "output": "", "error": res.Unsupported, "returncode": -1})
		return
	}
	status := "success"
	if res.ReturnCode != 0 {
		status = "error"
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": status, "output": res.Output + res.Error, "error": "", "returncode": res.ReturnCode})
}

func (s *Server) launch(w http.ResponseWriter, r *http.Request) {
	_, c, ok := readCommand(w, r)
	if !ok {
		return
	}
	if err := simdesk.CheckLaunch(c); err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"status": "error", "message": err.Error()})
		return
	}
	res := s.d.Execute(c)
	if res.Unsupported != "" || res.ReturnCode != 0 {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"status": "error", "message": strings.TrimSpace(res.Unsupported + res.Error)})
		return
	}
	what := c.Line
	if !c.Shell {
		what = strings.Join(c.Argv, " ")
	}
	writeText(w, http.StatusOK, what+" launched successfully")
}

func (s *Server) openFile(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Path       string `json:"path"`
		WindowName string `json:"window_name"`
	}
	if err := decode(r, &body); err != nil || body.Path == "" {
		writeText(w, http.StatusBadRequest, "Path not supplied!")
		return
	}
	p, err := vfs.Clean(body.Path)
	if err != nil {
		writeText(w, http.StatusNotFound, "File not found: "+body.Path)
		return
	}
	if _, ok := s.d.S.FS.Stat(p); !ok {
		writeText(w, http.StatusNotFound, "File not found: "+p)
		return
	}
	if err := s.d.ApplySetup(simdesk.BuildSetup(simdesk.Step("open_file", map[string]string{"path": p}))); err != nil {
		writeText(w, http.StatusInternalServerError, fmt.Sprintf("Failed to open %s. Error: %v", body.Path, err))
		return
	}
	writeText(w, http.StatusOK, "File opened and window activated successfully")
}

// truth reads a JSON value with Python's truth, as OSWorld's server reads
// strict and by_class.
func truth(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

func (s *Server) windowOp(activate bool) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := decode(r, &body); err != nil {
			writeText(w, http.StatusBadRequest, "window_name required")
			return
		}
		name, _ := body["window_name"].(string)
		if name == "" {
			writeText(w, http.StatusBadRequest, "window_name required")
			return
		}
		strict, byClass := truth(body["strict"]), truth(body["by_class"])
		// OSWorld's Linux server answers 200 whatever wmctrl did; a window
		// that is not there is a 404 here, as on its Windows server.
		if activate {
			if !s.d.ActivateWindow(name, strict, byClass) {
				writeText(w, http.StatusNotFound, fmt.Sprintf("Window %s not found.", name))
				return
			}
			writeText(w, http.StatusOK, "Window activated successfully")
			return
		}
		if !s.d.CloseWindowNamed(name, strict, byClass) {
			writeText(w, http.StatusNotFound, fmt.Sprintf("Window %s not found.", name))
			return
		}
		writeText(w, http.StatusOK, "Window closed successfully.")
	}
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseMultipartForm(maxBody); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "file_path and file_data are required"})
		return
	}
	p := r.FormValue("file_path")
	f, _, err := r.FormFile("file_data")
	if p == "" || err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "file_path and file_data are required"})
		return
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "read file_data: " + err.Error()})
		return
	}
	step := simdesk.Step("create_file", map[string]string{"path": p, "content": string(data)})
	if err := s.d.ApplySetup(simdesk.BuildSetup(step)); err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "Failed to upload file: " + err.Error()})
		return
	}
	writeText(w, http.StatusOK, fmt.Sprintf("File Uploaded: %d bytes", len(data)))
}

func (s *Server) platform(w http.ResponseWriter, _ *http.Request) {
	writeText(w, http.StatusOK, "Linux")
}

func (s *Server) cursor(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, []int{s.d.S.Mouse.X, s.d.S.Mouse.Y})
}

func (s *Server) screenSize(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]int{"width": s.d.S.Width, "height": s.d.S.Height})
}

func (s *Server) windowSize(w http.ResponseWriter, r *http.Request) {
	name := r.FormValue("app_class_name")
	if name == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "app_class_name is required"})
		return
	}
	for _, win := range s.d.S.Windows {
		if strings.EqualFold(win.App, name) {
			writeJSON(w, http.StatusOK, map[string]int{"width": win.W, "height": win.H})
			return
		}
	}
	writeJSON(w, http.StatusOK, nil)
}

func (s *Server) desktopPath(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"desktop_path": vfs.Home + "/Desktop"})
}

type dirTree struct {
	Type     string     `json:"type"`
	Name     string     `json:"name"`
	Children []*dirTree `json:"children,omitempty"`
}

func (s *Server) listDirectory(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Path string `json:"path"`
	}
	if err := decode(r, &body); err != nil || body.Path == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "Missing 'path' parameter"})
		return
	}
	p, err := vfs.Clean(body.Path)
	if err != nil || !s.d.S.FS.IsDir(p) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "The provided path is not a directory"})
		return
	}
	var walk func(string) *dirTree
	walk = func(dir string) *dirTree {
		t := &dirTree{Type: "directory", Name: path.Base(dir), Children: []*dirTree{}}
		kids, _ := s.d.S.FS.Children(dir)
		for _, k := range kids {
			if k.Dir {
				t.Children = append(t.Children, walk(k.Path))
			} else {
				t.Children = append(t.Children, &dirTree{Type: "file", Name: k.Name()})
			}
		}
		return t
	}
	writeJSON(w, http.StatusOK, map[string]any{"directory_tree": walk(p)})
}

func (s *Server) file(w http.ResponseWriter, r *http.Request) {
	name := r.FormValue("file_path")
	if name == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "file_path is required"})
		return
	}
	p, err := vfs.Clean(name)
	if err != nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "File not found"})
		return
	}
	content, err := s.d.S.FS.Read(p)
	if err != nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "File not found"})
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="`+strings.ReplaceAll(path.Base(p), `"`, "")+`"`)
	_, _ = io.WriteString(w, content)
}

func (s *Server) terminal(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"output": nil, "status": "success"})
}

// Info is the reply of GET /simdesk/info; clients use it to detect a
// simulator behind an OSWorld-compatible URL.
type Info struct {
	Name         string   `json:"name"`
	StateVersion int      `json:"state_version"`
	Width        int      `json:"width"`
	Height       int      `json:"height"`
	Apps         []string `json:"apps"`
}

func (s *Server) info(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, Info{Name: "simdesk", StateVersion: simdesk.StateVersion, Width: s.d.S.Width, Height: s.d.S.Height, Apps: simdesk.Apps()})
}

// ResetRequest is the body of POST /simdesk/reset.
type ResetRequest struct {
	Seed  int64           `json:"seed"`
	Setup json.RawMessage `json:"setup,omitempty"` // a list of setup steps
}

func (s *Server) reset(w http.ResponseWriter, r *http.Request) {
	var body ResetRequest
	if err := decode(r, &body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"status": "error", "message": err.Error()})
		return
	}
	s.d.Reset(body.Seed)
	if len(body.Setup) > 0 && string(body.Setup) != "null" {
		if err := s.d.ApplySetup(string(body.Setup)); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"status": "error", "message": err.Error()})
			return
		}
	}
	s.d.S.Steps = 0
	writeJSON(w, http.StatusOK, map[string]string{"status": "success"})
}

func (s *Server) getState(w http.ResponseWriter, _ *http.Request) {
	b, err := s.d.MarshalState()
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"status": "error", "message": err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func (s *Server) putState(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err == nil {
		err = s.d.RestoreState(b)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"status": "error", "message": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "success"})
}

// EvaluateRequest is the body of POST /simdesk/evaluate: a judge spec and
// how the client's episode ended (done and fail are not sent to the
// desktop, as in OSWorld).
type EvaluateRequest struct {
	Judge    string `json:"judge"`
	Terminal string `json:"terminal"`
}

// EvaluateReply is the reply of POST /simdesk/evaluate.
type EvaluateReply struct {
	Score  float64      `json:"score"`
	Result judge.Result `json:"result"`
}

func (s *Server) evaluate(w http.ResponseWriter, r *http.Request) {
	var body EvaluateRequest
	if err := decode(r, &body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"status": "error", "message": err.Error()})
		return
	}
	j, err := judge.Compile(body.Judge)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"status": "error", "message": err.Error()})
		return
	}
	if body.Terminal != "" && body.Terminal != "done" && body.Terminal != "fail" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"status": "error", "message": "terminal must be done, fail or empty"})
		return
	}
	// OSWorld runs the evaluator's postconfig (saving documents, closing
	// windows) on the final state before judging it.
	if err := s.d.ApplyPostconfig(j.Postconfig); err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"status": "error", "message": "postconfig: " + err.Error()})
		return
	}
	res, err := j.Evaluate(terminalSource{s.d, body.Terminal})
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"status": "error", "message": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, EvaluateReply{Score: res.Score, Result: res})
}

// terminalSource overrides how the episode ended with the client's record.
type terminalSource struct {
	*simdesk.Desktop
	term string
}

// Terminal implements judge.Source with the client's record first.
func (t terminalSource) Terminal() (string, error) {
	if t.term != "" {
		return t.term, nil
	}
	return t.Desktop.Terminal()
}
