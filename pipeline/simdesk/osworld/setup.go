package osworld

import (
	"encoding/json"
	"fmt"
	"net/http"
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
