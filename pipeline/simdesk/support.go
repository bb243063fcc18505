package simdesk

import (
	"encoding/json"
	"errors"
	"path"
	"strings"
)

// StepBlocker says why the simulator cannot run a setup step, checked
// statically as ApplySetup checks it: a short key for reports
// ("download", "execute gsettings", "launch google-chrome", "open .xlsx",
// "execute python -c") and the full error; "" and nil when it can.
func StepBlocker(st SetupStep) (string, error) {
	_, err := parseSteps(BuildSetup(st))
	if err == nil {
		return "", nil
	}
	if _, ok := setupKinds[st.Type]; !ok {
		return st.Type, err
	}
	if !errors.Is(err, ErrUnsupported) {
		return st.Type + " (invalid parameters)", err
	}
	var pe *progError
	if errors.As(err, &pe) {
		return st.Type + " " + pe.prog, err
	}
	switch st.Type {
	case "launch":
		var p struct {
			Command json.RawMessage `json:"command"`
			Shell   json.RawMessage `json:"shell"`
		}
		_ = json.Unmarshal(st.Parameters, &p) // it parsed above
		if c, cerr := ParseCommand(p.Command, p.Shell); cerr == nil {
			argv := c.Argv
			if c.Shell {
				argv, _ = SplitCommand(c.Line)
			}
			if len(argv) > 0 {
				return "launch " + path.Base(argv[0]), err
			}
		}
	case "open", "open_file":
		var p struct {
			Path string `json:"path"`
		}
		_ = json.Unmarshal(st.Parameters, &p)
		return st.Type + " " + strings.ToLower(path.Ext(p.Path)), err
	}
	if strings.Contains(err.Error(), "pyautogui:") {
		return st.Type + " python -c (outside the pyautogui subset)", err
	}
	return st.Type + " (shell syntax)", err
}
