package simdesk

import (
	"errors"
	"fmt"
	"image"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/pipeline/simdesk/sheet"
	"github.com/cualake/cualake/pipeline/simdesk/vfs"
	"github.com/cualake/cualake/schemas"
)

// CommandResult is what running a command returned, in the shape of
// OSWorld's /execute reply. Unsupported is set (and nothing changed) when
// the simulator cannot run the command at all: OSWorld's server answers
// such failures with HTTP 500 {"status": "error", "message": ...}.
type CommandResult struct {
	Output      string
	Error       string
	ReturnCode  int
	Unsupported string
}

// SplitCommand splits a command line the way Python's shlex.split does
// (OSWorld's server splits string commands sent with shell false so):
// whitespace separates words, single quotes are literal, double quotes and
// backslashes escape. Operators such as && stay plain words.
func SplitCommand(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
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

// launchFlags are the options a launcher accepts: they pick the app, and
// change nothing else here.
var launchFlags = map[string]bool{"--calc": true, "-calc": true, "--new-window": true}

// RunCommand runs a command given as a list of words, as OSWorld's
// /execute does with "shell": false: the first word is the program. bash,
// sh, /bin/bash, /usr/bin/env bash and the like with -c run their script
// through RunShell. Programs are those of RunShell; a word that is a shell
// operator (&&, |, ;) is refused, since without a shell it would reach the
// program as an argument (mkdir would make a folder named "&&").
func (d *Desktop) RunCommand(argv []string) CommandResult {
	d.invalidate()
	if len(argv) == 0 {
		return CommandResult{Unsupported: "empty command", ReturnCode: 1}
	}
	words := make([]shWord, len(argv))
	for i, a := range argv {
		if slices.Contains([]string{"&&", "||", "|", ";", ">", ">>", "<", "2>", "&"}, a) {
			return CommandResult{Unsupported: fmt.Sprintf("the command has the shell operator %q as a word, but \"shell\" is false: "+
				"OSWorld's server would pass it to %s as an argument; send the command as one string with \"shell\": true", a, argv[0]), ReturnCode: 1}
		}
		words[i] = shWord{{text: a, quoted: true}}
	}
	return d.runScript(shScript{{pipes: []shPipe{{{words: words}}}}}, false, vfs.Home)
}

// RunShell runs a command line through the simulator's shell, as bash -c
// would on a VM: the language of parseShell over the programs mkdir [-p],
// rm [-rfR], rmdir, touch, cp [-rRa], mv, chmod (modes are not modelled:
// it checks the files exist), cat, tee [-a], echo [-neE], ls [-aA1R], pwd,
// cd, export, true, false, sleep (no wait), env, bash/sh (-c or a script
// file of the simulated file system), tar -x[z][v] -f F [-C D], unzip [-q]
// [-o] F [-d D], xdg-open, the app launchers (gedit, nautilus, libreoffice
// --calc, gnome-control-center, thunderbird, with a file), python -c
// <pyautogui script> and simdesk <verb>. Everything happens inside the
// simulated file system; the user may write under the home folder and
// /tmp only, as a user without root on a VM. A line using anything else
// is refused before anything runs (Unsupported).
func (d *Desktop) RunShell(line string) CommandResult { return d.RunShellIn(vfs.Home, line) }

// RunShellIn is RunShell starting in folder dir (OSWorld's
// /run_bash_script working_dir); a dir that is not a folder fails.
func (d *Desktop) RunShellIn(dir, line string) CommandResult {
	d.invalidate()
	cwd, err := vfs.Clean(dir)
	if err != nil || !d.S.FS.IsDir(cwd) {
		return CommandResult{Error: fmt.Sprintf("bash: cd: %s: No such file or directory\n", dir), ReturnCode: 1}
	}
	script, err := parseShell(line)
	if err != nil {
		if errors.Is(err, ErrUnsupported) {
			return CommandResult{Unsupported: "simdesk shell: " + err.Error(), ReturnCode: 1}
		}
		return CommandResult{Error: "bash: " + err.Error() + "\n", ReturnCode: 2}
	}
	return d.runScript(script, true, cwd)
}

// CheckShell checks a command line statically, as RunShell does before
// running it: an error wrapping ErrUnsupported names what the simulator
// cannot run.
func CheckShell(line string) error {
	script, err := parseShell(line)
	if err != nil {
		return err
	}
	return checkScript(script, 0)
}

// CheckArgv checks a command given as a list of words, as RunCommand does.
func CheckArgv(argv []string) error {
	if len(argv) == 0 {
		return unsupported("empty command")
	}
	words := make([]shWord, len(argv))
	for i, a := range argv {
		words[i] = shWord{{text: a, quoted: true}}
	}
	return checkScript(shScript{{pipes: []shPipe{{{words: words}}}}}, 0)
}

func (d *Desktop) runScript(script shScript, shell bool, cwd string) CommandResult {
	if err := checkScript(script, 0); err != nil {
		msg := err.Error()
		if !shell {
			msg = notFound(script, err)
		}
		return CommandResult{Unsupported: msg, ReturnCode: 1}
	}
	// A script file run from the script is checked only when it runs; keep
	// a copy of the state so that refusing it still changes nothing.
	var saved []byte
	if runsFiles(script) {
		saved, _ = d.MarshalState()
	}
	ran := 0
	r := &shRun{d: d, cwd: cwd, ran: &ran, vars: map[string]string{"HOME": vfs.Home, "USER": "user", "LOGNAME": "user",
		"SHELL": "/bin/bash", "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}}
	code, err := r.script(script, "")
	if err != nil {
		if saved != nil {
			_ = d.RestoreState(saved) // the state marshalled a moment ago restores
		}
		d.invalidate()
		return CommandResult{Unsupported: err.Error(), ReturnCode: 1}
	}
	d.invalidate()
	return CommandResult{Output: r.stdout.String(), Error: r.stderr.String(), ReturnCode: code}
}

// notFound words a refused program as Python's subprocess does when it
// cannot find one ("[Errno 2] No such file or directory: 'curl'"), with
// why.
func notFound(script shScript, err error) string {
	var pe *progError
	if errors.As(err, &pe) && pe.unknown {
		return fmt.Sprintf("[Errno 2] No such file or directory: '%s' (the simulator has no program %s)", pe.prog, pe.prog)
	}
	return err.Error()
}

// progError is a refusal naming the program.
type progError struct {
	prog    string
	unknown bool // not a program of the simulator at all
	err     error
}

func (e *progError) Error() string {
	if e.unknown {
		return fmt.Sprintf("simdesk shell: %s: the simulator has no such program (it runs: %s): %v", e.prog, strings.Join(shellPrograms(), ", "), ErrUnsupported)
	}
	return fmt.Sprintf("simdesk shell: %s: %v", e.prog, e.err)
}

func (e *progError) Unwrap() error {
	if e.unknown {
		return ErrUnsupported
	}
	return e.err
}

// shProg is a program of the simulator's shell.
type shProg struct {
	// check validates arguments statically (variables appear as $NAME):
	// options and forms the simulator does not implement are errors.
	check func(args []string, depth int) error
	run   func(r *shRun, args []string, stdin string) int
}

var shProgs map[string]shProg

// shellPrograms lists the programs the shell runs.
func shellPrograms() []string {
	var out []string
	for n := range shProgs {
		out = append(out, n)
	}
	for n := range launchApps {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// maxScriptDepth bounds scripts running scripts.
const maxScriptDepth = 8

func checkScript(script shScript, depth int) error {
	if depth > maxScriptDepth {
		return unsupported("scripts nested deeper than %d", maxScriptDepth)
	}
	for _, list := range script {
		for _, pipe := range list.pipes {
			for _, c := range pipe {
				if err := checkCmd(c, depth); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func checkCmd(c shCmd, depth int) error {
	for _, r := range c.redirs {
		if t, ok := r.target.literal(); ok && strings.HasPrefix(t, "/dev/") && t != "/dev/null" {
			return unsupported("redirection to %s", t)
		}
	}
	if len(c.words) == 0 {
		return nil // assignments alone
	}
	if len(c.assigns) > 0 {
		return unsupported("environment assignments before a command (%s=...)", c.assigns[0].name)
	}
	prog, ok := c.words[0].literal()
	if !ok {
		return unsupported("a program name from a variable (%s)", c.words[0].sketch())
	}
	args := make([]string, len(c.words)-1)
	for i, w := range c.words[1:] {
		args[i] = w.sketch()
	}
	return checkProg(prog, args, depth)
}

func checkProg(prog string, args []string, depth int) error {
	if strings.Contains(prog, "/") && !isSystemPath(prog) {
		return checkScriptFile(prog, depth)
	}
	name := path.Base(prog)
	if app, ok := launchApps[name]; ok {
		return checkLaunch(name, app, args)
	}
	p, ok := shProgs[name]
	if !ok {
		return &progError{prog: name, unknown: true}
	}
	if err := p.check(args, depth); err != nil {
		return &progError{prog: name, err: err}
	}
	return nil
}

// isSystemPath reports whether prog names a system program by its path
// (/bin/bash, /usr/bin/env, /usr/bin/thunderbird).
func isSystemPath(prog string) bool {
	for _, dir := range []string{"/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/", "/snap/bin/"} {
		if strings.HasPrefix(prog, dir) && !strings.Contains(prog[len(dir):], "/") {
			return true
		}
	}
	return false
}

// checkScriptFile accepts running a file of the simulated file system as a
// shell script; its content is checked when it runs.
func checkScriptFile(p string, depth int) error {
	if strings.HasPrefix(p, "$") {
		return unsupported("a script path from a variable (%s)", p)
	}
	return nil
}

func checkLaunch(name, app string, args []string) error {
	for _, a := range args {
		if strings.HasPrefix(a, "-") && !launchFlags[a] {
			return &progError{prog: name, err: unsupported("option %s (the simulator starts %s as its %s app and nothing else)", a, name, app)}
		}
	}
	return nil
}

// pythonScripts returns the scripts of the python -c commands of a
// script whose words are literal.
func pythonScripts(script shScript) []string {
	var out []string
	for _, list := range script {
		for _, pipe := range list.pipes {
			for _, c := range pipe {
				var words []string
				for _, w := range c.words {
					s, ok := w.literal()
					if !ok {
						break
					}
					words = append(words, s)
				}
				if len(words) == 3 && (path.Base(words[0]) == "python" || path.Base(words[0]) == "python3") && words[1] == "-c" {
					out = append(out, words[2])
				}
			}
		}
	}
	return out
}

// runsFiles reports whether a script runs script files.
func runsFiles(script shScript) bool {
	for _, list := range script {
		for _, pipe := range list.pipes {
			for _, c := range pipe {
				if len(c.words) == 0 {
					continue
				}
				prog, _ := c.words[0].literal()
				base := path.Base(prog)
				if (strings.Contains(prog, "/") && !isSystemPath(prog)) || ((base == "bash" || base == "sh") && len(c.words) > 1) || base == "env" {
					return true
				}
			}
		}
	}
	return false
}

// shRun is one run of a script.
type shRun struct {
	d      *Desktop
	cwd    string
	vars   map[string]string
	stdout strings.Builder
	stderr strings.Builder
	depth  int
	ran    *int // commands run by the whole line, nested scripts included
}

// maxCommands bounds the commands one line runs, scripts it runs
// included (a script that runs itself twice would otherwise double the
// work at every level).
const maxCommands = 10000

func (r *shRun) errf(format string, args ...any) {
	fmt.Fprintf(&r.stderr, format+"\n", args...)
}

// script runs the and-or lists in order; the status is the last one's. An
// error means a nested script was refused.
func (r *shRun) script(s shScript, stdin string) (int, error) {
	code := 0
	for _, list := range s {
		var err error
		code, err = r.andOr(list, stdin)
		if err != nil {
			return code, err
		}
	}
	return code, nil
}

func (r *shRun) andOr(list shAndOr, stdin string) (int, error) {
	code, err := r.pipe(list.pipes[0], stdin)
	if err != nil {
		return code, err
	}
	for i, op := range list.ops {
		if (op == "&&") != (code == 0) {
			continue // && after a failure, || after a success: skipped
		}
		if code, err = r.pipe(list.pipes[i+1], stdin); err != nil {
			return code, err
		}
	}
	return code, nil
}

// pipe runs commands left to right, each reading the previous one's
// output (the simulator has no concurrency to model).
func (r *shRun) pipe(p shPipe, stdin string) (int, error) {
	in := stdin
	code := 0
	for i, c := range p {
		var out strings.Builder
		var err error
		code, err = r.cmd(c, in, &out, i == len(p)-1)
		if err != nil {
			return code, err
		}
		in = out.String()
	}
	return code, nil
}

// cmd runs one command. Its output goes to out when it is piped on, else
// to the script's output; redirections change both.
func (r *shRun) cmd(c shCmd, stdin string, out *strings.Builder, last bool) (int, error) {
	for _, a := range c.assigns {
		v, err := r.expandOne(a.value)
		if err != nil {
			r.errf("bash: %v", err)
			return 1, nil
		}
		r.vars[a.name] = v
	}
	if len(c.words) == 0 {
		return 0, nil
	}
	var argv []string
	for _, w := range c.words {
		ws, err := r.expand(w)
		if err != nil {
			r.errf("bash: %v", err)
			return 1, nil
		}
		argv = append(argv, ws...)
	}
	if len(argv) == 0 {
		return 0, nil
	}
	// Redirections: stdin from a file; stdout and stderr to files.
	type sink struct {
		path   string
		append bool
		null   bool
	}
	var outTo, errTo *sink
	errToOut, outToErr := false, false
	for _, rd := range c.redirs {
		if rd.target == nil {
			switch rd.op {
			case "2>&1":
				errToOut = true
			default: // >&2, 1>&2
				outToErr = true
			}
			continue
		}
		t, err := r.expandOne(rd.target)
		if err != nil {
			r.errf("bash: %v", err)
			return 1, nil
		}
		if t == "/dev/null" {
			if strings.HasPrefix(rd.op, "<") {
				stdin = ""
				continue
			}
			s := &sink{null: true}
			switch {
			case strings.HasPrefix(rd.op, "2"):
				errTo = s
			case strings.HasPrefix(rd.op, "&"):
				outTo, errTo = s, s
			default:
				outTo = s
			}
			continue
		}
		p, err := r.path(t)
		if err != nil {
			r.errf("bash: %s: %v", t, err)
			return 1, nil
		}
		if strings.HasPrefix(rd.op, "<") {
			content, err := r.d.S.FS.Read(p)
			if err != nil {
				r.errf("bash: %s: %s", t, strerror(err))
				return 1, nil
			}
			stdin = content
			continue
		}
		if err := r.writable(p); err != nil {
			r.errf("bash: %s: %s", t, strerror(err))
			return 1, nil
		}
		s := &sink{path: p, append: strings.HasSuffix(rd.op, ">>")}
		// The file is created (or truncated) before the program runs.
		if _, ok := r.d.S.FS.Stat(p); !ok || !s.append {
			if err := r.d.S.FS.Write(p, ""); err != nil {
				r.errf("bash: %s: %s", t, strerror(err))
				return 1, nil
			}
		}
		switch {
		case strings.HasPrefix(rd.op, "2"):
			errTo = s
		case strings.HasPrefix(rd.op, "&"):
			outTo, errTo = s, s
		default:
			outTo = s
		}
	}
	if *r.ran++; *r.ran > maxCommands {
		return 1, unsupported("more than %d commands in one line, scripts included", maxCommands)
	}
	sub := &shRun{d: r.d, cwd: r.cwd, vars: r.vars, depth: r.depth, ran: r.ran}
	code, err := sub.exec(argv, stdin)
	r.cwd = sub.cwd
	if err != nil {
		return code, err
	}
	o, e := sub.stdout.String(), sub.stderr.String()
	if errToOut {
		o, e = o+e, ""
		if errTo != nil {
			errTo = nil
		}
	}
	if outToErr {
		o, e = "", e+o
	}
	deliver := func(s *sink, text string, def *strings.Builder) {
		switch {
		case s == nil:
			def.WriteString(text)
		case s.null || text == "":
		default:
			old, _ := r.d.S.FS.Read(s.path)
			if err := r.d.S.FS.Write(s.path, old+text); err != nil {
				r.errf("bash: %s: %s", s.path, strerror(err))
			}
		}
	}
	stdoutTo := out
	if last {
		stdoutTo = &r.stdout
	}
	deliver(outTo, o, stdoutTo)
	deliver(errTo, e, &r.stderr)
	return code, nil
}

// expand expands a word: variables, a leading ~, and globs over the file
// system (a glob that matches nothing stays as written, as in bash).
func (r *shRun) expand(w shWord) ([]string, error) {
	var b strings.Builder
	glob := false
	for i, p := range w {
		text := p.text
		if p.varRef != "" {
			text = r.vars[p.varRef]
		} else if i == 0 && !p.quoted && (text == "~" || strings.HasPrefix(text, "~/")) {
			text = vfs.Home + text[1:]
		}
		if !p.quoted && p.varRef == "" && strings.ContainsAny(text, "*?[") {
			glob = true
		}
		b.WriteString(text)
	}
	s := b.String()
	if glob {
		if m := r.glob(s); len(m) > 0 {
			return m, nil
		}
	}
	return []string{s}, nil
}

func (r *shRun) expandOne(w shWord) (string, error) {
	ws, err := r.expand(w)
	if err != nil {
		return "", err
	}
	if len(ws) != 1 {
		return "", fmt.Errorf("%s: ambiguous redirect", w.sketch())
	}
	return ws[0], nil
}

// glob matches a pattern whose wildcards are in its last element.
func (r *shRun) glob(pattern string) []string {
	dir, base := path.Split(pattern)
	if strings.ContainsAny(dir, "*?[") {
		return nil
	}
	abs := r.cwd
	if dir != "" {
		p, err := r.path(dir)
		if err != nil {
			return nil
		}
		abs = p
	}
	kids, err := r.d.S.FS.Children(abs)
	if err != nil {
		return nil
	}
	var out []string
	for _, k := range kids {
		if strings.HasPrefix(k.Name(), ".") && !strings.HasPrefix(base, ".") {
			continue
		}
		if ok, _ := path.Match(base, k.Name()); ok {
			out = append(out, dir+k.Name())
		}
	}
	sort.Strings(out)
	return out
}

// path resolves a path against the working folder.
func (r *shRun) path(p string) (string, error) {
	if p != "" && !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~") {
		p = r.cwd + "/" + p
	}
	return vfs.Clean(p)
}

// errPermission is what a user without root gets outside their folders.
var errPermission = errors.New("Permission denied")

// writable refuses changes outside the home folder and /tmp.
func (r *shRun) writable(p string) error {
	if p == vfs.Home || strings.HasPrefix(p, vfs.Home+"/") || p == "/tmp" || strings.HasPrefix(p, "/tmp/") {
		return nil
	}
	return errPermission
}

// strerror renders a file system error as coreutils do.
func strerror(err error) string {
	switch {
	case errors.Is(err, errPermission):
		return "Permission denied"
	case errors.Is(err, vfs.ErrNotFound):
		return "No such file or directory"
	case errors.Is(err, vfs.ErrExists):
		return "File exists"
	case errors.Is(err, vfs.ErrNotDir):
		return "Not a directory"
	case errors.Is(err, vfs.ErrIsDir):
		return "Is a directory"
	case errors.Is(err, vfs.ErrNotEmpty):
		return "Directory not empty"
	case errors.Is(err, vfs.ErrBadPath):
		return "Operation not permitted"
	case errors.Is(err, vfs.ErrNoSpace):
		return "No space left on device"
	}
	return err.Error()
}

// exec runs one program with expanded arguments.
func (r *shRun) exec(argv []string, stdin string) (int, error) {
	prog := argv[0]
	if strings.Contains(prog, "/") && !isSystemPath(prog) {
		return r.runFile(prog, argv[1:], stdin)
	}
	name := path.Base(prog)
	if app, ok := launchApps[name]; ok {
		return r.launch(name, app, argv[1:]), nil
	}
	p, ok := shProgs[name]
	if !ok {
		return 1, &progError{prog: name, unknown: true}
	}
	if err := p.check(argv[1:], r.depth); err != nil {
		return 1, &progError{prog: name, err: err}
	}
	if name == "bash" || name == "sh" || name == "env" {
		return r.nested(name, argv[1:], stdin)
	}
	return p.run(r, argv[1:], stdin), nil
}

func (r *shRun) launch(name, app string, args []string) int {
	r.d.openApp(app)
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		p, err := r.path(a)
		if err != nil {
			continue
		}
		if _, ok := r.d.S.FS.Stat(p); ok {
			r.d.openPath(p)
		}
	}
	return 0
}

// nested runs bash/sh -c SCRIPT, bash FILE, and env [NAME=V]... PROG.
func (r *shRun) nested(name string, args []string, stdin string) (int, error) {
	if name == "env" {
		for len(args) > 0 && strings.Contains(args[0], "=") && !strings.HasPrefix(args[0], "=") {
			k, v, _ := strings.Cut(args[0], "=")
			r.vars[k] = v
			args = args[1:]
		}
		if len(args) == 0 {
			return 0, nil
		}
		return r.exec(args, stdin)
	}
	if len(args) >= 2 && args[0] == "-c" {
		script, err := parseShell(args[1])
		if err != nil {
			if errors.Is(err, ErrUnsupported) {
				return 1, fmt.Errorf("simdesk shell: %w", err)
			}
			r.errf("%s: -c: %v", name, err)
			return 2, nil
		}
		if err := checkScript(script, r.depth+1); err != nil {
			return 1, err
		}
		sub := &shRun{d: r.d, cwd: r.cwd, vars: copyVars(r.vars), depth: r.depth + 1, ran: r.ran}
		code, err := sub.script(script, stdin)
		r.stdout.WriteString(sub.stdout.String())
		r.stderr.WriteString(sub.stderr.String())
		return code, err
	}
	return r.runFile(args[0], args[1:], stdin)
}

func copyVars(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// runFile runs a file of the simulated file system as a shell script
// (./setup.sh, bash setup.sh); a script for another interpreter is
// refused.
func (r *shRun) runFile(file string, args []string, stdin string) (int, error) {
	p, err := r.path(file)
	if err != nil {
		r.errf("bash: %s: %v", file, err)
		return 127, nil
	}
	content, err := r.d.S.FS.Read(p)
	if err != nil {
		r.errf("bash: %s: %s", file, strerror(err))
		return 127, nil
	}
	first, _, _ := strings.Cut(content, "\n")
	if strings.HasPrefix(first, "#!") {
		interp := strings.Fields(strings.TrimPrefix(first, "#!"))
		ok := len(interp) > 0 && (slices.Contains([]string{"/bin/bash", "/bin/sh", "/usr/bin/bash", "/usr/bin/sh"}, interp[0]) ||
			(interp[0] == "/usr/bin/env" && len(interp) > 1 && (interp[1] == "bash" || interp[1] == "sh")))
		if !ok {
			return 1, unsupported("script %s runs with %s, not a shell", file, strings.TrimPrefix(first, "#!"))
		}
	}
	if len(args) > 0 {
		return 1, unsupported("arguments to script %s ($1...)", file)
	}
	script, err := parseShell(content)
	if err != nil {
		if errors.Is(err, ErrUnsupported) {
			return 1, fmt.Errorf("simdesk shell: script %s: %w", file, err)
		}
		r.errf("%s: %v", file, err)
		return 2, nil
	}
	if err := checkScript(script, r.depth+1); err != nil {
		return 1, fmt.Errorf("script %s: %w", file, err)
	}
	sub := &shRun{d: r.d, cwd: r.cwd, vars: copyVars(r.vars), depth: r.depth + 1, ran: r.ran}
	code, err := sub.script(script, stdin)
	r.stdout.WriteString(sub.stdout.String())
	r.stderr.WriteString(sub.stderr.String())
	return code, err
}

// flagSet reads leading options: single letters (combined, as in -rf)
// from short and long names from long (mapped to a letter); "--" ends the
// options. Anything else starting with "-" is an error.
func flagSet(args []string, short string, long map[string]byte) (map[byte]bool, []string, error) {
	set := map[byte]bool{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return set, args[i+1:], nil
		case strings.HasPrefix(a, "--"):
			c, ok := long[a]
			if !ok {
				return nil, nil, unsupported("option %s", a)
			}
			set[c] = true
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				if strings.IndexByte(short, a[j]) < 0 {
					return nil, nil, unsupported("option -%c", a[j])
				}
				set[a[j]] = true
			}
		default:
			return set, args[i:], nil
		}
	}
	return set, nil, nil
}

// operands checks the options and the number of operands.
func operands(short string, long map[string]byte, lo, hi int) func([]string, int) error {
	return func(args []string, _ int) error {
		_, rest, err := flagSet(args, short, long)
		if err != nil {
			return err
		}
		if len(rest) < lo || (hi >= 0 && len(rest) > hi) {
			if hi < 0 {
				return fmt.Errorf("want at least %d operands, got %d: %w", lo, len(rest), ErrUnsupported)
			}
			return fmt.Errorf("want %d to %d operands, got %d: %w", lo, hi, len(rest), ErrUnsupported)
		}
		return nil
	}
}

func anyArgs([]string, int) error { return nil }

func init() {
	shProgs = map[string]shProg{
		"true":  {check: anyArgs, run: func(*shRun, []string, string) int { return 0 }},
		":":     {check: anyArgs, run: func(*shRun, []string, string) int { return 0 }},
		"false": {check: anyArgs, run: func(*shRun, []string, string) int { return 1 }},
		"pwd": {check: operands("", nil, 0, 0), run: func(r *shRun, _ []string, _ string) int {
			r.stdout.WriteString(r.cwd + "\n")
			return 0
		}},
		"sleep": {check: func(args []string, _ int) error {
			if len(args) != 1 {
				return unsupported("want one duration")
			}
			if _, err := strconv.ParseFloat(strings.TrimRight(args[0], "s"), 64); err != nil && !strings.HasPrefix(args[0], "$") {
				return unsupported("duration %q", args[0])
			}
			return nil
		}, run: func(*shRun, []string, string) int { return 0 }}, // the simulator does not wait
		"echo":  {check: anyArgs, run: runEcho},
		"cat":   {check: operands("", nil, 0, -1), run: runCat},
		"tee":   {check: operands("a", map[string]byte{"--append": 'a'}, 0, -1), run: runTee},
		"mkdir": {check: operands("pv", map[string]byte{"--parents": 'p', "--verbose": 'v'}, 1, -1), run: runMkdir},
		"rmdir": {check: operands("", nil, 1, -1), run: runRmdir},
		"rm": {check: operands("rRfvd", map[string]byte{"--recursive": 'r', "--force": 'f', "--verbose": 'v', "--dir": 'd'}, 0, -1),
			run: runRm},
		"touch": {check: operands("", nil, 1, -1), run: runTouch},
		"cp": {check: operands("rRafv", map[string]byte{"--recursive": 'r', "--archive": 'a', "--force": 'f', "--verbose": 'v'}, 2, -1),
			run: func(r *shRun, args []string, _ string) int { return runCpMv(r, "cp", args) }},
		"mv": {check: operands("fv", map[string]byte{"--force": 'f', "--verbose": 'v'}, 2, -1),
			run: func(r *shRun, args []string, _ string) int { return runCpMv(r, "mv", args) }},
		"chmod": {check: checkChmod, run: runChmod},
		"ls":    {check: operands("aA1R", map[string]byte{"--all": 'a', "--almost-all": 'A', "--recursive": 'R'}, 0, -1), run: runLs},
		"cd":    {check: operands("", nil, 0, 1), run: runCd},
		"export": {check: func(args []string, _ int) error {
			for _, a := range args {
				name, _, _ := strings.Cut(a, "=")
				if name == "" || !isNameByte(name[0], true) || strings.HasPrefix(a, "-") {
					return unsupported("export %s", a)
				}
			}
			return nil
		}, run: func(r *shRun, args []string, _ string) int {
			for _, a := range args {
				if k, v, ok := strings.Cut(a, "="); ok {
					r.vars[k] = v
				}
			}
			return 0
		}},
		"python":  {check: checkPython, run: runPython},
		"python3": {check: checkPython, run: runPython},
		"bash":    {check: checkBash},
		"sh":      {check: checkBash},
		"env": {check: func(args []string, depth int) error {
			for len(args) > 0 && strings.Contains(args[0], "=") && !strings.HasPrefix(args[0], "=") {
				args = args[1:]
			}
			if len(args) == 0 {
				return nil
			}
			if strings.HasPrefix(args[0], "-") {
				return unsupported("option %s", args[0])
			}
			return checkProg(args[0], args[1:], depth)
		}},
		"xdg-open": {check: operands("", nil, 1, 1), run: func(r *shRun, args []string, _ string) int {
			p, err := r.path(args[0])
			if err == nil {
				if _, ok := r.d.S.FS.Stat(p); !ok {
					err = vfs.ErrNotFound
				}
			}
			if err != nil {
				r.errf("xdg-open: file '%s' does not exist", args[0])
				return 2
			}
			r.d.openPath(p)
			return 0
		}},
		"test": {check: func(args []string, _ int) error { return checkTest(args) }, run: runTest},
		"[": {check: func(args []string, _ int) error {
			if len(args) == 0 || args[len(args)-1] != "]" {
				return unsupported("[ without a closing ]")
			}
			return checkTest(args[:len(args)-1])
		}, run: func(r *shRun, args []string, stdin string) int { return runTest(r, args[:len(args)-1], stdin) }},
		"tar":     {check: checkTar, run: runTar},
		"unzip":   {check: checkUnzip, run: runUnzip},
		"simdesk": {check: anyArgs, run: func(r *shRun, args []string, _ string) int { return r.d.runSimdesk(r, args) }},
	}
}

func runEcho(r *shRun, args []string, _ string) int {
	newline, escapes := true, false
	for len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' && strings.Trim(args[0][1:], "neE") == "" {
		for _, c := range args[0][1:] {
			switch c {
			case 'n':
				newline = false
			case 'e':
				escapes = true
			case 'E':
				escapes = false
			}
		}
		args = args[1:]
	}
	s := strings.Join(args, " ")
	if escapes {
		s = strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\\`, `\`, `\r`, "\r", `\a`, "\a").Replace(s)
	}
	if newline {
		s += "\n"
	}
	r.stdout.WriteString(s)
	return 0
}

func runCat(r *shRun, args []string, stdin string) int {
	_, files, _ := flagSet(args, "", nil)
	if len(files) == 0 {
		r.stdout.WriteString(stdin)
		return 0
	}
	code := 0
	for _, f := range files {
		if f == "-" {
			r.stdout.WriteString(stdin)
			continue
		}
		p, err := r.path(f)
		var s string
		if err == nil {
			s, err = r.d.S.FS.Read(p)
		}
		if err != nil {
			r.errf("cat: %s: %s", f, strerror(err))
			code = 1
			continue
		}
		r.stdout.WriteString(s)
	}
	return code
}

func runTee(r *shRun, args []string, stdin string) int {
	set, files, _ := flagSet(args, "a", map[string]byte{"--append": 'a'})
	code := 0
	for _, f := range files {
		p, err := r.path(f)
		if err == nil {
			err = r.writable(p)
		}
		if err == nil {
			old := ""
			if set['a'] {
				old, _ = r.d.S.FS.Read(p)
			}
			err = r.d.S.FS.Write(p, old+stdin)
		}
		if err != nil {
			r.errf("tee: %s: %s", f, strerror(err))
			code = 1
		}
	}
	r.stdout.WriteString(stdin)
	return code
}

func runMkdir(r *shRun, args []string, _ string) int {
	set, dirs, _ := flagSet(args, "pv", map[string]byte{"--parents": 'p', "--verbose": 'v'})
	code := 0
	for _, a := range dirs {
		p, err := r.path(a)
		if err == nil {
			err = r.writable(p)
		}
		if err == nil {
			err = r.d.S.FS.Mkdir(p, set['p'])
		}
		if err != nil {
			r.errf("mkdir: cannot create directory '%s': %s", a, strerror(err))
			code = 1
		}
	}
	return code
}

func runRmdir(r *shRun, args []string, _ string) int {
	code := 0
	for _, a := range args {
		p, err := r.path(a)
		if err == nil {
			err = r.writable(p)
		}
		if err == nil && !r.d.S.FS.IsDir(p) {
			if _, ok := r.d.S.FS.Stat(p); ok {
				err = vfs.ErrNotDir
			} else {
				err = vfs.ErrNotFound
			}
		}
		if err == nil {
			err = r.d.S.FS.Remove(p, false)
		}
		if err != nil {
			r.errf("rmdir: failed to remove '%s': %s", a, strerror(err))
			code = 1
		}
	}
	return code
}

func runRm(r *shRun, args []string, _ string) int {
	set, files, _ := flagSet(args, "rRfvd", map[string]byte{"--recursive": 'r', "--force": 'f', "--verbose": 'v', "--dir": 'd'})
	rec := set['r'] || set['R']
	if len(files) == 0 && !set['f'] {
		r.errf("rm: missing operand")
		return 1
	}
	code := 0
	for _, a := range files {
		p, err := r.path(a)
		if err == nil {
			if e, ok := r.d.S.FS.Stat(p); !ok {
				if set['f'] {
					continue // -f ignores missing files, not protected ones
				}
				err = vfs.ErrNotFound
			} else if e.Dir && !rec {
				if kids, _ := r.d.S.FS.Children(p); !set['d'] || len(kids) > 0 {
					err = vfs.ErrIsDir
				}
			}
		}
		if err == nil {
			err = r.writable(p)
		}
		if err == nil {
			err = r.d.S.FS.Remove(p, rec)
		}
		if err != nil {
			r.errf("rm: cannot remove '%s': %s", a, strerror(err))
			code = 1
		}
	}
	return code
}

func runTouch(r *shRun, args []string, _ string) int {
	code := 0
	for _, a := range args {
		p, err := r.path(a)
		if err == nil {
			if _, ok := r.d.S.FS.Stat(p); ok {
				continue // times are not modelled
			}
			err = r.writable(p)
		}
		if err == nil {
			err = r.d.S.FS.Write(p, "")
		}
		if err != nil {
			r.errf("touch: cannot touch '%s': %s", a, strerror(err))
			code = 1
		}
	}
	return code
}

// runCpMv copies or moves sources to a destination (a folder when there
// are several sources).
func runCpMv(r *shRun, prog string, args []string) int {
	short, long := "fv", map[string]byte{"--force": 'f', "--verbose": 'v'}
	if prog == "cp" {
		short, long = "rRafv", map[string]byte{"--recursive": 'r', "--archive": 'a', "--force": 'f', "--verbose": 'v'}
	}
	set, ops, _ := flagSet(args, short, long)
	rec := set['r'] || set['R'] || set['a']
	dstArg := ops[len(ops)-1]
	dst, err := r.path(dstArg)
	if err != nil {
		r.errf("%s: '%s': %v", prog, dstArg, err)
		return 1
	}
	srcs := ops[:len(ops)-1]
	if len(srcs) > 1 && !r.d.S.FS.IsDir(dst) {
		r.errf("%s: target '%s' is not a directory", prog, dstArg)
		return 1
	}
	code := 0
	for _, a := range srcs {
		src, err := r.path(a)
		if err != nil {
			r.errf("%s: '%s': %v", prog, a, err)
			code = 1
			continue
		}
		e, ok := r.d.S.FS.Stat(src)
		if !ok {
			r.errf("%s: cannot stat '%s': No such file or directory", prog, a)
			code = 1
			continue
		}
		to := dst
		if r.d.S.FS.IsDir(dst) {
			to = path.Join(dst, path.Base(src))
		}
		if prog == "cp" && e.Dir && !rec {
			r.errf("cp: -r not specified; omitting directory '%s'", a)
			code = 1
			continue
		}
		if err := r.writable(to); err != nil {
			r.errf("%s: cannot create '%s': %s", prog, to, strerror(err))
			code = 1
			continue
		}
		if prog == "mv" {
			if err := r.writable(src); err != nil {
				r.errf("mv: cannot move '%s': %s", a, strerror(err))
				code = 1
				continue
			}
		}
		// An existing file is replaced, as cp and mv do.
		if t, ok := r.d.S.FS.Stat(to); ok && !t.Dir && !e.Dir && to != src {
			_ = r.d.S.FS.Remove(to, false) // a plain file that exists removes
		}
		if prog == "mv" {
			err = r.d.S.FS.Move(src, to)
		} else {
			err = r.d.S.FS.Copy(src, to)
		}
		if err != nil {
			r.errf("%s: cannot %s '%s' to '%s': %s", prog, map[string]string{"cp": "copy", "mv": "move"}[prog], a, dstArg, strerror(err))
			code = 1
		}
	}
	return code
}

func checkChmod(args []string, _ int) error {
	_, rest, err := flagSet(args, "Rv", map[string]byte{"--recursive": 'R', "--verbose": 'v'})
	if err != nil {
		// A mode such as -x reads as an option.
		if len(args) >= 2 && validMode(args[0]) {
			rest, err = args, nil
		} else {
			return err
		}
	}
	if len(rest) < 2 {
		return unsupported("want a mode and files")
	}
	if !validMode(rest[0]) && !strings.HasPrefix(rest[0], "$") {
		return unsupported("mode %q", rest[0])
	}
	return nil
}

// validMode accepts octal modes and symbolic ones (u+x, +x, go-w, a=r).
func validMode(m string) bool {
	if m == "" {
		return false
	}
	if strings.Trim(m, "01234567") == "" {
		return len(m) <= 4
	}
	for _, clause := range strings.Split(m, ",") {
		who := strings.TrimLeft(clause, "ugoa")
		if who == "" || strings.IndexByte("+-=", who[0]) < 0 || strings.Trim(who[1:], "rwxXst") != "" {
			return false
		}
	}
	return true
}

// runChmod checks that the files exist: modes are not modelled.
func runChmod(r *shRun, args []string, _ string) int {
	rest := args
	if _, rs, err := flagSet(args, "Rv", map[string]byte{"--recursive": 'R', "--verbose": 'v'}); err == nil {
		rest = rs
	}
	code := 0
	for _, a := range rest[1:] {
		p, err := r.path(a)
		if err == nil {
			if _, ok := r.d.S.FS.Stat(p); !ok {
				err = vfs.ErrNotFound
			}
		}
		if err == nil {
			err = r.writable(p)
		}
		if err != nil {
			r.errf("chmod: cannot access '%s': %s", a, strerror(err))
			code = 1
		}
	}
	return code
}

func runLs(r *shRun, args []string, _ string) int {
	set, targets, _ := flagSet(args, "aA1R", map[string]byte{"--all": 'a', "--almost-all": 'A', "--recursive": 'R'})
	if len(targets) == 0 {
		targets = []string{"."}
	}
	hidden := set['a'] || set['A']
	code := 0
	var dirs []string
	for _, a := range targets {
		p, err := r.path(a)
		if err != nil {
			r.errf("ls: cannot access '%s': %v", a, err)
			code = 2
			continue
		}
		e, ok := r.d.S.FS.Stat(p)
		if !ok {
			r.errf("ls: cannot access '%s': No such file or directory", a)
			code = 2
			continue
		}
		if !e.Dir {
			r.stdout.WriteString(a + "\n")
			continue
		}
		dirs = append(dirs, a)
	}
	var list func(label, p string, header bool)
	list = func(label, p string, header bool) {
		kids, _ := r.d.S.FS.Children(p)
		names := make([]string, 0, len(kids))
		var sub []vfs.Entry
		for _, k := range kids {
			if strings.HasPrefix(k.Name(), ".") && !hidden {
				continue
			}
			names = append(names, k.Name())
			if k.Dir {
				sub = append(sub, k)
			}
		}
		sort.Strings(names)
		if set['a'] {
			names = append([]string{".", ".."}, names...)
		}
		if header {
			r.stdout.WriteString(label + ":\n")
		}
		for _, n := range names {
			r.stdout.WriteString(n + "\n")
		}
		if set['R'] {
			sort.Slice(sub, func(i, j int) bool { return sub[i].Name() < sub[j].Name() })
			for _, k := range sub {
				r.stdout.WriteString("\n")
				list(strings.TrimSuffix(label, "/")+"/"+k.Name(), k.Path, true)
			}
		}
	}
	for i, a := range dirs {
		p, _ := r.path(a)
		if i > 0 {
			r.stdout.WriteString("\n")
		}
		list(a, p, set['R'] || len(dirs)+len(targets)-len(dirs) > 1)
	}
	return code
}

func runCd(r *shRun, args []string, _ string) int {
	to := vfs.Home
	if len(args) == 1 {
		p, err := r.path(args[0])
		if err != nil {
			r.errf("bash: cd: %s: %v", args[0], err)
			return 1
		}
		to = p
	}
	if !r.d.S.FS.IsDir(to) {
		if _, ok := r.d.S.FS.Stat(to); ok {
			r.errf("bash: cd: %s: Not a directory", args[0])
		} else {
			r.errf("bash: cd: %s: No such file or directory", args[0])
		}
		return 1
	}
	r.cwd = to
	r.vars["PWD"] = to
	return 0
}

// checkTest accepts the test expressions the simulator evaluates: a
// string, ! EXPR, -e -f -d -s -r -w -n -z OPERAND, and = == != -eq -ne
// -lt -le -gt -ge between two operands.
func checkTest(args []string) error {
	if len(args) > 0 && args[0] == "!" {
		args = args[1:]
	}
	switch len(args) {
	case 0, 1:
		return nil
	case 2:
		if strings.Contains("-e -f -d -s -r -w -n -z", args[0]) && len(args[0]) == 2 {
			return nil
		}
		return unsupported("test %s", args[0])
	case 3:
		switch args[1] {
		case "=", "==", "!=", "-eq", "-ne", "-lt", "-le", "-gt", "-ge":
			return nil
		}
		return unsupported("test operator %s", args[1])
	}
	return unsupported("test with more than one condition (-a, -o, parentheses)")
}

func runTest(r *shRun, args []string, _ string) int {
	neg := len(args) > 0 && args[0] == "!"
	if neg {
		args = args[1:]
	}
	ok := false
	switch len(args) {
	case 1:
		ok = args[0] != ""
	case 2:
		if args[0] == "-n" || args[0] == "-z" {
			ok = (args[1] != "") == (args[0] == "-n")
			break
		}
		p, err := r.path(args[1])
		if err != nil {
			break
		}
		e, exists := r.d.S.FS.Stat(p)
		switch args[0] {
		case "-e", "-r", "-w":
			ok = exists // the user owns what the simulator holds
		case "-f":
			ok = exists && !e.Dir
		case "-d":
			ok = exists && e.Dir
		case "-s":
			ok = exists && !e.Dir && e.Content != ""
		}
	case 3:
		a, op, b := args[0], args[1], args[2]
		switch op {
		case "=", "==":
			ok = a == b
		case "!=":
			ok = a != b
		default:
			x, err1 := strconv.Atoi(a)
			y, err2 := strconv.Atoi(b)
			if err1 != nil || err2 != nil {
				r.errf("test: integer expression expected")
				return 2
			}
			ok = map[string]bool{"-eq": x == y, "-ne": x != y, "-lt": x < y, "-le": x <= y, "-gt": x > y, "-ge": x >= y}[op]
		}
	}
	if ok != neg {
		return 0
	}
	return 1
}

func checkBash(args []string, depth int) error {
	switch {
	case len(args) >= 2 && args[0] == "-c":
		if len(args) > 2 {
			return unsupported("arguments after the -c script ($0...)")
		}
		if strings.Contains(args[1], "$") && strings.HasPrefix(args[1], "$") {
			return unsupported("a -c script from a variable")
		}
		script, err := parseShell(args[1])
		if err != nil {
			if errors.Is(err, ErrUnsupported) {
				return err
			}
			return nil // a syntax error is bash's to report when it runs
		}
		return checkScript(script, depth+1)
	case len(args) == 1 && !strings.HasPrefix(args[0], "-"):
		return checkScriptFile(args[0], depth)
	}
	return unsupported("only -c SCRIPT or a script file")
}

func checkPython(args []string, _ int) error {
	if len(args) != 2 || args[0] != "-c" {
		return unsupported("only \"-c <pyautogui script>\" (a script of the simulator's pyautogui subset)")
	}
	return nil
}

// runPython runs a pyautogui script; one outside the subset, or an action
// the desktop refuses, fails with return code 1 as a Python exception
// would.
func runPython(r *shRun, args []string, _ string) int {
	res := r.d.runPyAutoGUI(args[1])
	r.stdout.WriteString(res.Output)
	if res.Error != "" {
		r.stderr.WriteString(res.Error + "\n")
	}
	return res.ReturnCode
}

// desktopLive lets pyautogui scripts run on the desktop.
type desktopLive struct{ d *Desktop }

func (l desktopLive) Do(a schemas.Action) error {
	if msg := l.d.Apply(a); msg != "" {
		return errors.New(msg)
	}
	return nil
}
func (l desktopLive) Clipboard() string        { return l.d.S.Clipboard }
func (l desktopLive) SetClipboard(text string) { l.d.S.Clipboard = text }

// runPyAutoGUI runs a pyautogui script statement by statement; mouse
// buttons and modifiers held at its end stay held for the next script.
func (d *Desktop) runPyAutoGUI(script string) CommandResult {
	mouse := image.Pt(d.S.Mouse.X, d.S.Mouse.Y)
	in := d.S.Input.toAction()
	out, err := action.RunPyAutoGUI(script, action.Screen{Width: d.S.Width, Height: d.S.Height, Mouse: &mouse}, in, desktopLive{d})
	d.S.Input = heldFrom(in)
	d.invalidate()
	if err != nil {
		return CommandResult{Output: out, Error: err.Error(), ReturnCode: 1}
	}
	return CommandResult{Output: out}
}

// runSimdesk runs the simulator's own setup verbs.
func (d *Desktop) runSimdesk(r *shRun, args []string) int {
	if len(args) == 0 {
		r.errf("simdesk: missing verb")
		return 2
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
		r.errf("simdesk: unknown verb or wrong arguments: %q", args)
		return 2
	}
	if err != nil {
		r.errf("simdesk %s: %v", args[0], err)
		return 1
	}
	return 0
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
