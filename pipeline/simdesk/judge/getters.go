package judge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/sheet"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

// ErrNotFound is what a Source returns for a file, setting or window that
// does not exist; getters turn it into a missing value, not an error.
var ErrNotFound = errors.New("not found")

// ErrUnsupported is what a Source returns for state it cannot reach (an
// OSWorld VM has no notion of the simulator's settings, for instance).
var ErrUnsupported = errors.New("getter not supported by this environment")

// Mail is one sent message.
type Mail struct {
	To          string   `json:"to"`
	Cc          string   `json:"cc,omitempty"`
	Subject     string   `json:"subject"`
	Body        string   `json:"body"`
	Attachments []string `json:"attachments,omitempty"`
}

// EditorInfo is the text editor's document.
type EditorInfo struct {
	Open  bool   `json:"open"`
	Path  string `json:"path"` // "" for an untitled document
	Text  string `json:"text"`
	Dirty bool   `json:"dirty"`
}

// Source is the state a judge reads. The simulator implements it directly;
// the OSWorld client implements what HTTP reaches (files) and reports
// ErrUnsupported for the rest. Paths are clean absolute paths.
type Source interface {
	// Stat reports whether path exists and whether it is a folder.
	Stat(path string) (exists, dir bool, err error)
	// ReadFile returns a file's content (ErrNotFound when absent).
	ReadFile(path string) (string, error)
	// ListDir returns the names in a folder (ErrNotFound when absent).
	ListDir(path string) ([]string, error)
	// Setting returns a setting's value: bool, float64 or string
	// (ErrNotFound for an unknown key).
	Setting(key string) (any, error)
	// SentMail returns sent messages, oldest first.
	SentMail() ([]Mail, error)
	// Windows returns the focused app ("" for none) and the open apps.
	Windows() (active string, open []string, err error)
	// Editor returns the text editor's document.
	Editor() (EditorInfo, error)
	// Clipboard returns the text clipboard.
	Clipboard() (string, error)
	// Terminal returns how the episode ended: "done", "fail" or "".
	Terminal() (string, error)
}

// CommandSource is a Source that runs commands (OSWorld's vm_command_line
// getter posts them to /execute): the simulator through its shell, a VM
// through its server. command and shell are as OSWorld's /execute takes
// them; the result is the command's standard output.
type CommandSource interface {
	CommandOutput(command, shell json.RawMessage) (string, error)
}

// getterDef lists a getter's required and optional parameters.
type getterDef struct {
	required []string
	optional []string
	doc      string
	result   string // type of the value it yields
}

// Getters documents every getter type.
var getters = map[string]getterDef{
	"file_content":    {required: []string{"path"}, doc: "text of a file (null when absent)", result: "string"},
	"vm_file":         {required: []string{"path"}, optional: []string{"dest"}, doc: "OSWorld alias of file_content", result: "string"},
	"file_exists":     {required: []string{"path"}, doc: "whether a file (not a folder) exists", result: "bool"},
	"folder_exists":   {required: []string{"path"}, doc: "whether a folder exists", result: "bool"},
	"dir_listing":     {required: []string{"path"}, doc: "sorted names in a folder (null when absent)", result: "list"},
	"sheet_cell":      {required: []string{"path", "cell"}, doc: "evaluated value of a cell of a saved .csv sheet", result: "number or string"},
	"sheet_cell_raw":  {required: []string{"path", "cell"}, doc: "raw input of a cell (a formula keeps its =)", result: "string"},
	"sheet_table":     {required: []string{"path"}, doc: "evaluated values of a saved sheet, row by row", result: "table"},
	"setting":         {required: []string{"key"}, doc: "a settings value (bool, number or string)", result: "any"},
	"sent_mail":       {required: []string{"field"}, optional: []string{"index"}, doc: "a field (to, cc, subject, body, attachments) of a sent mail; index -1 (default) is the last", result: "string or list"},
	"sent_mail_count": {doc: "number of sent mails", result: "number"},
	"active_window":   {doc: "app of the focused window (\"\" for none)", result: "string"},
	"window_open":     {required: []string{"app"}, doc: "whether an app's window is open", result: "bool"},
	"editor_dirty":    {doc: "whether the editor has unsaved changes", result: "bool"},
	"editor_text":     {doc: "the editor's current (possibly unsaved) text", result: "string"},
	"editor_path":     {doc: "the path of the editor's document (\"\" when untitled)", result: "string"},
	"clipboard":       {doc: "the text clipboard", result: "string"},
	"vm_command_line": {required: []string{"command"}, optional: []string{"shell"}, doc: "OSWorld: the output of a command run on the desktop (a list of words, or a string; shell true runs it through the shell)", result: "string"},
	"rule":            {required: []string{"rules"}, doc: "a literal for expected (keys depend on the metric)", result: "rules"},
}

// GetterNames lists the getter types, sorted.
func GetterNames() string {
	names := make([]string, 0, len(getters))
	for n := range getters {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// GetterDoc describes one getter type ("" when unknown), for knowledge
// documents.
func GetterDoc(name string) string {
	g, ok := getters[name]
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s(%s) -> %s: %s", name, strings.Join(append(append([]string(nil), g.required...), g.optional...), ", "), g.result, g.doc)
}

func compileGetter(raw json.RawMessage, field string, expected bool) (*Getter, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return nil, specErr(field, "want an object with a type: %v", err)
	}
	var typ string
	if err := json.Unmarshal(keys["type"], &typ); err != nil || typ == "" {
		return nil, specErr(field+".type", "required string")
	}
	def, ok := getters[typ]
	if !ok {
		return nil, specErr(field+".type", "unknown getter %q (known: %s)", typ, GetterNames())
	}
	if typ == "rule" && !expected {
		return nil, specErr(field+".type", "rule is only for expected values")
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names) // report the same offending key every time
	for _, k := range names {
		if k != "type" && !slices.Contains(def.required, k) && !slices.Contains(def.optional, k) {
			return nil, specErr(field+"."+k, "unknown parameter of %s", typ)
		}
	}
	for _, k := range def.required {
		if _, ok := keys[k]; !ok {
			return nil, specErr(field+"."+k, "required by %s", typ)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	g := &Getter{}
	if err := dec.Decode(g); err != nil {
		return nil, specErr(field, "%v", err)
	}
	if slices.Contains(def.required, "path") {
		p, err := vfs.Clean(g.Path)
		if err != nil {
			return nil, specErr(field+".path", "%v", err)
		}
		g.Path = p
	}
	if slices.Contains(def.required, "cell") {
		if _, _, err := sheet.ParseRef(g.Cell); err != nil {
			return nil, specErr(field+".cell", "%v", err)
		}
		g.Cell = strings.ToUpper(strings.ReplaceAll(g.Cell, "$", ""))
	}
	for _, k := range []struct{ name, val string }{{"key", g.Key}, {"app", g.App}, {"field", g.Field}} {
		if slices.Contains(def.required, k.name) && k.val == "" {
			return nil, specErr(field+"."+k.name, "must not be empty")
		}
	}
	if typ == "sent_mail" && !slices.Contains([]string{"to", "cc", "subject", "body", "attachments"}, g.Field) {
		return nil, specErr(field+".field", "%q (want to, cc, subject, body or attachments)", g.Field)
	}
	if typ == "rule" && g.Rules == nil {
		return nil, specErr(field+".rules", "required object")
	}
	if typ == "vm_file" {
		g.Type, g.Dest = "file_content", ""
	}
	if typ == "vm_command_line" {
		var list []string
		var line string
		if json.Unmarshal(g.Command, &list) != nil || len(list) == 0 {
			if json.Unmarshal(g.Command, &line) != nil || strings.TrimSpace(line) == "" {
				return nil, specErr(field+".command", "want a non-empty string or list of strings")
			}
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, g.Command); err == nil {
			g.Command = buf.Bytes()
		}
	}
	return g, nil
}

// get evaluates a getter. Missing things are nil values; only a Source
// failure is an error.
func get(g *Getter, src Source) (any, error) {
	missing := func(err error) (any, error) {
		if errors.Is(err, ErrNotFound) {
			return nil, nil
		}
		return nil, fmt.Errorf("getter %s: %w", g.Type, err)
	}
	switch g.Type {
	case "file_content":
		s, err := src.ReadFile(g.Path)
		if err != nil {
			return missing(err)
		}
		return s, nil
	case "file_exists", "folder_exists":
		ok, dir, err := src.Stat(g.Path)
		if err != nil {
			return missing(err)
		}
		return ok && dir == (g.Type == "folder_exists"), nil
	case "dir_listing":
		names, err := src.ListDir(g.Path)
		if err != nil {
			return missing(err)
		}
		names = append([]string(nil), names...)
		sort.Strings(names)
		return names, nil
	case "sheet_cell", "sheet_cell_raw", "sheet_table":
		text, err := src.ReadFile(g.Path)
		if err != nil {
			return missing(err)
		}
		sh, err := sheet.ParseCSV(text)
		if err != nil {
			return nil, nil // a file that is not a sheet has no cells
		}
		if g.Type == "sheet_table" {
			return sh.Table(), nil
		}
		r, c, _ := sheet.ParseRef(g.Cell)
		if g.Type == "sheet_cell_raw" {
			return sh.Raw(r, c), nil
		}
		v := sh.Evaluator().Value(r, c)
		if v.IsNum {
			return v.Num, nil
		}
		return v.String(), nil
	case "setting":
		v, err := src.Setting(g.Key)
		if err != nil {
			return missing(err)
		}
		return v, nil
	case "sent_mail", "sent_mail_count":
		mails, err := src.SentMail()
		if err != nil {
			return missing(err)
		}
		if g.Type == "sent_mail_count" {
			return float64(len(mails)), nil
		}
		i := -1
		if g.Index != nil {
			i = *g.Index
		}
		if i < 0 {
			i += len(mails)
		}
		if i < 0 || i >= len(mails) {
			return nil, nil
		}
		m := mails[i]
		switch g.Field {
		case "to":
			return m.To, nil
		case "cc":
			return m.Cc, nil
		case "subject":
			return m.Subject, nil
		case "body":
			return m.Body, nil
		}
		return append([]string{}, m.Attachments...), nil
	case "active_window", "window_open":
		active, open, err := src.Windows()
		if err != nil {
			return missing(err)
		}
		if g.Type == "active_window" {
			return active, nil
		}
		return slices.Contains(open, g.App), nil
	case "editor_dirty", "editor_text", "editor_path":
		e, err := src.Editor()
		if err != nil {
			return missing(err)
		}
		switch g.Type {
		case "editor_dirty":
			return e.Open && e.Dirty, nil
		case "editor_text":
			if !e.Open {
				return nil, nil
			}
			return e.Text, nil
		}
		if !e.Open {
			return nil, nil
		}
		return e.Path, nil
	case "clipboard":
		s, err := src.Clipboard()
		if err != nil {
			return missing(err)
		}
		return s, nil
	case "vm_command_line":
		cs, ok := src.(CommandSource)
		if !ok {
			return nil, fmt.Errorf("getter %s: %w", g.Type, ErrUnsupported)
		}
		s, err := cs.CommandOutput(g.Command, g.Shell)
		if err != nil {
			return missing(err)
		}
		return s, nil
	}
	return nil, fmt.Errorf("getter %s: not evaluable", g.Type)
}
