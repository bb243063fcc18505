package simdesk

import (
	"encoding/json"
	"fmt"

	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

// The Desktop is a judge.Source: judges read its state directly.
var _ judge.Source = (*Desktop)(nil)

// Stat implements judge.Source.
func (d *Desktop) Stat(p string) (bool, bool, error) {
	e, ok := d.S.FS.Stat(p)
	return ok, ok && e.Dir, nil
}

// ReadFile implements judge.Source.
func (d *Desktop) ReadFile(p string) (string, error) {
	e, ok := d.S.FS.Stat(p)
	if !ok || e.Dir {
		return "", fmt.Errorf("%s: %w", vfs.Short(p), judge.ErrNotFound)
	}
	return e.Content, nil
}

// ListDir implements judge.Source.
func (d *Desktop) ListDir(p string) ([]string, error) {
	kids, err := d.S.FS.Children(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", vfs.Short(p), judge.ErrNotFound)
	}
	names := make([]string, len(kids))
	for i, k := range kids {
		names[i] = k.Name()
	}
	return names, nil
}

// Setting implements judge.Source.
func (d *Desktop) Setting(key string) (any, error) {
	v, ok := d.S.SettingValue(key)
	if !ok {
		return nil, fmt.Errorf("setting %s: %w", key, judge.ErrNotFound)
	}
	return v, nil
}

// SentMail implements judge.Source.
func (d *Desktop) SentMail() ([]judge.Mail, error) { return d.S.Mail.Sent, nil }

// Windows implements judge.Source.
func (d *Desktop) Windows() (string, []string, error) { return d.S.Focused(), d.S.OpenApps(), nil }

// Editor implements judge.Source.
func (d *Desktop) Editor() (judge.EditorInfo, error) {
	e := &d.S.Editor
	return judge.EditorInfo{Open: d.S.window("editor") != nil, Path: e.Path, Text: e.Buf.Text(), Dirty: e.Dirty}, nil
}

// Clipboard implements judge.Source.
func (d *Desktop) Clipboard() (string, error) { return d.S.Clipboard, nil }

// Terminal implements judge.Source.
func (d *Desktop) Terminal() (string, error) { return d.S.Terminal, nil }

// CommandOutput implements judge.CommandSource: the command's standard
// output, as OSWorld's vm_command_line getter reads it; one the simulator
// cannot run is judge.ErrUnsupported.
func (d *Desktop) CommandOutput(command, shell json.RawMessage) (string, error) {
	c, err := ParseCommand(command, shell)
	if err != nil {
		return "", err
	}
	r := d.Execute(c)
	if r.Unsupported != "" {
		return "", fmt.Errorf("%s: %w", r.Unsupported, judge.ErrUnsupported)
	}
	return r.Output, nil
}
