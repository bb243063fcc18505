package simdesk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/pipeline/simdesk/sheet"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

// SetupStep is one step of a task's setup (OSWorld's "config" entries).
type SetupStep struct {
	Type       string          `json:"type"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// setupKind parses one step type's parameters and returns the function that
// applies them.
type setupKind struct {
	doc   string
	parse func(raw json.RawMessage) (func(d *Desktop) error, []string, error)
}

// decodeParams decodes parameters strictly: unknown keys are errors.
func decodeParams(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("parameters: %w", err)
	}
	return nil
}

func cleanParam(name, p string) (string, error) {
	c, err := vfs.Clean(p)
	if err != nil {
		return "", fmt.Errorf("parameters.%s: %w", name, err)
	}
	return c, nil
}

// Command is a command as OSWorld's /execute, /setup/execute and
// /setup/launch receive it: a list of words or one string, and the shell
// flag.
type Command struct {
	Argv   []string // the words of a list command
	Line   string   // a string command
	IsList bool
	Shell  bool
}

// ParseCommand reads the "command" and "shell" values of an OSWorld
// request. shell is read as OSWorld's server reads it, with Python's
// truth: true, a non-zero number, any non-empty string (even "false"), a
// non-empty list or object; false, null, 0, "" and absent are false.
func ParseCommand(command, shell json.RawMessage) (Command, error) {
	var c Command
	sh, err := ShellFlag(shell)
	if err != nil {
		return c, err
	}
	c.Shell = sh
	if len(command) == 0 || string(command) == "null" {
		return c, fmt.Errorf("command is required")
	}
	if err := json.Unmarshal(command, &c.Argv); err == nil {
		c.IsList = true
		if len(c.Argv) == 0 {
			return c, fmt.Errorf("command is empty")
		}
		return c, nil
	}
	if err := json.Unmarshal(command, &c.Line); err != nil {
		return c, fmt.Errorf("command must be a string or a list of strings")
	}
	if strings.TrimSpace(c.Line) == "" {
		return c, fmt.Errorf("command is empty")
	}
	if !c.Shell {
		// OSWorld's server splits a string with shlex when shell is false.
		argv, err := SplitCommand(c.Line)
		if err != nil {
			return c, fmt.Errorf("command: %w", err)
		}
		c.Argv, c.IsList = argv, true
	}
	return c, nil
}

// ShellFlag reads OSWorld's "shell" value with Python's truth (see
// ParseCommand).
func ShellFlag(raw json.RawMessage) (bool, error) {
	if len(raw) == 0 {
		return false, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return false, fmt.Errorf("shell: %w", err)
	}
	switch x := v.(type) {
	case nil:
		return false, nil
	case bool:
		return x, nil
	case float64:
		return x != 0, nil
	case string:
		return x != "", nil
	case []any:
		return len(x) > 0, nil
	case map[string]any:
		return len(x) > 0, nil
	}
	return false, fmt.Errorf("shell: unexpected %s", raw)
}

// Check checks the command statically, as Execute does before running it.
func (c Command) Check() error {
	if c.Shell {
		line, err := c.script()
		if err != nil {
			return err
		}
		return CheckShell(line)
	}
	return CheckArgv(c.Argv)
}

// script is what runs with shell true: the string, or the first word of a
// list (subprocess hands the rest to the shell as $0, $1...).
func (c Command) script() (string, error) {
	if !c.IsList || !c.Shell {
		return c.Line, nil
	}
	if len(c.Argv) > 1 {
		return "", unsupported("a list command with shell true runs only its first word; the rest would be $0, $1...")
	}
	return c.Argv[0], nil
}

// Execute runs a command as OSWorld's server does: through the shell when
// shell is true, else as a program and its arguments (RunCommand).
func (d *Desktop) Execute(c Command) CommandResult {
	if !c.Shell {
		return d.RunCommand(c.Argv)
	}
	line, err := c.script()
	if err != nil {
		return CommandResult{Unsupported: "simdesk shell: " + err.Error(), ReturnCode: 1}
	}
	return d.RunShell(line)
}

// placeholders replaces what OSWorld's harness fills into commands before
// sending them: the screen size (its SetupController) and the VM's
// password (its DesktopEnv; OSWorld's images use "password").
func (d *Desktop) placeholders(s string) string {
	if !strings.Contains(s, "{") {
		return s
	}
	return strings.NewReplacer("{SCREEN_WIDTH_HALF}", strconv.Itoa(d.S.Width/2), "{SCREEN_HEIGHT_HALF}", strconv.Itoa(d.S.Height/2),
		"{SCREEN_WIDTH}", strconv.Itoa(d.S.Width), "{SCREEN_HEIGHT}", strconv.Itoa(d.S.Height), "{CLIENT_PASSWORD}", "password").Replace(s)
}

func (c Command) withPlaceholders(d *Desktop) Command {
	out := c
	out.Line = d.placeholders(c.Line)
	out.Argv = make([]string, len(c.Argv))
	for i, a := range c.Argv {
		out.Argv[i] = d.placeholders(a)
	}
	return out
}

// checkPlaceholders is Check with placeholders filled for a default
// screen, for static checks.
func (c Command) checkPlaceholders() error {
	d := &Desktop{S: State{Width: DefaultWidth, Height: DefaultHeight}}
	return c.withPlaceholders(d).Check()
}

// commandParams are the parameters of OSWorld's execute and command steps
// (SetupController._execute_setup): stdout and stderr name files of the
// harness's cache on the host, which the simulator has none of, so they
// are accepted and unused.
type commandParams struct {
	Command json.RawMessage `json:"command"`
	Shell   json.RawMessage `json:"shell"`
	Stdout  string          `json:"stdout"`
	Stderr  string          `json:"stderr"`
	Until   *untilParams    `json:"until"`
}

// untilParams repeat a command until its result matches; the simulator is
// deterministic, so one run decides.
type untilParams struct {
	ReturnCode *int   `json:"returncode"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
}

func (u *untilParams) met(r CommandResult) bool {
	if u == nil {
		return true
	}
	return (u.ReturnCode != nil && r.ReturnCode == *u.ReturnCode) || (u.Stdout != "" && strings.Contains(r.Output, u.Stdout)) ||
		(u.Stderr != "" && strings.Contains(r.Error, u.Stderr))
}

// resultError is the error of a command step that did not succeed.
func resultError(r CommandResult) error {
	if r.Unsupported != "" {
		return fmt.Errorf("%s", r.Unsupported)
	}
	msg := strings.TrimSpace(r.Error)
	if msg == "" {
		msg = "no error output"
	}
	return fmt.Errorf("exit status %d: %s", r.ReturnCode, msg)
}

type windowParams struct {
	WindowName string `json:"window_name"`
	Strict     bool   `json:"strict"`
	ByClass    bool   `json:"by_class"`
}

func parseWindowParams(raw json.RawMessage) (windowParams, error) {
	var p windowParams
	if err := decodeParams(raw, &p); err != nil {
		return p, err
	}
	if p.WindowName == "" {
		return p, fmt.Errorf("parameters.window_name: required")
	}
	return p, nil
}

var setupKinds map[string]setupKind

func init() {
	pathStep := func(doc string, apply func(d *Desktop, p string) error) setupKind {
		return setupKind{doc: doc, parse: func(raw json.RawMessage) (func(*Desktop) error, []string, error) {
			var p struct {
				Path string `json:"path"`
			}
			if err := decodeParams(raw, &p); err != nil {
				return nil, nil, err
			}
			c, err := cleanParam("path", p.Path)
			if err != nil {
				return nil, nil, err
			}
			return func(d *Desktop) error { return apply(d, c) }, []string{c}, nil
		}}
	}
	commandStep := func(doc string) setupKind {
		return setupKind{doc: doc, parse: func(raw json.RawMessage) (func(*Desktop) error, []string, error) {
			var p commandParams
			if err := decodeParams(raw, &p); err != nil {
				return nil, nil, err
			}
			c, err := ParseCommand(p.Command, p.Shell)
			if err != nil {
				return nil, nil, fmt.Errorf("parameters.%w", err)
			}
			if err := c.checkPlaceholders(); err != nil {
				return nil, nil, fmt.Errorf("parameters.command: %w", err)
			}
			if err := checkPythonScripts(c); err != nil {
				return nil, nil, fmt.Errorf("parameters.command: %w", err)
			}
			return func(d *Desktop) error {
				r := d.Execute(c.withPlaceholders(d))
				if r.Unsupported != "" || (p.Until == nil && r.ReturnCode != 0) {
					return resultError(r)
				}
				if !p.Until.met(r) {
					return fmt.Errorf("until %+v not met after one run (the simulator is deterministic): exit status %d, output %q, error %q",
						*p.Until, r.ReturnCode, r.Output, r.Error)
				}
				return nil
			}, nil, nil
		}}
	}
	launchStep := setupKind{doc: "OSWorld: start a program: {command, shell} (gedit, nautilus, libreoffice --calc, gnome-control-center, thunderbird; a file argument opens it)",
		parse: func(raw json.RawMessage) (func(*Desktop) error, []string, error) {
			var p struct {
				Command json.RawMessage `json:"command"`
				Shell   json.RawMessage `json:"shell"`
			}
			if err := decodeParams(raw, &p); err != nil {
				return nil, nil, err
			}
			c, err := ParseCommand(p.Command, p.Shell)
			if err != nil {
				return nil, nil, fmt.Errorf("parameters.%w", err)
			}
			if err := CheckLaunch(c); err != nil {
				return nil, nil, fmt.Errorf("parameters.command: %w", err)
			}
			return func(d *Desktop) error {
				if r := d.Execute(c); r.Unsupported != "" || r.ReturnCode != 0 {
					return resultError(r)
				}
				return nil
			}, nil, nil
		}}
	setupKinds = map[string]setupKind{
		"create_file": {doc: "create (or overwrite) a text file, with its folders: {path, content}",
			parse: func(raw json.RawMessage) (func(*Desktop) error, []string, error) {
				var p struct {
					Path    string `json:"path"`
					Content string `json:"content"`
				}
				if err := decodeParams(raw, &p); err != nil {
					return nil, nil, err
				}
				c, err := cleanParam("path", p.Path)
				if err != nil {
					return nil, nil, err
				}
				if len(p.Content) > vfs.MaxFileBytes {
					return nil, nil, fmt.Errorf("parameters.content: %d bytes exceed %d", len(p.Content), vfs.MaxFileBytes)
				}
				return func(d *Desktop) error { return d.setupCreateFile(c, p.Content) }, []string{c}, nil
			}},
		"create_folder": pathStep("create a folder and its parents: {path}", func(d *Desktop, p string) error { return d.S.FS.Mkdir(p, true) }),
		"delete":        pathStep("delete a file or folder: {path}", func(d *Desktop, p string) error { return d.S.FS.Remove(p, true) }),
		"open_file": {doc: "open a file in its app (folders in Files): {path}",
			parse: func(raw json.RawMessage) (func(*Desktop) error, []string, error) {
				apply, paths, err := pathStep("", func(d *Desktop, p string) error {
					if _, ok := d.S.FS.Stat(p); !ok {
						return fmt.Errorf("%s: %w", vfs.Short(p), vfs.ErrNotFound)
					}
					d.openPath(p)
					return nil
				}).parse(raw)
				if err == nil {
					err = checkOpenable(paths[0])
				}
				if err != nil {
					return nil, nil, fmt.Errorf("parameters.path: %w", err)
				}
				return apply, paths, nil
			}},
		"execute_with_verification": {doc: "OSWorld: run a command, then check {verification: {window_exists, command_success}}: {command, shell, verification, max_wait_time, check_interval}",
			parse: func(raw json.RawMessage) (func(*Desktop) error, []string, error) {
				var p struct {
					Command       json.RawMessage `json:"command"`
					Shell         json.RawMessage `json:"shell"`
					Verification  json.RawMessage `json:"verification"`
					MaxWaitTime   float64         `json:"max_wait_time"`
					CheckInterval float64         `json:"check_interval"`
				}
				if err := decodeParams(raw, &p); err != nil {
					return nil, nil, err
				}
				c, err := ParseCommand(p.Command, p.Shell)
				if err != nil {
					return nil, nil, fmt.Errorf("parameters.%w", err)
				}
				v, err := ParseVerification(p.Verification)
				if err != nil {
					return nil, nil, fmt.Errorf("parameters.%w", err)
				}
				if err := c.checkPlaceholders(); err != nil {
					return nil, nil, fmt.Errorf("parameters.command: %w", err)
				}
				return func(d *Desktop) error {
					r := d.Execute(c.withPlaceholders(d))
					if r.Unsupported != "" {
						return resultError(r)
					}
					ok, err := d.Verify(v)
					if err != nil {
						return err
					}
					if !ok {
						return fmt.Errorf("verification_failed: %s", v)
					}
					return nil
				}, nil, nil
			}},
		"open_app": {doc: "open an app window: {app} (files, editor, sheet, settings, mail)",
			parse: func(raw json.RawMessage) (func(*Desktop) error, []string, error) {
				var p struct {
					App string `json:"app"`
				}
				if err := decodeParams(raw, &p); err != nil {
					return nil, nil, err
				}
				if appByID(p.App) == nil {
					return nil, nil, fmt.Errorf("parameters.app: unknown app %q (known: %s)", p.App, strings.Join(Apps(), ", "))
				}
				return func(d *Desktop) error { d.openApp(p.App); return nil }, nil, nil
			}},
		"launch":  launchStep,
		"execute": commandStep("OSWorld: run a command (a list of words, or a string; shell true runs it through the simulator's shell): {command, shell, stdout, stderr, until}"),
		"command": commandStep("OSWorld alias of execute"),
		"activate_window": {doc: "OSWorld: raise a window by name: {window_name, strict, by_class}",
			parse: func(raw json.RawMessage) (func(*Desktop) error, []string, error) {
				p, err := parseWindowParams(raw)
				if err != nil {
					return nil, nil, err
				}
				return func(d *Desktop) error {
					if d.ActivateWindow(p.WindowName, p.Strict, p.ByClass) {
						return nil
					}
					return fmt.Errorf("no window %q", p.WindowName)
				}, nil, nil
			}},
		"close_window": {doc: "OSWorld: close a window by name, dropping unsaved changes: {window_name, strict, by_class}",
			parse: func(raw json.RawMessage) (func(*Desktop) error, []string, error) {
				p, err := parseWindowParams(raw)
				if err != nil {
					return nil, nil, err
				}
				return func(d *Desktop) error {
					if d.CloseWindowNamed(p.WindowName, p.Strict, p.ByClass) {
						return nil
					}
					return fmt.Errorf("no window %q", p.WindowName)
				}, nil, nil
			}},
		"set_cell": {doc: "set a cell of a .csv sheet file (created when missing): {path, cell, value}",
			parse: func(raw json.RawMessage) (func(*Desktop) error, []string, error) {
				var p struct {
					Path  string `json:"path"`
					Cell  string `json:"cell"`
					Value string `json:"value"`
				}
				if err := decodeParams(raw, &p); err != nil {
					return nil, nil, err
				}
				c, err := cleanParam("path", p.Path)
				if err != nil {
					return nil, nil, err
				}
				if _, _, err := sheet.ParseRef(p.Cell); err != nil {
					return nil, nil, fmt.Errorf("parameters.cell: %w", err)
				}
				return func(d *Desktop) error { return d.setupSetCell(c, p.Cell, p.Value) }, []string{c}, nil
			}},
		"set_setting": {doc: "set a setting: {key, value}",
			parse: func(raw json.RawMessage) (func(*Desktop) error, []string, error) {
				var p struct {
					Key   string `json:"key"`
					Value string `json:"value"`
				}
				if err := decodeParams(raw, &p); err != nil {
					return nil, nil, err
				}
				def := settingByKey(p.Key)
				if def == nil {
					return nil, nil, fmt.Errorf("parameters.key: unknown setting %q", p.Key)
				}
				if _, msg := checkSetting(def, p.Value); msg != "" {
					return nil, nil, fmt.Errorf("parameters.value: %s", msg)
				}
				return func(d *Desktop) error { return d.setupSetSetting(p.Key, p.Value) }, nil, nil
			}},
		"add_mail": {doc: "add a message to the inbox: {from, subject, body}",
			parse: func(raw json.RawMessage) (func(*Desktop) error, []string, error) {
				var p Message
				if err := decodeParams(raw, &p); err != nil {
					return nil, nil, err
				}
				if _, msg := checkAddresses(p.From, true); msg != "" {
					return nil, nil, fmt.Errorf("parameters.from: %s", msg)
				}
				return func(d *Desktop) error { d.S.Mail.Inbox = append(d.S.Mail.Inbox, p); return nil }, nil, nil
			}},
		"type_text": {doc: "type text into the focused window (to leave unsaved edits): {text}",
			parse: func(raw json.RawMessage) (func(*Desktop) error, []string, error) {
				var p struct {
					Text string `json:"text"`
				}
				if err := decodeParams(raw, &p); err != nil {
					return nil, nil, err
				}
				return func(d *Desktop) error { d.typeText(p.Text); return nil }, nil, nil
			}},
		"set_clipboard": {doc: "set the text clipboard: {text}",
			parse: func(raw json.RawMessage) (func(*Desktop) error, []string, error) {
				var p struct {
					Text string `json:"text"`
				}
				if err := decodeParams(raw, &p); err != nil {
					return nil, nil, err
				}
				return func(d *Desktop) error { d.S.Clipboard = p.Text; return nil }, nil, nil
			}},
		"sleep": {doc: "OSWorld: wait (a no-op here): {seconds}",
			parse: func(raw json.RawMessage) (func(*Desktop) error, []string, error) {
				var p struct {
					Seconds float64 `json:"seconds"`
				}
				if err := decodeParams(raw, &p); err != nil {
					return nil, nil, err
				}
				return func(*Desktop) error { return nil }, nil, nil
			}},
	}
	setupKinds["open"] = setupKinds["open_file"]
}

// osworldOnly are the setup step types of OSWorld's SetupController that
// need what the simulator does not have, with why.
var osworldOnly = map[string]string{
	"download":              "it fetches files from the web, and the simulator has no network; upload them with create_file",
	"upload_file":           "it uploads a file from the harness machine",
	"change_wallpaper":      "the simulator has no wallpaper",
	"tidy_desktop":          "OSWorld does not implement it either",
	"chrome_open_tabs":      "it drives Google Chrome over its debugging port, and the simulator has no browser",
	"chrome_close_tabs":     "it drives Google Chrome over its debugging port, and the simulator has no browser",
	"update_browse_history": "it edits Google Chrome's history database, and the simulator has no browser",
	"googledrive":           "it signs in to Google Drive",
	"login":                 "it signs in to web services",
	"proxy":                 "the simulator has no network",
	"replay":                "it replays a recorded trajectory",
	"act":                   "it replays actions",
}

// noAppFor are file types OSWorld's tasks open that no simulator app
// reads: opening one is refused instead of showing its bytes as text.
var noAppFor = []string{".xlsx", ".xls", ".ods", ".docx", ".doc", ".odt", ".pptx", ".ppt", ".odp", ".pdf",
	".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".xcf", ".raw", ".svg", ".mp4", ".mp3", ".zip", ".gz", ".tar", ".whl"}

// checkOpenable refuses paths of types no simulator app opens.
func checkOpenable(p string) error {
	ext := strings.ToLower(path.Ext(p))
	if slices.Contains(noAppFor, ext) {
		return unsupported("no simulator app opens %s files (Sheet reads .csv, the editor text)", ext)
	}
	return nil
}

func knownPrograms() string {
	names := make([]string, 0, len(launchApps))
	for n := range launchApps {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// CheckLaunch checks a launch command: the simulator starts only its apps
// (by their Linux program names), with an optional file.
func CheckLaunch(c Command) error {
	argv := c.Argv
	if c.Shell {
		line, err := c.script()
		if err != nil {
			return err
		}
		if argv, err = SplitCommand(line); err != nil {
			return err
		}
		if err := CheckShell(line); err != nil {
			return err
		}
	}
	if len(argv) == 0 {
		return fmt.Errorf("empty command")
	}
	if _, ok := launchApps[path.Base(argv[0])]; !ok {
		return unsupported("unknown program %q (the simulator launches: %s)", argv[0], knownPrograms())
	}
	return c.Check()
}

// checkPythonScripts compiles the pyautogui scripts of python -c commands,
// so that a setup step outside the subset is found statically.
func checkPythonScripts(c Command) error {
	var scripts []string
	if !c.Shell {
		if len(c.Argv) == 3 && (path.Base(c.Argv[0]) == "python" || path.Base(c.Argv[0]) == "python3") && c.Argv[1] == "-c" {
			scripts = append(scripts, c.Argv[2])
		}
	} else if line, err := c.script(); err == nil {
		if sc, err := parseShell(line); err == nil {
			scripts = pythonScripts(sc)
		}
	}
	d := &Desktop{S: State{Width: DefaultWidth, Height: DefaultHeight}}
	for _, src := range scripts {
		if err := action.CheckPyAutoGUI(d.placeholders(src)); err != nil {
			return fmt.Errorf("%w: %w", err, ErrUnsupported)
		}
	}
	return nil
}

// SetupTypes lists the setup step types with a line of documentation each,
// sorted by type.
func SetupTypes() [][2]string {
	var out [][2]string
	for t, k := range setupKinds {
		out = append(out, [2]string{t, k.doc})
	}
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return out
}

type parsedStep struct {
	typ   string
	apply func(*Desktop) error
	paths []string
}

// ParseSetup decodes a task's setup JSON ("" means none).
func ParseSetup(setup string) ([]SetupStep, error) {
	if strings.TrimSpace(setup) == "" {
		return nil, nil
	}
	var steps []SetupStep
	dec := json.NewDecoder(strings.NewReader(setup))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&steps); err != nil {
		return nil, fmt.Errorf("simdesk: setup: want a list of {type, parameters}: %w", err)
	}
	return steps, nil
}

func parseSteps(setup string) ([]parsedStep, error) {
	steps, err := ParseSetup(setup)
	if err != nil {
		return nil, err
	}
	out := make([]parsedStep, 0, len(steps))
	for i, st := range steps {
		k, ok := setupKinds[st.Type]
		if !ok {
			if why, ok := osworldOnly[st.Type]; ok {
				return nil, fmt.Errorf("simdesk: setup[%d].type: %q is an OSWorld setup step the simulator cannot run (%s): %w", i, st.Type, why, ErrUnsupported)
			}
			return nil, fmt.Errorf("simdesk: setup[%d].type: unknown setup type %q", i, st.Type)
		}
		apply, paths, err := k.parse(st.Parameters)
		if err != nil {
			return nil, fmt.Errorf("simdesk: setup[%d] (%s): %w", i, st.Type, err)
		}
		out = append(out, parsedStep{typ: st.Type, apply: apply, paths: paths})
	}
	return out, nil
}

// CheckSetup checks a setup statically: known step types and well-formed
// parameters. The error names the offending step and field.
func CheckSetup(setup string) error {
	_, err := parseSteps(setup)
	return err
}

// SetupPaths returns the paths a setup creates or touches, sorted, for rule
// validators that check a judge's paths against the setup.
func SetupPaths(setup string) ([]string, error) {
	steps, err := parseSteps(setup)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, st := range steps {
		for _, p := range st.paths {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// ApplySetup runs a setup on the desktop; the first failing step stops it.
func (d *Desktop) ApplySetup(setup string) error {
	steps, err := parseSteps(setup)
	if err != nil {
		return err
	}
	for i, st := range steps {
		if err := st.apply(d); err != nil {
			d.invalidate()
			return fmt.Errorf("simdesk: setup[%d] (%s): %w", i, st.typ, err)
		}
	}
	d.invalidate()
	return nil
}

// Verification is the check of OSWorld's execute_with_verification:
// window_exists is a part of a window title (case-insensitive, as in
// "wmctrl -l"), command_success a shell command that must exit 0.
type Verification struct {
	WindowExists   *string `json:"window_exists,omitempty"`
	CommandSuccess *string `json:"command_success,omitempty"`
}

// String renders the verification for messages.
func (v Verification) String() string {
	b, _ := json.Marshal(v)
	return string(b)
}

// ParseVerification reads a verification block ("" or null: none). Keys
// other than window_exists and command_success are errors (OSWorld's
// server ignores them, which would pass a check nobody made), and so is a
// command_success the simulator's shell cannot run.
func ParseVerification(raw json.RawMessage) (Verification, error) {
	var v Verification
	if err := decodeParams(raw, &v); err != nil {
		return v, fmt.Errorf("verification: %w", err)
	}
	if v.CommandSuccess != nil {
		if err := CheckShell(*v.CommandSuccess); err != nil {
			return v, fmt.Errorf("verification.command_success: %w", err)
		}
	}
	return v, nil
}

// Empty reports whether there is nothing to verify.
func (v Verification) Empty() bool { return v.WindowExists == nil && v.CommandSuccess == nil }

// Verify checks a verification on the current state. The simulator acts
// at once, so one check decides (OSWorld polls up to max_wait_time).
func (d *Desktop) Verify(v Verification) (bool, error) {
	if v.WindowExists != nil {
		found := false
		for _, w := range d.S.WindowList() {
			if strings.Contains(strings.ToLower(w.Title), strings.ToLower(*v.WindowExists)) {
				found = true
			}
		}
		if !found {
			return false, nil
		}
	}
	if v.CommandSuccess != nil {
		r := d.RunShell(*v.CommandSuccess)
		if r.Unsupported != "" {
			return false, fmt.Errorf("verification.command_success: %s", r.Unsupported)
		}
		if r.ReturnCode != 0 {
			return false, nil
		}
	}
	return true, nil
}

// ApplyPostconfig runs an evaluator's postconfig steps (OSWorld runs them
// after the episode, before judging): they run even when the agent has
// answered done or fail, which the desktop otherwise refuses input after.
func (d *Desktop) ApplyPostconfig(steps string) error {
	if steps == "" {
		return nil
	}
	term := d.S.Terminal
	d.S.Terminal = ""
	defer func() { d.S.Terminal = term }()
	return d.ApplySetup(steps)
}

// BuildSetup writes setup steps as JSON; params are marshalled as given.
func BuildSetup(steps ...SetupStep) string {
	if len(steps) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(steps)
	return string(b)
}

// Step returns a setup step with parameters marshalled from params.
func Step(typ string, params any) SetupStep {
	b, _ := json.Marshal(params)
	return SetupStep{Type: typ, Parameters: b}
}
