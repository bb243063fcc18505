package osworld

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cualake/cualake/pipeline/simdesk"
)

// programs start each simulator app on an OSWorld Ubuntu VM.
var programs = map[string][]string{
	"files": {"nautilus"}, "editor": {"gedit"}, "sheet": {"libreoffice", "--calc"},
	"settings": {"gnome-control-center"}, "mail": {"thunderbird"},
}

// setupStep maps one task setup step onto the desktop server's endpoints.
// Steps with no OSWorld equivalent (cells, settings, mail, typing) become
// "simdesk <verb>" commands through /setup/execute, which simulator servers
// understand and VMs refuse.
func (e *Env) setupStep(st simdesk.SetupStep) error {
	var p map[string]json.RawMessage
	if len(st.Parameters) > 0 {
		if err := json.Unmarshal(st.Parameters, &p); err != nil {
			return fmt.Errorf("parameters: %w", err)
		}
	}
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(p[k], &s) // CheckSetup already typed every parameter
		return s
	}
	run := func(argv ...string) error {
		r, err := e.execute("/setup/execute", argv)
		if err != nil {
			return err
		}
		if r.ReturnCode != 0 {
			return fmt.Errorf("%s: %s", strings.Join(argv, " "), strings.TrimSpace(r.Error+" "+r.Message))
		}
		return nil
	}
	switch st.Type {
	case "create_file":
		return e.upload(str("path"), []byte(str("content")))
	case "create_folder":
		return run("mkdir", "-p", str("path"))
	case "delete":
		return run("rm", "-rf", str("path"))
	case "open_file", "open":
		return e.postJSON("/setup/open_file", map[string]string{"path": str("path")}, nil)
	case "open_app":
		return e.launch(programs[str("app")])
	case "launch":
		var body map[string]any
		_ = json.Unmarshal(st.Parameters, &body)
		if err := e.postText("/setup/launch", body); err != nil {
			return err
		}
		e.wait(2 * time.Second)
		return nil
	case "execute", "command":
		var body map[string]any
		_ = json.Unmarshal(st.Parameters, &body)
		var r execReply
		if err := e.postJSON("/setup/execute", body, &r); err != nil {
			return err
		}
		if r.ReturnCode != 0 {
			return fmt.Errorf("command failed: %s", strings.TrimSpace(r.Error+" "+r.Message))
		}
		return nil
	case "download":
		return e.download(st.Parameters)
	case "execute_with_verification":
		var body map[string]any
		_ = json.Unmarshal(st.Parameters, &body)
		var r execReply
		if err := e.postJSON("/setup/execute_with_verification", body, &r); err != nil {
			return err
		}
		if r.ReturnCode != 0 {
			return fmt.Errorf("command failed: %s", strings.TrimSpace(r.Error+" "+r.Message))
		}
		return nil
	case "activate_window", "close_window":
		var body map[string]any
		_ = json.Unmarshal(st.Parameters, &body)
		return e.postText("/setup/"+st.Type, body)
	case "set_cell":
		return run("simdesk", "set-cell", str("path"), str("cell"), str("value"))
	case "set_setting":
		return run("simdesk", "set-setting", str("key"), str("value"))
	case "add_mail":
		return run("simdesk", "add-mail", str("from"), str("subject"), str("body"))
	case "type_text":
		return run("simdesk", "type", str("text"))
	case "set_clipboard":
		return run("simdesk", "clipboard", str("text"))
	case "sleep":
		var secs float64
		_ = json.Unmarshal(p["seconds"], &secs)
		e.wait(time.Duration(secs * float64(time.Second)))
		return nil
	}
	return fmt.Errorf("setup type %q has no OSWorld mapping", st.Type)
}

// vmPassThrough are the setup steps whose commands and paths a VM runs
// itself: the simulator's checks of what its shell and apps can do do not
// apply to them.
var vmPassThrough = map[string]bool{"launch": true, "execute": true, "command": true, "execute_with_verification": true,
	"open": true, "open_file": true, "activate_window": true, "close_window": true}

// CheckVMSetup checks a setup for a VM: steps OSWorld's server runs itself
// (launch, execute, open, windows) need parameters that are an object;
// the others are checked as the simulator checks them (setupStep maps
// them onto uploads, mkdir and rm, and "simdesk" commands that only
// simulators accept).
func CheckVMSetup(setup string) error {
	steps, err := simdesk.ParseSetup(setup)
	if err != nil {
		return err
	}
	for i, st := range steps {
		if st.Type == "download" {
			if _, err := downloadFiles(st.Parameters); err != nil {
				return fmt.Errorf("osworld: setup[%d] (download): %w", i, err)
			}
			continue
		}
		if vmPassThrough[st.Type] {
			var p map[string]json.RawMessage
			if err := json.Unmarshal(st.Parameters, &p); err != nil {
				return fmt.Errorf("osworld: setup[%d] (%s): parameters: want an object: %w", i, st.Type, err)
			}
			continue
		}
		if err := simdesk.CheckSetup(simdesk.BuildSetup(st)); err != nil {
			return fmt.Errorf("osworld: setup[%d]: %w", i, err)
		}
	}
	return nil
}

// downloadFile is one file of a download step.
type downloadFile struct {
	URL  string `json:"url"`
	Path string `json:"path"`
}

func downloadFiles(raw json.RawMessage) ([]downloadFile, error) {
	var p struct {
		Files []downloadFile `json:"files"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("parameters: want {files: [{url, path}]}: %w", err)
	}
	if len(p.Files) == 0 {
		return nil, fmt.Errorf("parameters.files: empty")
	}
	for i, f := range p.Files {
		u, err := url.Parse(f.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || f.Path == "" {
			return nil, fmt.Errorf("parameters.files[%d]: want an http(s) url and a path", i)
		}
	}
	return p.Files, nil
}

// maxDownload bounds a downloaded file (the server takes 8 MiB bodies).
const maxDownload = 8 << 20

// download fetches each file here and uploads it to the VM, as OSWorld's
// SetupController does; on a simulator the upload lands in its file system.
func (e *Env) download(raw json.RawMessage) error {
	files, err := downloadFiles(raw)
	if err != nil {
		return err
	}
	for _, f := range files {
		req, err := http.NewRequestWithContext(e.ctx, http.MethodGet, f.URL, nil)
		if err != nil {
			return fmt.Errorf("download %s: %w", f.URL, err)
		}
		resp, err := e.http.Do(req)
		if err != nil {
			return fmt.Errorf("download %s: %w", f.URL, err)
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxDownload+1))
		resp.Body.Close()
		switch {
		case err != nil:
			return fmt.Errorf("download %s: %w", f.URL, err)
		case resp.StatusCode != http.StatusOK:
			return fmt.Errorf("download %s: %s", f.URL, resp.Status)
		case len(b) > maxDownload:
			return fmt.Errorf("download %s: larger than %d bytes", f.URL, maxDownload)
		}
		if err := e.upload(f.Path, b); err != nil {
			return err
		}
	}
	return nil
}

func (e *Env) launch(argv []string) error {
	if len(argv) == 0 {
		return fmt.Errorf("no program for that app")
	}
	if err := e.postText("/setup/launch", map[string]any{"command": argv, "shell": false}); err != nil {
		return err
	}
	e.wait(2 * time.Second)
	return nil
}

// wait sleeps on VMs only: a simulator is ready at once, and tests stay
// fast and deterministic.
func (e *Env) wait(d time.Duration) {
	if !e.sim && d > 0 {
		e.opts.Sleep(d)
	}
}

// postText posts JSON to an endpoint that answers plain text.
func (e *Env) postText(p string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("osworld: POST %s: encode: %w", p, err)
	}
	code, reply, err := e.request(http.MethodPost, p, "application/json", strings.NewReader(string(b)))
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("osworld: POST %s: %s: %s", p, http.StatusText(code), clip(reply))
	}
	return nil
}
