// Package osworld is an environment client for OSWorld's desktop server
// HTTP API: it drives a real OSWorld VM, or the simulator's own server
// (package server), through the same simdesk.Env interface as the embedded
// simulator. Actions go out as pyautogui commands through /execute,
// observations come from /screenshot and /accessibility, setup steps map to
// the /setup/... endpoints, and judges are evaluated on the server when it
// is a simulator (/simdesk/evaluate) or, on a VM, from files fetched over
// /file and /list_directory.
package osworld

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/pipeline/simdesk/server"
	"github.com/cualake/cualake/schemas"
)

// PyPrefix is what OSWorld's PythonController puts before every pyautogui
// command.
const PyPrefix = "import pyautogui; import time; pyautogui.FAILSAFE = False; "

// Options configure an Env.
type Options struct {
	// BaseURL of the desktop server, e.g. "http://192.168.1.5:5000".
	BaseURL string
	// HTTPClient to use; nil means a client with a 2-minute timeout.
	HTTPClient *http.Client
	// Revert restores a VM to its clean snapshot before each Reset (OSWorld
	// does this through its VM provider, outside the HTTP API). Simulator
	// servers are reset through /simdesk/reset and need none.
	Revert func(ctx context.Context) error
	// Sleep waits for sleep setup steps and after launches on VMs; nil
	// means time.Sleep. Simulator servers never wait.
	Sleep func(time.Duration)
	// NoScreenshot skips /screenshot (Obs.Screenshot stays nil).
	NoScreenshot bool
	// NoTree skips /accessibility (Obs.Tree stays nil).
	NoTree bool
}

// Env drives one desktop server. It implements simdesk.Env.
type Env struct {
	opts    Options
	http    *http.Client
	base    string
	ctx     context.Context
	sim     bool // the server is a simulator (answers /simdesk/info)
	width   int
	height  int
	task    *schemas.Task
	judge   *judge.Judge
	steps   int
	term    string
	lastErr string
}

var _ simdesk.Env = (*Env)(nil)

// New returns a client for the server at opts.BaseURL; it asks the server
// for its screen size and whether it is a simulator.
func New(ctx context.Context, opts Options) (*Env, error) {
	u, err := url.Parse(opts.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("osworld: base URL %q: want http(s)://host[:port]", opts.BaseURL)
	}
	e := &Env{opts: opts, http: opts.HTTPClient, base: strings.TrimSuffix(opts.BaseURL, "/"), ctx: ctx}
	if e.http == nil {
		e.http = &http.Client{Timeout: 2 * time.Minute}
	}
	if e.opts.Sleep == nil {
		e.opts.Sleep = time.Sleep
	}
	var info server.Info
	if code, err := e.getJSON("/simdesk/info", &info); err == nil && code == http.StatusOK && info.Name == "simdesk" {
		e.sim = true
	}
	var size struct {
		Width  int `json:"width"`
		Height int `json:"height"`
	}
	if err := e.postJSON("/screen_size", nil, &size); err != nil {
		return nil, fmt.Errorf("osworld: screen size: %w", err)
	}
	if size.Width <= 0 || size.Height <= 0 {
		return nil, fmt.Errorf("osworld: server reports screen %dx%d", size.Width, size.Height)
	}
	e.width, e.height = size.Width, size.Height
	return e, nil
}

// Simulator reports whether the server is a simdesk simulator.
func (e *Env) Simulator() bool { return e.sim }

// request sends a request and returns the status and body; transport errors
// are errors, HTTP error statuses are returned for the caller to judge.
func (e *Env) request(method, p, contentType string, body io.Reader) (int, []byte, error) {
	req, err := http.NewRequestWithContext(e.ctx, method, e.base+p, body)
	if err != nil {
		return 0, nil, fmt.Errorf("osworld: %s %s: %w", method, p, err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := e.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("osworld: %s %s: %w", method, p, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("osworld: %s %s: read reply: %w", method, p, err)
	}
	return resp.StatusCode, b, nil
}

func (e *Env) getJSON(p string, out any) (int, error) {
	code, b, err := e.request(http.MethodGet, p, "", nil)
	if err != nil {
		return code, err
	}
	if code != http.StatusOK {
		return code, fmt.Errorf("osworld: GET %s: %s: %s", p, http.StatusText(code), clip(b))
	}
	if err := json.Unmarshal(b, out); err != nil {
		return code, fmt.Errorf("osworld: GET %s: decode reply: %w", p, err)
	}
	return code, nil
}

// postJSON posts body as JSON and decodes a 200 reply into out (when not
// nil); other statuses are errors.
func (e *Env) postJSON(p string, body, out any) error {
	var rd io.Reader = strings.NewReader("{}")
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("osworld: POST %s: encode: %w", p, err)
		}
		rd = bytes.NewReader(b)
	}
	code, b, err := e.request(http.MethodPost, p, "application/json", rd)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("osworld: POST %s: %s: %s", p, http.StatusText(code), clip(b))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("osworld: POST %s: decode reply: %w", p, err)
		}
	}
	return nil
}

func clip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// execReply is the reply of /execute.
type execReply struct {
	Status     string `json:"status"`
	Output     string `json:"output"`
	Error      string `json:"error"`
	ReturnCode int    `json:"returncode"`
	Message    string `json:"message"`
}

// execute runs a command through /execute (or /setup/execute).
func (e *Env) execute(p string, argv []string) (execReply, error) {
	var r execReply
	err := e.postJSON(p, map[string]any{"command": argv, "shell": false}, &r)
	return r, err
}

// Reset implements simdesk.Env: it restores a clean desktop (through
// /simdesk/reset, or Options.Revert on a VM), runs the task's setup steps
// through the /setup endpoints and returns the first observation.
func (e *Env) Reset(task schemas.Task, seed int64) (simdesk.Obs, error) {
	j, err := judge.Compile(task.Judge)
	if err != nil {
		return simdesk.Obs{}, fmt.Errorf("osworld: task %s: %w", task.TaskID, err)
	}
	// A simulator checks the whole setup as it would run it; a VM runs
	// commands the simulator lacks, so only the step types are checked.
	check := simdesk.CheckSetup
	if !e.sim {
		check = CheckVMSetup
	}
	if err := check(task.Setup); err != nil {
		return simdesk.Obs{}, fmt.Errorf("osworld: task %s: %w", task.TaskID, err)
	}
	if err := check(j.Postconfig); err != nil {
		return simdesk.Obs{}, fmt.Errorf("osworld: task %s: postconfig: %w", task.TaskID, err)
	}
	switch {
	case e.sim:
		if err := e.postJSON("/simdesk/reset", server.ResetRequest{Seed: seed}, nil); err != nil {
			return simdesk.Obs{}, err
		}
	case e.opts.Revert != nil:
		if err := e.opts.Revert(e.ctx); err != nil {
			return simdesk.Obs{}, fmt.Errorf("osworld: revert: %w", err)
		}
	}
	steps, err := simdesk.ParseSetup(task.Setup)
	if err != nil {
		return simdesk.Obs{}, err
	}
	for i, st := range steps {
		if err := e.setupStep(st); err != nil {
			return simdesk.Obs{}, fmt.Errorf("osworld: task %s: setup[%d] (%s): %w", task.TaskID, i, st.Type, err)
		}
	}
	e.task, e.judge, e.steps, e.term, e.lastErr = &task, j, 0, "", ""
	return e.observe()
}

// Step implements simdesk.Env: done and fail end the episode locally (as in
// OSWorld they are not sent to the desktop), wait does nothing, other
// actions run as pyautogui commands.
func (e *Env) Step(a schemas.Action) (simdesk.Obs, error) {
	if e.task == nil {
		return simdesk.Obs{}, errors.New("osworld: Step before Reset")
	}
	e.steps++
	e.lastErr = ""
	switch {
	case e.term != "":
		e.lastErr = "episode already ended with " + e.term
	case action.Validate(a) != nil:
		e.lastErr = action.Validate(a).Error()
	case a.Kind == action.Done || a.Kind == action.Fail:
		e.term = a.Kind
	case a.Kind == action.Wait:
	default:
		cmd, err := action.FormatPyAutoGUI(a, e.width, e.height)
		if err != nil {
			e.lastErr = err.Error()
			break
		}
		r, err := e.execute("/execute", []string{"python", "-c", PyPrefix + cmd})
		if err != nil {
			return simdesk.Obs{}, err
		}
		if r.ReturnCode != 0 {
			e.lastErr = strings.TrimSpace(r.Error + " " + r.Message)
		}
	}
	return e.observe()
}

func (e *Env) observe() (simdesk.Obs, error) {
	o := simdesk.Obs{Width: e.width, Height: e.height, Step: e.steps, Done: e.term != "", ActionError: e.lastErr}
	if !e.opts.NoScreenshot {
		code, b, err := e.request(http.MethodGet, "/screenshot", "", nil)
		if err != nil {
			return o, err
		}
		if code != http.StatusOK || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			return o, fmt.Errorf("osworld: GET /screenshot: status %d, %d bytes that are not a PNG", code, len(b))
		}
		o.Screenshot = b
	}
	if !e.opts.NoTree {
		var at struct {
			AT string `json:"AT"`
		}
		// A simulator serves its JSON tree too (grid centers, widget ids),
		// which the embedded simulator's policies read; a VM serves XML.
		p := "/accessibility"
		if e.sim {
			p += "?format=json"
		}
		if _, err := e.getJSON(p, &at); err != nil {
			return o, err
		}
		o.Tree = []byte(at.AT)
	}
	return o, nil
}

// Evaluate implements simdesk.Env. On a simulator server the judge runs
// there, on the full state; on a VM it runs here over files fetched through
// the API, and getters that need more (settings, mail, windows) report
// judge.ErrUnsupported.
func (e *Env) Evaluate() (float64, string, error) {
	if e.judge == nil {
		return 0, "", errors.New("osworld: Evaluate before Reset")
	}
	if e.sim {
		var r server.EvaluateReply
		if err := e.postJSON("/simdesk/evaluate", server.EvaluateRequest{Judge: e.task.Judge, Terminal: e.term}, &r); err != nil {
			return 0, "", err
		}
		return r.Score, r.Result.JSON(), nil
	}
	// OSWorld runs the evaluator's postconfig before judging.
	if e.judge.Postconfig != "" {
		steps, err := simdesk.ParseSetup(e.judge.Postconfig)
		if err != nil {
			return 0, "", fmt.Errorf("osworld: task %s: postconfig: %w", e.task.TaskID, err)
		}
		for i, st := range steps {
			if err := e.setupStep(st); err != nil {
				return 0, "", fmt.Errorf("osworld: task %s: postconfig[%d] (%s): %w", e.task.TaskID, i, st.Type, err)
			}
		}
	}
	res, err := e.judge.Evaluate(&httpSource{e})
	if err != nil {
		return 0, "", fmt.Errorf("osworld: task %s: %w", e.task.TaskID, err)
	}
	return res.Score, res.JSON(), nil
}

// Close implements simdesk.Env.
func (e *Env) Close() error {
	e.http.CloseIdleConnections()
	return nil
}

// upload sends a file through /setup/upload (multipart, as OSWorld's
// SetupController does).
func (e *Env) upload(p string, content []byte) error {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if err := mw.WriteField("file_path", p); err != nil {
		return fmt.Errorf("osworld: upload %s: %w", p, err)
	}
	fw, err := mw.CreateFormFile("file_data", p[strings.LastIndex(p, "/")+1:])
	if err != nil {
		return fmt.Errorf("osworld: upload %s: %w", p, err)
	}
	if _, err := fw.Write(content); err != nil {
		return fmt.Errorf("osworld: upload %s: %w", p, err)
	}
	if err := mw.Close(); err != nil {
		return fmt.Errorf("osworld: upload %s: %w", p, err)
	}
	code, b, err := e.request(http.MethodPost, "/setup/upload", mw.FormDataContentType(), &buf)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("osworld: upload %s: %s: %s", p, http.StatusText(code), clip(b))
	}
	return nil
}
