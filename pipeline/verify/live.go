package verify

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image/png"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/schemas"
)

// Live is the terminal environment of one episode, restored from its
// final-state blob into a simulator of its own, that a Probe inspects. Its
// actions go through the read-only guard: an action that would save,
// delete or edit is refused (not executed) and counted, and any action that
// changes the document state anyway (files, settings, mail, documents, the
// clipboard) is rolled back and counted as refused too. The episode's own
// state blob is never touched.
type Live struct {
	d           *simdesk.Desktop
	screenshots bool
	steps       int // GUI actions tried (executed or refused)
	refused     int
	tokens      int // approximate tokens of what was read and written
	refusals    []string
}

// NewLive restores a saved simulator state. With screenshots the Probe
// records PNG evidence; without, only accessibility trees are read.
func NewLive(state []byte, screenshots bool) (*Live, error) {
	var size struct {
		Width  int   `json:"width"`
		Height int   `json:"height"`
		Seed   int64 `json:"seed"`
	}
	if err := json.Unmarshal(state, &size); err != nil {
		return nil, fmt.Errorf("live environment: read state: %w", err)
	}
	d, err := simdesk.New(size.Width, size.Height, size.Seed)
	if err != nil {
		return nil, fmt.Errorf("live environment: %w", err)
	}
	if err := d.RestoreState(state); err != nil {
		return nil, fmt.Errorf("live environment: %w", err)
	}
	// The agent's done/fail ended its episode; the Probe's session on the
	// same state is a new one, so the simulator must accept actions again.
	d.S.Terminal = ""
	return &Live{d: d, screenshots: screenshots}, nil
}

// Steps, Refused and Tokens report the Probe's cost so far.
func (l *Live) Steps() int   { return l.steps }
func (l *Live) Refused() int { return l.refused }
func (l *Live) Tokens() int  { return l.tokens }

// Refusals lists why actions were refused, in order.
func (l *Live) Refusals() []string { return append([]string(nil), l.refusals...) }

// Screen reads the current accessibility tree; reading costs tokens.
func (l *Live) Screen() (*Screen, error) {
	s, err := ParseScreen(l.d.Tree())
	if err != nil {
		return nil, err
	}
	l.tokens += approxTokens(s.Text())
	return s, nil
}

// Shot returns the current screenshot as an evidence blob; ok is false in
// tree-only mode.
func (l *Live) Shot() (schemas.Blob, bool, error) {
	if !l.screenshots {
		return schemas.Blob{}, false, nil
	}
	b, err := l.d.Screenshot()
	if err != nil {
		return schemas.Blob{}, false, fmt.Errorf("live environment: screenshot: %w", err)
	}
	bl := schemas.Blob{Hash: schemas.HashBytes(b), Mime: "image/png", Size: int64(len(b)), Bytes: b}
	if cfg, err := png.DecodeConfig(bytes.NewReader(b)); err == nil {
		bl.Width, bl.Height = int32(cfg.Width), int32(cfg.Height)
	}
	return bl, true, nil
}

// PNG returns the current screenshot's bytes (nil in tree-only mode).
func (l *Live) PNG() ([]byte, error) {
	if !l.screenshots {
		return nil, nil
	}
	return l.d.Screenshot()
}

// ContentDigest hashes the document state a Probe must never change:
// files, setting values (and a setting being edited), mail (inbox, sent,
// a draft), the editor's and the sheet's unsaved documents, and the
// clipboards. Window layout, pages, scroll positions, selections and which
// saved file an app shows are left out: looking around changes them by
// design, and a document without unsaved changes is the file on disk.
func ContentDigest(d *simdesk.Desktop) string {
	s := &d.S
	type doc struct {
		Path  string
		Lines []string
		Data  any
	}
	var editor, sheet *doc
	if s.Editor.Dirty {
		editor = &doc{Path: s.Editor.Path, Lines: s.Editor.Buf.Lines}
	}
	if s.Sheet.Dirty || s.Sheet.Edit != nil {
		sheet = &doc{Path: s.Sheet.Path, Data: s.Sheet.Data}
	}
	v := struct {
		FS             any
		Settings, Edit any
		Inbox, Sent    any
		Compose        any
		Editor, Sheet  *doc
		SheetEdit      any
		Clipboard      string
		FilesClip      string
		FilesClipCut   bool
	}{s.FS, s.Settings.Values, s.Settings.Edit, s.Mail.Inbox, s.Mail.Sent, s.Mail.Compose,
		editor, sheet, s.Sheet.Edit, s.Clipboard, s.Files.Clip, s.Files.ClipCut}
	b, err := json.Marshal(v)
	if err != nil {
		return "unmarshallable:" + err.Error()
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Digest is the ContentDigest of the live environment.
func (l *Live) Digest() string { return ContentDigest(l.d) }

// State returns the live environment's serialised state.
func (l *Live) State() ([]byte, error) { return l.d.MarshalState() }

// Act tries one GUI action. It returns the reason when the guard refused
// it ("" when it ran); Go errors mean the environment failed.
func (l *Live) Act(a schemas.Action) (string, error) {
	l.steps++
	l.tokens += 10 // the action as written
	s, err := ParseScreen(l.d.Tree())
	if err != nil {
		return "", err
	}
	if why := refuse(s, a); why != "" {
		l.refuse(why)
		return why, nil
	}
	before := l.Digest()
	saved, err := l.d.MarshalState()
	if err != nil {
		return "", fmt.Errorf("live environment: %w", err)
	}
	if msg := l.d.Apply(a); msg != "" {
		return "", nil // an invalid action is a no-op the Probe sees, not a refusal
	}
	if l.Digest() != before {
		if err := l.d.RestoreState(saved); err != nil {
			return "", fmt.Errorf("live environment: roll back: %w", err)
		}
		why := "the action changed the document state; rolled back"
		l.refuse(why)
		return why, nil
	}
	return "", nil
}

func (l *Live) refuse(why string) {
	l.refused++
	l.refusals = append(l.refusals, why)
}

// clickAt aims a pointer action at a node's centre (the tree holds it on
// the action grid already).
func clickAt(kind string, n *Node) schemas.Action { return action.At(kind, n.Center[0], n.Center[1]) }
