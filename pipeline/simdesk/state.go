package simdesk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"slices"

	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/pipeline/simdesk/sheet"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

// StateVersion is the version of the serialised state; RestoreState refuses
// other versions.
const StateVersion = 1

// Point is a screen position in pixels.
type Point struct {
	X int `json:"x"`
	Y int `json:"y"`
}

// State is everything the simulator knows: it is a plain value, serialised
// to deterministic JSON by MarshalState, and every observation is a pure
// function of it.
type State struct {
	Version   int           `json:"version"`
	Seed      int64         `json:"seed"`
	Width     int           `json:"width"`
	Height    int           `json:"height"`
	Steps     int           `json:"steps"`
	Mouse     Point         `json:"mouse"`
	Input     *HeldInput    `json:"input,omitempty"`    // held between pyautogui scripts; nil when nothing is
	Terminal  string        `json:"terminal,omitempty"` // "done" or "fail" once the agent ended the episode
	FS        vfs.FS        `json:"fs"`
	Clipboard string        `json:"clipboard,omitempty"`
	Windows   []Window      `json:"windows"` // bottom to top; the last one has the focus
	Files     FilesState    `json:"files"`
	Editor    EditorState   `json:"editor"`
	Sheet     SheetState    `json:"sheet"`
	Settings  SettingsState `json:"settings"`
	Mail      MailState     `json:"mail"`
}

// HeldInput is what pyautogui scripts left held (mouseDown, keyDown):
// OSWorld's clients press and release in separate /execute calls.
type HeldInput struct {
	Button string   `json:"button,omitempty"` // left, right or middle
	At     *Point   `json:"at,omitempty"`     // where the button went down
	Keys   []string `json:"keys,omitempty"`   // modifiers, in the order pressed
}

func (h *HeldInput) toAction() *action.Input {
	in := &action.Input{}
	if h == nil {
		return in
	}
	if h.At != nil {
		in.Down, in.Button = &image.Point{X: h.At.X, Y: h.At.Y}, h.Button
	}
	in.Held = append([]string(nil), h.Keys...)
	return in
}

// heldFrom records what a script left held; nil when nothing is.
func heldFrom(in *action.Input) *HeldInput {
	if in.Down == nil && len(in.Held) == 0 {
		return nil
	}
	h := &HeldInput{Keys: append([]string(nil), in.Held...)}
	if in.Down != nil {
		h.Button, h.At = in.Button, &Point{in.Down.X, in.Down.Y}
	}
	return h
}

func (h *HeldInput) validate(w, hgt int) error {
	if h == nil {
		return nil
	}
	if (h.At == nil) != (h.Button == "") || !slices.Contains([]string{"", "left", "right", "middle"}, h.Button) {
		return fmt.Errorf("held input: button %q at %v", h.Button, h.At)
	}
	if h.At != nil && (h.At.X < 0 || h.At.Y < 0 || h.At.X >= w || h.At.Y >= hgt) {
		return fmt.Errorf("held input: button down off-screen at %v", *h.At)
	}
	for _, k := range h.Keys {
		if n, err := action.NormalizeKey(k); err != nil || n != k || !action.Modifier(k) {
			return fmt.Errorf("held input: %q is not a modifier", k)
		}
	}
	return nil
}

// Window is an open app window.
type Window struct {
	App string `json:"app"`
	X   int    `json:"x"`
	Y   int    `json:"y"`
	W   int    `json:"w"`
	H   int    `json:"h"`
}

// Field is a single-line text input.
type Field struct {
	Text   string `json:"text"`
	Cursor int    `json:"cursor"`        // rune index of the caret
	All    bool   `json:"all,omitempty"` // the whole text is selected
}

// Buffer is a multi-line text: the editor's document and a mail body.
type Buffer struct {
	Lines []string `json:"lines"`
	Line  int      `json:"line"`
	Col   int      `json:"col"` // rune index in the line
	All   bool     `json:"all,omitempty"`
	Sel   int      `json:"sel,omitempty"` // runes selected from the caret on (shift+end)
	Top   int      `json:"top,omitempty"` // first visible line
}

// Dialog is a modal dialog inside an app window.
type Dialog struct {
	Kind   string `json:"kind"`
	Field  Field  `json:"field"`
	Field2 Field  `json:"field2"`
	Focus  int    `json:"focus,omitempty"`  // 0: first field, 1: second
	Target string `json:"target,omitempty"` // the path the dialog acts on
	Then   string `json:"then,omitempty"`   // what an unsaved-changes dialog continues with
	Error  string `json:"error,omitempty"`
	Info   string `json:"info,omitempty"`
	Scroll int    `json:"scroll,omitempty"`
	Pick   string `json:"pick,omitempty"` // name picked in a file list
}

// ContextMenu is an open right-click menu.
type ContextMenu struct {
	X      int    `json:"x"`
	Y      int    `json:"y"`
	Target string `json:"target,omitempty"` // the item it was opened on ("" for the background)
}

// FilesState is the file manager.
type FilesState struct {
	Dir      string       `json:"dir"`
	Selected string       `json:"selected,omitempty"`
	Scroll   int          `json:"scroll,omitempty"`
	Menu     string       `json:"menu,omitempty"`
	Context  *ContextMenu `json:"context,omitempty"`
	Dialog   *Dialog      `json:"dialog,omitempty"`
	Location *Field       `json:"location,omitempty"` // the location bar while it is edited
	Clip     string       `json:"clip,omitempty"`     // the path cut or copied
	ClipCut  bool         `json:"clip_cut,omitempty"`
}

// EditorState is the text editor.
type EditorState struct {
	Path   string  `json:"path,omitempty"` // "" for an untitled document
	Buf    Buffer  `json:"buf"`
	Dirty  bool    `json:"dirty,omitempty"`
	Menu   string  `json:"menu,omitempty"`
	Dialog *Dialog `json:"dialog,omitempty"`
}

// SheetState is the spreadsheet.
type SheetState struct {
	Path    string      `json:"path,omitempty"`
	Data    sheet.Sheet `json:"data"`
	Row     int         `json:"row"`
	Col     int         `json:"col"`
	TabFrom int         `json:"tab_from"` // column a run of Tab began at; Enter returns there
	Edit    *Field      `json:"edit,omitempty"`
	NameBox *Field      `json:"name_box,omitempty"`
	Top     int         `json:"top,omitempty"`
	Dirty   bool        `json:"dirty,omitempty"`
	Menu    string      `json:"menu,omitempty"`
	Dialog  *Dialog     `json:"dialog,omitempty"`
}

// SettingValue is one setting, stored as text and typed by the catalogue.
type SettingValue struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// SettingsState is the settings panel.
type SettingsState struct {
	Values  []SettingValue `json:"values"` // sorted by key
	Page    string         `json:"page"`
	Scroll  int            `json:"scroll,omitempty"`
	Open    string         `json:"open,omitempty"`     // key of the open dropdown
	EditKey string         `json:"edit_key,omitempty"` // the focused text field or slider
	Edit    *Field         `json:"edit,omitempty"`     // a text setting being edited
	Message string         `json:"message,omitempty"`  // why the last value was refused
}

// Message is an inbox message.
type Message struct {
	From    string `json:"from"`
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

// Compose is a message being written.
type Compose struct {
	To          Field    `json:"to"`
	Cc          Field    `json:"cc"`
	Subject     Field    `json:"subject"`
	Body        Buffer   `json:"body"`
	Attachments []string `json:"attachments,omitempty"`
	Focus       string   `json:"focus,omitempty"` // to, cc, subject, body
	Error       string   `json:"error,omitempty"`
}

// MailState is the mail client.
type MailState struct {
	Inbox    []Message    `json:"inbox"`
	Sent     []judge.Mail `json:"sent"`
	Folder   string       `json:"folder"` // inbox or sent
	Selected int          `json:"selected"`
	Scroll   int          `json:"scroll,omitempty"`
	Compose  *Compose     `json:"compose,omitempty"`
	Dialog   *Dialog      `json:"dialog,omitempty"`
	Info     string       `json:"info,omitempty"`
	Menu     string       `json:"menu,omitempty"`
}

// MarshalState returns the state as deterministic JSON.
func (d *Desktop) MarshalState() ([]byte, error) {
	b, err := json.Marshal(&d.S)
	if err != nil {
		return nil, fmt.Errorf("simdesk: marshal state: %w", err)
	}
	return b, nil
}

// RestoreState replaces the state with a serialised one after checking it.
func (d *Desktop) RestoreState(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s State
	if err := dec.Decode(&s); err != nil {
		return fmt.Errorf("simdesk: restore state: %w", err)
	}
	if err := s.validate(); err != nil {
		return fmt.Errorf("simdesk: restore state: %w", err)
	}
	d.S = s
	d.invalidate()
	return nil
}

// validate checks the invariants code relies on, so that a restored state
// can never make the simulator index out of range.
func (s *State) validate() error {
	if s.Version != StateVersion {
		return fmt.Errorf("state version %d, want %d", s.Version, StateVersion)
	}
	if err := checkScreen(s.Width, s.Height); err != nil {
		return err
	}
	if s.Mouse.X < 0 || s.Mouse.Y < 0 || s.Mouse.X >= s.Width || s.Mouse.Y >= s.Height {
		return fmt.Errorf("mouse %v off-screen", s.Mouse)
	}
	if err := s.Input.validate(s.Width, s.Height); err != nil {
		return err
	}
	if err := s.FS.Validate(); err != nil {
		return fmt.Errorf("file system: %w", err)
	}
	var seen []string
	for _, w := range s.Windows {
		if appByID(w.App) == nil || slices.Contains(seen, w.App) {
			return fmt.Errorf("window of app %q unknown or duplicated", w.App)
		}
		seen = append(seen, w.App)
		if w.W < 200 || w.H < 150 || w.W > s.Width || w.H > s.Height {
			return fmt.Errorf("window of %s has size %dx%d", w.App, w.W, w.H)
		}
	}
	if !s.FS.IsDir(s.Files.Dir) {
		return fmt.Errorf("file manager folder %q missing", s.Files.Dir)
	}
	for _, b := range []*Buffer{&s.Editor.Buf} {
		if err := b.validate(); err != nil {
			return fmt.Errorf("editor: %w", err)
		}
	}
	if c := s.Mail.Compose; c != nil {
		if err := c.Body.validate(); err != nil {
			return fmt.Errorf("mail body: %w", err)
		}
	}
	if s.Sheet.Row < 0 || s.Sheet.Row >= sheet.MaxRows || s.Sheet.Col < 0 || s.Sheet.Col >= sheet.MaxCols {
		return fmt.Errorf("sheet selection out of range")
	}
	if len(s.Sheet.Data.Cells) > sheet.MaxRows {
		return fmt.Errorf("sheet has too many rows")
	}
	for _, r := range s.Sheet.Data.Cells {
		if len(r) > sheet.MaxCols {
			return fmt.Errorf("sheet has too many columns")
		}
	}
	if s.Mail.Selected < -1 || s.Mail.Selected >= len(s.Mail.Inbox)+len(s.Mail.Sent) {
		return fmt.Errorf("mail selection out of range")
	}
	if settingsPage(s.Settings.Page) == nil {
		return fmt.Errorf("settings page %q unknown", s.Settings.Page)
	}
	for i, v := range s.Settings.Values {
		if settingByKey(v.Key) == nil || (i > 0 && s.Settings.Values[i-1].Key >= v.Key) {
			return fmt.Errorf("setting %q unknown or out of order", v.Key)
		}
	}
	return nil
}

func (b *Buffer) validate() error {
	if len(b.Lines) == 0 || b.Line < 0 || b.Line >= len(b.Lines) || b.Col < 0 || b.Col > len([]rune(b.Lines[b.Line])) || b.Top < 0 {
		return fmt.Errorf("buffer caret %d:%d outside %d lines", b.Line, b.Col, len(b.Lines))
	}
	return nil
}

func checkScreen(w, h int) error {
	if w < 1024 || h < 640 || w > 3840 || h > 2160 {
		return fmt.Errorf("screen %dx%d outside 1024x640..3840x2160", w, h)
	}
	return nil
}
