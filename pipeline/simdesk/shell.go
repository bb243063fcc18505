package simdesk

import (
	"errors"
	"fmt"
	"image"
	"path"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/pipeline/simdesk/sheet"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

// CommandResult is what running a command returned, in the shape of
// OSWorld's /execute reply.
type CommandResult struct {
	Output     string
	Error      string
	ReturnCode int
}

// SplitCommand splits a shell command line the way Python's shlex does for
// the simple cases agents and setup steps use: whitespace separates words,
// single quotes are literal, double quotes and backslashes escape.
func SplitCommand(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated single quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			inWord = true
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte(`"\$`+"`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated double quote")
			}
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

// launchApps maps program names of a Linux desktop to simulator apps, so
// OSWorld-style launch steps work.
var launchApps = map[string]string{
	"files": "files", "nautilus": "files", "thunar": "files",
	"editor": "editor", "gedit": "editor", "gnome-text-editor": "editor", "text-editor": "editor",
	"sheet": "sheet", "localc": "sheet", "libreoffice": "sheet", "soffice": "sheet",
	"settings": "settings", "gnome-control-center": "settings",
	"mail": "mail", "thunderbird": "mail",
}

// RunCommand runs one command of the small shell the simulator understands:
// file commands (mkdir [-p], touch, rm [-r] [-f], mv, cp [-r], cat, ls,
// echo), app launchers (gedit, nautilus, libreoffice --calc,
// gnome-control-center, thunderbird, with an optional file), pyautogui
// scripts through "python -c", and "simdesk <verb>" for the simulator's own
// setup steps. Anything else is "command not found" (return code 127).
func (d *Desktop) RunCommand(argv []string) CommandResult {
	d.invalidate()
	if len(argv) == 0 {
		return CommandResult{Error: "empty command", ReturnCode: 1}
	}
	fail := func(format string, args ...any) CommandResult {
		return CommandResult{Error: fmt.Sprintf(format, args...), ReturnCode: 1}
	}
	prog := path.Base(argv[0])
	args := argv[1:]
	var flags []string
	var rest []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") && len(a) > 1 && prog != "echo" && prog != "simdesk" && !strings.HasPrefix(prog, "python") {
			flags = append(flags, a)
		} else {
			rest = append(rest, a)
		}
	}
	has := func(letter string) bool {
		for _, f := range flags {
			if !strings.HasPrefix(f, "--") && strings.Contains(f, letter) {
				return true
			}
		}
		return false
	}
	clean := func(p string) (string, error) { return vfs.Clean(p) }
	switch prog {
	case "mkdir", "touch", "rm", "cat", "ls":
		if len(rest) == 0 && prog != "ls" {
			return fail("%s: missing operand", prog)
		}
		if prog == "ls" && len(rest) == 0 {
			rest = []string{vfs.Home}
		}
		var out strings.Builder
		for _, a := range rest {
			p, err := clean(a)
			if err != nil {
				return fail("%s: %v", prog, err)
			}
			switch prog {
			case "mkdir":
				err = d.S.FS.Mkdir(p, has("p"))
			case "touch":
				if _, ok := d.S.FS.Stat(p); !ok {
					err = d.S.FS.Write(p, "")
				}
			case "rm":
				err = d.S.FS.Remove(p, has("r") || has("R"))
				if errors.Is(err, vfs.ErrNotFound) && has("f") {
					err = nil // -f ignores missing files, not protected ones
				}
			case "cat":
				var s string
				s, err = d.S.FS.Read(p)
				out.WriteString(s)
			case "ls":
				var kids []vfs.Entry
				kids, err = d.S.FS.Children(p)
				for _, k := range kids {
					out.WriteString(k.Name() + "\n")
				}
			}
			if err != nil {
				return fail("%s: %v", prog, err)
			}
		}
		return CommandResult{Output: out.String()}
	case "mv", "cp":
		if len(rest) != 2 {
			return fail("%s: want a source and a destination", prog)
		}
		src, err := clean(rest[0])
		if err != nil {
			return fail("%s: %v", prog, err)
		}
		dst, err := clean(rest[1])
		if err != nil {
			return fail("%s: %v", prog, err)
		}
		if d.S.FS.IsDir(dst) {
			dst = path.Join(dst, path.Base(src))
		}
		if prog == "mv" {
			err = d.S.FS.Move(src, dst)
		} else {
			if d.S.FS.IsDir(src) && !has("r") && !has("R") {
				return fail("cp: -r not specified; omitting folder %s", rest[0])
			}
			err = d.S.FS.Copy(src, dst)
		}
		if err != nil {
			return fail("%s: %v", prog, err)
		}
		return CommandResult{}
	case "echo":
		return CommandResult{Output: strings.Join(args, " ") + "\n"}
	case "python", "python3":
		if len(args) != 2 || args[0] != "-c" {
			return fail("%s: only \"-c <pyautogui script>\" is supported", prog)
		}
		return d.runPyAutoGUI(args[1])
	case "simdesk":
		return d.runSimdesk(args)
	}
	if appID, ok := launchApps[prog]; ok {
		d.openApp(appID)
		for _, a := range rest {
			if p, err := clean(a); err == nil {
				if _, ok := d.S.FS.Stat(p); ok {
					d.openPath(p)
				}
			}
		}
		return CommandResult{}
	}
	return CommandResult{Error: prog + ": command not found", ReturnCode: 127}
}

// runPyAutoGUI runs a pyautogui script as actions; the first refused action
// stops it with an error, as an exception would in Python.
func (d *Desktop) runPyAutoGUI(script string) CommandResult {
	mouse := image.Pt(d.S.Mouse.X, d.S.Mouse.Y)
	acts, err := action.ParsePyAutoGUI(script, action.Screen{Width: d.S.Width, Height: d.S.Height, Mouse: &mouse})
	if err != nil {
		return CommandResult{Error: err.Error(), ReturnCode: 1}
	}
	for _, a := range acts {
		if msg := d.Apply(a); msg != "" {
			return CommandResult{Error: msg, ReturnCode: 1}
		}
	}
	return CommandResult{}
}

// runSimdesk runs the simulator's own setup verbs.
func (d *Desktop) runSimdesk(args []string) CommandResult {
	if len(args) == 0 {
		return CommandResult{Error: "simdesk: missing verb", ReturnCode: 2}
	}
	need := func(n int) bool { return len(args) == n+1 }
	var err error
	switch {
	case args[0] == "set-cell" && need(3):
		err = d.setupSetCell(args[1], args[2], args[3])
	case args[0] == "set-setting" && need(2):
		err = d.setupSetSetting(args[1], args[2])
	case args[0] == "add-mail" && need(3):
		d.S.Mail.Inbox = append(d.S.Mail.Inbox, Message{From: args[1], Subject: args[2], Body: args[3]})
	case args[0] == "open-app" && need(1):
		if appByID(args[1]) == nil {
			err = fmt.Errorf("unknown app %q", args[1])
		} else {
			d.openApp(args[1])
		}
	case args[0] == "type" && need(1):
		d.typeText(args[1])
	case args[0] == "clipboard" && need(1):
		d.S.Clipboard = args[1]
	case args[0] == "write-file" && need(2):
		err = d.setupCreateFile(args[1], args[2])
	default:
		return CommandResult{Error: fmt.Sprintf("simdesk: unknown verb or wrong arguments: %q", args), ReturnCode: 2}
	}
	if err != nil {
		return CommandResult{Error: "simdesk " + args[0] + ": " + err.Error(), ReturnCode: 1}
	}
	return CommandResult{}
}

func (d *Desktop) setupCreateFile(p, content string) error {
	c, err := vfs.Clean(p)
	if err != nil {
		return err
	}
	if err := d.S.FS.Mkdir(path.Dir(c), true); err != nil {
		return err
	}
	return d.S.FS.Write(c, content)
}

func (d *Desktop) setupSetCell(p, cell, value string) error {
	c, err := vfs.Clean(p)
	if err != nil {
		return err
	}
	row, col, err := sheet.ParseRef(cell)
	if err != nil {
		return err
	}
	sh := &sheet.Sheet{}
	if text, err := d.S.FS.Read(c); err == nil {
		if sh, err = sheet.ParseCSV(text); err != nil {
			return err
		}
	}
	if err := sh.Set(row, col, value); err != nil {
		return err
	}
	if err := d.setupCreateFile(c, sh.CSV()); err != nil {
		return err
	}
	if d.S.Sheet.Path == c && !d.S.Sheet.Dirty {
		d.S.Sheet.Data = *sh
	}
	return nil
}

func (d *Desktop) setupSetSetting(key, value string) error {
	if settingByKey(key) == nil {
		return fmt.Errorf("unknown setting %q", key)
	}
	if msg := d.S.setSetting(key, value); msg != "" {
		return fmt.Errorf("%s", msg)
	}
	return nil
}
