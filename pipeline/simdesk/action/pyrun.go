package action

import (
	"fmt"
	"image"
	"strings"

	"github.com/cualake/cualake/schemas"
)

// Live is a desktop that a pyautogui script runs on statement by statement
// (RunPyAutoGUI): actions happen in order, and values such as
// pyperclip.paste() read the state the earlier statements left.
type Live interface {
	// Do runs one action; an error stops the script, as an exception would.
	Do(a schemas.Action) error
	// Clipboard is the text clipboard (pyperclip.paste).
	Clipboard() string
	// SetClipboard replaces it (pyperclip.copy).
	SetClipboard(text string)
}

// Input is the state of the input devices that outlives one script:
// OSWorld's clients send mouseDown and mouseUp, keyDown and keyUp, in
// separate /execute calls.
type Input struct {
	// Down is where a mouse button went down (nil when none is held),
	// in pixels.
	Down *image.Point
	// Button is the button held: "left", "right" or "middle".
	Button string
	// Held lists the modifiers held by keyDown, in the order pressed.
	Held []string
}

// Platform answers of the simulated machine, as OSWorld's clients ask them
// (python -c "import platform; print(platform.system())").
const (
	PlatformSystem  = "Linux"
	PlatformMachine = "x86_64"
)

// tweens are pyautogui's easing functions (from pytweening); OSWorld's
// client passes one to every moveTo. The simulator moves at once, so they
// are accepted and ignored, as duration= is.
var tweens = map[string]bool{}

func init() {
	tweens["pyautogui.linear"] = true
	for _, kind := range []string{"Quad", "Cubic", "Quart", "Quint", "Sine", "Expo", "Circ", "Elastic", "Back", "Bounce", "Poly"} {
		for _, way := range []string{"In", "Out", "InOut"} {
			tweens["pyautogui.ease"+way+kind] = true
		}
	}
}

// actionFuncs are the calls the translator turns into actions.
var actionFuncs = map[string]bool{}

func init() {
	for _, n := range []string{"click", "leftClick", "rightClick", "middleClick", "doubleClick", "tripleClick",
		"moveTo", "moveRel", "move", "dragTo", "dragRel", "drag", "mouseDown", "mouseUp", "scroll", "vscroll", "hscroll",
		"typewrite", "write", "typeWrite", "press", "hotkey", "keyDown", "keyUp", "sleep"} {
		actionFuncs["pyautogui."+n] = true
	}
	actionFuncs["time.sleep"] = true
	actionFuncs["sleep"] = true
}

// valueFuncs are the calls that give a value.
var valueFuncs = map[string]bool{"platform.system": true, "platform.machine": true, "pyperclip.paste": true,
	"pyautogui.position": true, "pyautogui.size": true, "str": true}

// noopCalls change nothing on screen; they are accepted and skipped as
// statements.
var noopCalls = map[string]bool{"pyautogui.screenshot": true, "pyautogui.onScreen": true}

// program is a parsed and checked script.
type program struct {
	stmts []pyStmt
}

// compile parses a script and checks, before anything runs, that every
// function it calls and every name it reads is in the subset: a script the
// simulator cannot run in full changes nothing.
func compile(src string) (*program, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	stmts, err := (&pyParser{toks: toks}).statements()
	if err != nil {
		return nil, err
	}
	vars := map[string]bool{}
	var check func(e *pyExpr) error
	check = func(e *pyExpr) error {
		switch e.kind {
		case eName:
			if !vars[e.name] && !tweens[e.full] {
				return fmt.Errorf("variable %s is not supported at offset %d", e.name, e.pos)
			}
		case eCall:
			if !valueFuncs[e.name] {
				return fmt.Errorf("%s() is not supported as a value at offset %d", e.name, e.pos)
			}
		case eBinop:
			if err := check(e.l); err != nil {
				return err
			}
			return check(e.r)
		case eNeg:
			return check(e.l)
		}
		for _, a := range e.args {
			if err := check(a); err != nil {
				return err
			}
		}
		for _, k := range e.kwargs {
			if err := check(k.val); err != nil {
				return err
			}
		}
		return nil
	}
	for _, st := range stmts {
		switch st.kind {
		case sAssign:
			if err := check(st.value); err != nil {
				return nil, err
			}
			for _, n := range st.targets {
				vars[n] = true
			}
		case sName:
			if _, ok := specialNames[st.name]; !ok && !vars[st.name] {
				return nil, fmt.Errorf("%s: not a call", st.name)
			}
		case sCall:
			c := st.call
			switch {
			case actionFuncs[c.name], valueFuncs[c.name], noopCalls[c.name], c.name == "print", c.name == "pyperclip.copy":
			case strings.HasPrefix(c.name, "pyautogui."):
				return nil, fmt.Errorf("%s: unsupported pyautogui function", c.name)
			default:
				return nil, fmt.Errorf("%s: unknown function", c.name)
			}
			for _, a := range c.args {
				if err := check(a); err != nil {
					return nil, fmt.Errorf("%s: %w", c.name, err)
				}
			}
			for _, k := range c.kwargs {
				if err := check(k.val); err != nil {
					return nil, fmt.Errorf("%s: %w", c.name, err)
				}
			}
		}
	}
	return &program{stmts: stmts}, nil
}

// interp runs a program; live is nil for a pure translation.
type interp struct {
	t    *translator
	live Live
	vars map[string]pyVal
	out  strings.Builder
}

func (in *interp) eval(e *pyExpr) (pyVal, error) {
	switch e.kind {
	case eLit:
		return e.val, nil
	case eName:
		if v, ok := in.vars[e.name]; ok {
			return v, nil
		}
		if tweens[e.full] {
			return pyVal{kind: pyTween, str: e.full}, nil
		}
		return pyVal{}, fmt.Errorf("name %s is not defined at offset %d", e.name, e.pos)
	case eList:
		l := pyVal{kind: pyList, tuple: e.tuple, list: []pyVal{}}
		for _, a := range e.args {
			v, err := in.eval(a)
			if err != nil {
				return pyVal{}, err
			}
			l.list = append(l.list, v)
		}
		return l, nil
	case eNeg:
		v, err := in.eval(e.l)
		if err != nil {
			return pyVal{}, err
		}
		if v.kind != pyNum {
			return pyVal{}, fmt.Errorf("bad signed number at offset %d", e.pos)
		}
		if e.op == "-" {
			v.num = -v.num
		}
		return v, nil
	case eBinop:
		v, err := in.eval(e.l)
		if err != nil {
			return pyVal{}, err
		}
		w, err := in.eval(e.r)
		if err != nil {
			return pyVal{}, err
		}
		return binop(v, e.op, w, e.pos)
	case eCall:
		return in.callValue(e)
	}
	return pyVal{}, fmt.Errorf("unexpected expression at offset %d", e.pos)
}

func binop(v pyVal, op string, w pyVal, pos int) (pyVal, error) {
	bad := func() (pyVal, error) {
		return pyVal{}, fmt.Errorf("cannot compute %s %s %s at offset %d", v, op, w, pos)
	}
	if v.kind == pyStr && w.kind == pyStr && op == "+" {
		return pyVal{kind: pyStr, str: v.str + w.str}, nil
	}
	if v.kind != pyNum || w.kind != pyNum {
		return bad()
	}
	r := pyVal{kind: pyNum, float: v.float || w.float}
	switch op {
	case "+":
		r.num = v.num + w.num
	case "-":
		r.num = v.num - w.num
	case "*":
		r.num = v.num * w.num
	case "/":
		if w.num == 0 {
			return bad()
		}
		r.num, r.float = v.num/w.num, true
	}
	return r, nil
}

// callValue evaluates a call in value position.
func (in *interp) callValue(e *pyExpr) (pyVal, error) {
	c, err := in.evalCall(e)
	if err != nil {
		return pyVal{}, err
	}
	if len(c.args)+len(c.kwargs) > 0 && e.name != "str" {
		return pyVal{}, fmt.Errorf("%s() takes no arguments", e.name)
	}
	switch e.name {
	case "platform.system":
		return pyVal{kind: pyStr, str: PlatformSystem}, nil
	case "platform.machine":
		return pyVal{kind: pyStr, str: PlatformMachine}, nil
	case "pyperclip.paste":
		if in.live == nil {
			return pyVal{}, fmt.Errorf("pyperclip.paste() needs a live desktop's clipboard")
		}
		return pyVal{kind: pyStr, str: in.live.Clipboard()}, nil
	case "pyautogui.position":
		if in.t.pos == nil {
			return pyVal{}, fmt.Errorf("pyautogui.position(): the mouse position is unknown")
		}
		return pyVal{kind: pyList, tuple: true, list: []pyVal{{kind: pyNum, num: float64(in.t.pos.X)}, {kind: pyNum, num: float64(in.t.pos.Y)}}}, nil
	case "pyautogui.size":
		return pyVal{kind: pyList, tuple: true, list: []pyVal{{kind: pyNum, num: float64(in.t.screen.Width)}, {kind: pyNum, num: float64(in.t.screen.Height)}}}, nil
	case "str":
		if len(c.args) != 1 || len(c.kwargs) > 0 {
			return pyVal{}, fmt.Errorf("str() takes one argument")
		}
		return pyVal{kind: pyStr, str: pyStrOf(c.args[0])}, nil
	}
	return pyVal{}, fmt.Errorf("%s() is not supported as a value", e.name)
}

func (in *interp) evalCall(e *pyExpr) (pyCall, error) {
	c := pyCall{name: e.name, call: true}
	for _, a := range e.args {
		v, err := in.eval(a)
		if err != nil {
			return c, err
		}
		c.args = append(c.args, v)
	}
	for _, k := range e.kwargs {
		v, err := in.eval(k.val)
		if err != nil {
			return c, err
		}
		c.kwargs = append(c.kwargs, kwarg{name: k.name, val: v})
	}
	return c, nil
}

// exec runs one statement; the translator collects the actions it emits.
func (in *interp) exec(st pyStmt) error {
	switch st.kind {
	case sSetting:
		return nil
	case sName:
		if kind, ok := specialNames[st.name]; ok {
			in.t.emit(Simple(kind))
		}
		return nil // a variable on its own does nothing
	case sAssign:
		v, err := in.eval(st.value)
		if err != nil {
			return err
		}
		if len(st.targets) == 1 {
			in.vars[st.targets[0]] = v
			return nil
		}
		if v.kind != pyList || len(v.list) != len(st.targets) {
			return fmt.Errorf("cannot unpack %s into %d names", v, len(st.targets))
		}
		for i, n := range st.targets {
			in.vars[n] = v.list[i]
		}
		return nil
	}
	c, err := in.evalCall(st.call)
	if err != nil {
		return fmt.Errorf("%s: %w", st.call.name, err)
	}
	switch {
	case c.name == "print":
		sep, end := " ", "\n"
		for _, k := range c.kwargs {
			switch {
			case k.name == "sep" && k.val.kind == pyStr:
				sep = k.val.str
			case k.name == "end" && k.val.kind == pyStr:
				end = k.val.str
			case (k.name == "sep" || k.name == "end") && k.val.kind == pyNone:
			case k.name == "flush":
			default:
				return fmt.Errorf("print: keyword %s=%s is not supported", k.name, k.val)
			}
		}
		parts := make([]string, len(c.args))
		for i, a := range c.args {
			parts[i] = pyStrOf(a)
		}
		in.out.WriteString(strings.Join(parts, sep) + end)
		return nil
	case c.name == "pyperclip.copy":
		if len(c.args) != 1 || len(c.kwargs) > 0 {
			return fmt.Errorf("pyperclip.copy: takes one argument")
		}
		if in.live == nil {
			return fmt.Errorf("pyperclip.copy: needs a live desktop's clipboard")
		}
		v := c.args[0]
		switch v.kind {
		case pyStr, pyNum, pyBool:
		default:
			return fmt.Errorf("pyperclip.copy: only str, int, float and bool can be copied, not %s", v)
		}
		in.live.SetClipboard(pyStrOf(v))
		return nil
	case valueFuncs[c.name]:
		_, err := in.callValue(st.call)
		return err
	case noopCalls[c.name]:
		return nil
	}
	if err := in.t.call(c); err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	return nil
}

// RunPyAutoGUI runs a pyautogui script on a live desktop, statement by
// statement, and returns what it printed. Before anything runs the whole
// script is parsed and checked against the subset (see ParsePyAutoGUI, plus
// print, simple assignments "x = ..." and "x, y = ...", pyperclip.copy and
// paste on the desktop's clipboard, platform.system() and machine(),
// pyautogui.position() and size(), str()), so that a script outside it is
// an error that changed nothing. Tweens and durations are accepted and
// ignored. in carries the mouse buttons and modifiers held between
// scripts and is updated as the script runs; the first action the desktop
// refuses stops the script with its error.
func RunPyAutoGUI(src string, screen Screen, in *Input, live Live) (string, error) {
	if screen.Width <= 0 || screen.Height <= 0 {
		return "", fmt.Errorf("pyautogui: screen size %dx%d", screen.Width, screen.Height)
	}
	if in == nil {
		in = &Input{}
	}
	prog, err := compile(src)
	if err != nil {
		return "", fmt.Errorf("pyautogui: %w", err)
	}
	t := newTranslator(screen, false)
	t.down, t.button, t.held = in.Down, in.Button, append([]string(nil), in.Held...)
	it := &interp{t: t, live: live, vars: map[string]pyVal{}}
	save := func() {
		in.Down, in.Button, in.Held = t.down, t.button, append([]string(nil), t.held...)
		if len(in.Held) == 0 {
			in.Held = nil
		}
	}
	for _, st := range prog.stmts {
		err := it.exec(st)
		acts := t.out
		t.out = nil
		for _, a := range acts {
			if derr := live.Do(a); derr != nil {
				save()
				return it.out.String(), fmt.Errorf("pyautogui: %w", derr)
			}
		}
		save()
		if err != nil {
			return it.out.String(), fmt.Errorf("pyautogui: %w", err)
		}
	}
	return it.out.String(), nil
}

// CheckPyAutoGUI checks statically that a script is inside the subset
// RunPyAutoGUI runs: it parses, and every function and name it uses is
// known. Values are not computed.
func CheckPyAutoGUI(src string) error {
	if _, err := compile(src); err != nil {
		return fmt.Errorf("pyautogui: %w", err)
	}
	return nil
}

func newTranslator(screen Screen, steps bool) *translator {
	t := &translator{screen: screen, steps: steps}
	if screen.Mouse != nil {
		m := *screen.Mouse
		t.pos = &m
	}
	return t
}
