package simdesk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

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

// commandArg is a command given as a list or as one string.
type commandArg struct {
	argv []string
}

// UnmarshalJSON accepts a list of words or one shell-quoted string.
func (c *commandArg) UnmarshalJSON(b []byte) error {
	var list []string
	if err := json.Unmarshal(b, &list); err == nil {
		c.argv = list
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("command: want a string or a list of strings")
	}
	argv, err := SplitCommand(s)
	if err != nil {
		return fmt.Errorf("command: %w", err)
	}
	c.argv = argv
	return nil
}

type windowParams struct {
	WindowName string `json:"window_name"`
	Strict     bool   `json:"strict"`
	ByClass    bool   `json:"by_class"`
}

// findWindow returns the open app whose id, name or title matches.
func (d *Desktop) findWindow(p windowParams) string {
	for i := len(d.S.Windows) - 1; i >= 0; i-- {
		a := appByID(d.S.Windows[i].App)
		for _, cand := range []string{a.id(), a.name(), a.title(&d.S)} {
			if (p.Strict && cand == p.WindowName) || (!p.Strict && strings.Contains(strings.ToLower(cand), strings.ToLower(p.WindowName))) {
				return a.id()
			}
		}
	}
	return ""
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
	commandStep := func(doc string, launch bool) setupKind {
		return setupKind{doc: doc, parse: func(raw json.RawMessage) (func(*Desktop) error, []string, error) {
			var p struct {
				Command commandArg `json:"command"`
				Shell   bool       `json:"shell"`
			}
			if err := decodeParams(raw, &p); err != nil {
				return nil, nil, err
			}
			if len(p.Command.argv) == 0 {
				return nil, nil, fmt.Errorf("parameters.command: required")
			}
			if launch {
				if _, ok := launchApps[path.Base(p.Command.argv[0])]; !ok {
					return nil, nil, fmt.Errorf("parameters.command: unknown program %q (known: %s)", p.Command.argv[0], knownPrograms())
				}
			}
			return func(d *Desktop) error {
				r := d.RunCommand(p.Command.argv)
				if r.ReturnCode != 0 {
					return fmt.Errorf("%s", r.Error)
				}
				return nil
			}, nil, nil
		}}
	}
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
		"open_file": pathStep("open a file in its app (folders in Files): {path}", func(d *Desktop, p string) error {
			if _, ok := d.S.FS.Stat(p); !ok {
				return fmt.Errorf("%s: %w", vfs.Short(p), vfs.ErrNotFound)
			}
			d.openPath(p)
			return nil
		}),
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
		"launch":  commandStep("OSWorld: start a program: {command} (gedit, nautilus, libreoffice, gnome-control-center, thunderbird; a file argument opens it)", true),
		"execute": commandStep("OSWorld: run a command of the simulator's shell: {command, shell}", false),
		"command": commandStep("OSWorld alias of execute", false),
		"activate_window": {doc: "OSWorld: raise a window by name: {window_name, strict, by_class}",
			parse: func(raw json.RawMessage) (func(*Desktop) error, []string, error) {
				p, err := parseWindowParams(raw)
				if err != nil {
					return nil, nil, err
				}
				return func(d *Desktop) error {
					if id := d.findWindow(p); id != "" {
						d.raise(id)
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
					if id := d.findWindow(p); id != "" {
						d.forceClose(id)
						appByID(id).reset(d)
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

func knownPrograms() string {
	names := make([]string, 0, len(launchApps))
	for n := range launchApps {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
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
