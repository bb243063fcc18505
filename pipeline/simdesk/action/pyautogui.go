package action

import (
	"fmt"
	"image"
	"math"
	"strings"

	"github.com/cualake/cualake/schemas"
)

// Screen tells the pyautogui translation how large the screen is (pixel
// coordinates map to the grid through it) and, when known, where the mouse
// is, for calls such as pyautogui.click() without coordinates.
type Screen struct {
	Width, Height int
	Mouse         *image.Point
}

// Special answers of OSWorld agents that are not pyautogui calls.
var specialNames = map[string]string{"DONE": Done, "FAIL": Fail, "WAIT": Wait}

// ParsePyAutoGUI translates a pyautogui script (statements separated by
// newlines or ";", as sent to OSWorld's /execute through "python -c") into
// typed actions, one per event the simulator executes: a sleep is a wait, a
// move inside a mouseDown ... mouseUp drag is a move before the drag, and
// key names are kept as written. Pixel coordinates map to the grid. Imports
// (which may rename pyautogui, "import pyautogui as pg", or import its
// functions, "from pyautogui import click") and pyautogui.X = ... settings
// are read and skipped; DONE, FAIL and WAIT are the special answers.
// Anything else is an error naming the offending call.
func ParsePyAutoGUI(src string, screen Screen) ([]schemas.Action, error) {
	return parsePyAutoGUI(src, screen, false)
}

// ParsePyAutoGUISteps translates a pyautogui script as an agent logged it
// into the actions a trajectory records for it: those of ParsePyAutoGUI
// folded into the fewest that leave the desktop in the same state. Moves
// made with the button down are part of the drag, a move followed by an
// action that starts by moving the mouse is dropped, and one followed by an
// action at the mouse position (a scroll, a click or a drag without
// coordinates) gives it its coordinates; sleeps beside other actions only
// pace the script and are dropped (a script of sleeps is one wait);
// consecutive presses of one key are one key action with a count, and
// consecutive typed texts one text. Key names are canonical (NormalizeKey;
// names it does not know are lower-cased). A script without actions (only
// imports or comments) gives none.
func ParsePyAutoGUISteps(src string, screen Screen) ([]schemas.Action, error) {
	acts, err := parsePyAutoGUI(src, screen, true)
	if err != nil {
		return nil, err
	}
	return fold(acts), nil
}

func parsePyAutoGUI(src string, screen Screen, steps bool) ([]schemas.Action, error) {
	if screen.Width <= 0 || screen.Height <= 0 {
		return nil, fmt.Errorf("pyautogui: screen size %dx%d", screen.Width, screen.Height)
	}
	prog, err := compile(src)
	if err != nil {
		return nil, fmt.Errorf("pyautogui: %w", err)
	}
	t := newTranslator(screen, steps)
	in := &interp{t: t, vars: map[string]pyVal{}}
	for _, st := range prog.stmts {
		if err := in.exec(st); err != nil {
			return nil, fmt.Errorf("pyautogui: %w", err)
		}
	}
	t.flush() // the script ends with the button down: the moves held back still moved the mouse
	return t.out, nil
}

type translator struct {
	screen Screen
	steps  bool         // ParsePyAutoGUISteps: moves with the button down belong to the drag
	pos    *image.Point // the mouse, in pixels, when known
	down   *image.Point // where a button went down (mouseDown)
	button string       // which: left, right or middle
	held   []string     // modifiers held by keyDown
	out    []schemas.Action
	// pending is where the last move made with the button down went, held
	// back in steps mode: mouseUp makes the drag that covers it, anything
	// else emits it first.
	pending *image.Point
}

// emit adds an action, after any move held back.
func (t *translator) emit(a schemas.Action) {
	t.flush()
	t.out = append(t.out, a)
}

func (t *translator) flush() {
	if t.pending != nil {
		x, y := t.grid(*t.pending)
		t.out = append(t.out, At(Move, x, y))
		t.pending = nil
	}
}

func (t *translator) grid(p image.Point) (int, int) {
	return ToGrid(p.X, t.screen.Width), ToGrid(p.Y, t.screen.Height)
}

func toInt(v pyVal) (int, error) {
	if v.kind != pyNum || math.IsNaN(v.num) || math.Abs(v.num) > 1e7 {
		return 0, fmt.Errorf("want a number, got %s", v)
	}
	return int(math.Round(v.num)), nil
}

// point reads x and y (positional i, i+1, a tuple at i, or keywords x=, y=).
func (t *translator) point(c pyCall, i int) (*image.Point, error) {
	xv, okx := c.arg(i, "x")
	if okx && xv.kind == pyList {
		if len(xv.list) != 2 {
			return nil, fmt.Errorf("want an (x, y) pair, got %s", xv)
		}
		x, err := toInt(xv.list[0])
		if err != nil {
			return nil, err
		}
		y, err := toInt(xv.list[1])
		if err != nil {
			return nil, err
		}
		return &image.Point{X: x, Y: y}, nil
	}
	yv, oky := c.arg(i+1, "y")
	if okx && xv.kind == pyStr {
		return nil, fmt.Errorf("locating images (%s) is not supported", xv)
	}
	if !okx || !oky || xv.kind == pyNone || yv.kind == pyNone {
		return nil, nil
	}
	x, err := toInt(xv)
	if err != nil {
		return nil, err
	}
	y, err := toInt(yv)
	if err != nil {
		return nil, err
	}
	return &image.Point{X: x, Y: y}, nil
}

// at returns a pointer action at p, or at the known mouse position, or
// without coordinates (which the environment rejects as invalid).
func (t *translator) at(kind string, p *image.Point) schemas.Action {
	if p == nil {
		p = t.pos
	}
	if p == nil {
		return schemas.Action{Kind: kind}
	}
	t.pos = &image.Point{X: p.X, Y: p.Y}
	x, y := t.grid(*p)
	return At(kind, x, y)
}

func keyList(v pyVal) ([]string, error) {
	switch v.kind {
	case pyStr:
		return []string{v.str}, nil
	case pyList:
		var out []string
		for _, e := range v.list {
			if e.kind != pyStr {
				return nil, fmt.Errorf("want key names, got %s", e)
			}
			out = append(out, e.str)
		}
		return out, nil
	}
	return nil, fmt.Errorf("want a key name or a list of them, got %s", v)
}

// press emits one key press, as a hotkey when modifiers are held.
func (t *translator) press(k string, n int) {
	if len(t.held) > 0 {
		keys := append(append([]string(nil), t.held...), k)
		for range max(n, 1) {
			t.emit(HotkeyAction(keys...))
		}
		return
	}
	t.emit(KeyAction(k, n))
}

// mouseButton reads button= of mouseDown and mouseUp (positional third).
func mouseButton(c pyCall) (string, error) {
	v, ok := c.arg(2, "button")
	if !ok || v.kind == pyNone {
		return "left", nil
	}
	if v.kind == pyStr {
		switch b := strings.ToLower(v.str); b {
		case "left", "primary":
			return "left", nil
		case "right", "secondary":
			return "right", nil
		case "middle":
			return "middle", nil
		}
	}
	return "", fmt.Errorf("unknown button %s", v)
}

func (t *translator) call(c pyCall) error {
	name := strings.TrimPrefix(c.name, "pyautogui.")
	switch c.name {
	case "time.sleep", "sleep", "pyautogui.sleep":
		t.emit(Simple(Wait))
		return nil
	}
	if name == c.name {
		return fmt.Errorf("unknown function")
	}
	switch name {
	case "click", "leftClick", "rightClick", "middleClick", "doubleClick", "tripleClick":
		p, err := t.point(c, 0)
		if err != nil {
			return err
		}
		button := map[string]string{"rightClick": "right", "middleClick": "middle"}[name]
		clicks := map[string]int{"doubleClick": 2, "tripleClick": 3}[name]
		if name == "click" || name == "leftClick" {
			// click(x, y, clicks, interval, button, ...); a string third
			// argument is taken as the button, as agents write
			// click(x, y, 'right').
			clicks = 1
			cv, hasClicks := c.kw("clicks")
			bv, hasButton := c.kw("button")
			if len(c.args) > 2 {
				if a := c.args[2]; a.kind == pyStr {
					bv, hasButton = a, true
				} else if name == "click" {
					cv, hasClicks = a, true
				}
			}
			if name == "click" && len(c.args) > 4 {
				bv, hasButton = c.args[4], true
			}
			if hasClicks {
				if clicks, err = toInt(cv); err != nil || clicks < 0 || clicks > 3 {
					return fmt.Errorf("clicks=%s: want 0 to 3", cv)
				}
			}
			if hasButton && bv.kind == pyStr {
				button = strings.ToLower(bv.str)
			}
		}
		if clicks == 0 {
			clicks = 1
		}
		var kind string
		switch button {
		case "", "left", "primary":
			kind = [...]string{Click, Click, DoubleClick, TripleClick}[clicks]
			clicks = 1
		case "right", "secondary":
			kind = RightClick
		case "middle":
			kind = MiddleClick
		default:
			return fmt.Errorf("unknown button %q", button)
		}
		for range clicks {
			t.emit(t.at(kind, p))
		}
	case "moveTo", "moveRel", "move":
		p, err := t.point(c, 0)
		if err != nil {
			return err
		}
		if p == nil && name == "moveTo" && len(c.args)+len(c.kwargs) == 0 && t.pos != nil {
			p = t.pos // moveTo() stays where the mouse is
		}
		if p == nil {
			return fmt.Errorf("needs coordinates")
		}
		if name != "moveTo" {
			if t.pos == nil {
				return fmt.Errorf("relative move with an unknown mouse position")
			}
			p = &image.Point{X: t.pos.X + p.X, Y: t.pos.Y + p.Y}
		}
		if t.steps && t.down != nil {
			t.pos, t.pending = p, p // part of the drag mouseUp ends
			return nil
		}
		t.emit(t.at(Move, p))
	case "dragTo", "dragRel", "drag":
		p, err := t.point(c, 0)
		if err != nil {
			return err
		}
		if p == nil {
			return fmt.Errorf("needs coordinates")
		}
		if name != "dragTo" {
			if t.pos == nil {
				return fmt.Errorf("relative drag with an unknown mouse position")
			}
			p = &image.Point{X: t.pos.X + p.X, Y: t.pos.Y + p.Y}
		}
		x2, y2 := t.grid(*p)
		a := schemas.Action{Kind: Drag, X2: i32(x2), Y2: i32(y2)}
		if t.pos != nil {
			x, y := t.grid(*t.pos)
			a.X, a.Y = i32(x), i32(y)
		}
		t.pos = p
		t.emit(a)
	case "mouseDown":
		p, err := t.point(c, 0)
		if err != nil {
			return err
		}
		button, err := mouseButton(c)
		if err != nil {
			return err
		}
		if p != nil {
			t.pos = p
		}
		if t.pos == nil {
			return fmt.Errorf("mouse position unknown")
		}
		if t.down != nil && t.button != button {
			return fmt.Errorf("the %s button is already down", t.button)
		}
		d := *t.pos
		t.down, t.button = &d, button
	case "mouseUp":
		p, err := t.point(c, 0)
		if err != nil {
			return err
		}
		button, err := mouseButton(c)
		if err != nil {
			return err
		}
		if p != nil {
			t.pos = p
		}
		if t.down == nil || t.pos == nil {
			return fmt.Errorf("mouseUp without mouseDown")
		}
		if button != t.button {
			return fmt.Errorf("mouseUp of the %s button while the %s button is down", button, t.button)
		}
		t.pending = nil // the drag or click ends where it went
		switch {
		case *t.down == *t.pos:
			kind := map[string]string{"left": Click, "right": RightClick, "middle": MiddleClick}[button]
			t.emit(t.at(kind, t.pos))
		case button != "left":
			return fmt.Errorf("dragging with the %s button is not supported", button)
		default:
			x, y := t.grid(*t.down)
			x2, y2 := t.grid(*t.pos)
			t.emit(DragAction(x, y, x2, y2))
		}
		t.down, t.button = nil, ""
	case "scroll", "vscroll", "hscroll":
		v, ok := c.arg(0, "clicks")
		if !ok {
			return fmt.Errorf("needs a number of clicks")
		}
		n, err := toInt(v)
		if err != nil {
			return err
		}
		if n == 0 {
			t.emit(Simple(Wait))
			return nil
		}
		dir := map[bool]string{true: "up", false: "down"}[n > 0]
		if name == "hscroll" {
			dir = map[bool]string{true: "right", false: "left"}[n > 0]
		}
		n = min(int(math.Abs(float64(n))), MaxRepeat)
		p, err := t.point(c, 1)
		if err != nil {
			return err
		}
		if p == nil {
			t.emit(ScrollAction(dir, n))
			return nil
		}
		t.pos = p
		x, y := t.grid(*p)
		t.emit(ScrollAt(dir, n, x, y))
	case "typewrite", "write", "typeWrite":
		v, ok := c.arg(0, "message")
		if !ok {
			return fmt.Errorf("needs a message")
		}
		switch {
		case v.kind == pyStr && len(t.held) == 0:
			if v.str != "" {
				t.emit(TypeAction(v.str))
			}
		default:
			keys, err := keyList(v)
			if err != nil {
				return err
			}
			if v.kind == pyStr {
				keys = strings.Split(v.str, "")
			}
			for _, k := range keys {
				t.press(k, 1)
			}
		}
	case "press":
		v, ok := c.arg(0, "keys")
		if !ok {
			return fmt.Errorf("needs keys")
		}
		keys, err := keyList(v)
		if err != nil {
			return err
		}
		n := 1
		if pv, ok := c.arg(1, "presses"); ok {
			if n, err = toInt(pv); err != nil || n < 1 || n > MaxRepeat {
				return fmt.Errorf("presses=%s: want 1 to %d", pv, MaxRepeat)
			}
		}
		for _, k := range keys {
			t.press(k, n)
		}
	case "hotkey":
		var keys []string
		for _, a := range c.args {
			ks, err := keyList(a)
			if err != nil {
				return err
			}
			keys = append(keys, ks...)
		}
		if len(keys) == 0 {
			return fmt.Errorf("needs keys")
		}
		t.emit(HotkeyAction(append(append([]string(nil), t.held...), keys...)...))
	case "keyDown", "keyUp":
		v, ok := c.arg(0, "key")
		if !ok || v.kind != pyStr {
			return fmt.Errorf("needs a key name")
		}
		k, err := NormalizeKey(v.str)
		if err != nil {
			return err
		}
		if name == "keyUp" {
			for i, h := range t.held {
				if h == k {
					t.held = append(t.held[:i], t.held[i+1:]...)
					break
				}
			}
			return nil
		}
		if Modifier(k) {
			t.held = append(t.held, k)
			return nil
		}
		t.press(v.str, 1)
	default:
		return fmt.Errorf("unsupported pyautogui function")
	}
	return nil
}

// FormatPyAutoGUI writes an action as a pyautogui statement for a screen of
// w x h pixels (grid coordinates map to pixels exactly as the simulator maps
// them). done, fail and wait become DONE, FAIL and WAIT.
func FormatPyAutoGUI(a schemas.Action, w, h int) (string, error) {
	if err := Validate(a); err != nil {
		return "", err
	}
	px := func(x, y *int32) string {
		return fmt.Sprintf("%d, %d", ToPixel(int(*x), w), ToPixel(int(*y), h))
	}
	switch a.Kind {
	case Click:
		return "pyautogui.click(" + px(a.X, a.Y) + ")", nil
	case RightClick:
		return "pyautogui.rightClick(" + px(a.X, a.Y) + ")", nil
	case MiddleClick:
		return "pyautogui.middleClick(" + px(a.X, a.Y) + ")", nil
	case DoubleClick:
		return "pyautogui.doubleClick(" + px(a.X, a.Y) + ")", nil
	case TripleClick:
		return "pyautogui.tripleClick(" + px(a.X, a.Y) + ")", nil
	case Move:
		return "pyautogui.moveTo(" + px(a.X, a.Y) + ")", nil
	case Drag:
		drag := "pyautogui.dragTo(" + px(a.X2, a.Y2) + ", duration=0.5, button='left')"
		if a.X == nil {
			return drag, nil
		}
		return "pyautogui.moveTo(" + px(a.X, a.Y) + "); " + drag, nil
	case Key:
		if a.Amount > 1 {
			return fmt.Sprintf("pyautogui.press(%s, presses=%d)", PyQuote(a.Keys[0]), a.Amount), nil
		}
		return "pyautogui.press(" + PyQuote(a.Keys[0]) + ")", nil
	case Hotkey:
		q := make([]string, len(a.Keys))
		for i, k := range a.Keys {
			q[i] = PyQuote(k)
		}
		return "pyautogui.hotkey(" + strings.Join(q, ", ") + ")", nil
	case Type:
		return "pyautogui.typewrite(" + PyQuote(a.Text) + ")", nil
	case Scroll:
		fn, n := "scroll", int(a.Amount)
		switch a.Direction {
		case "down":
			n = -n
		case "left":
			fn, n = "hscroll", -n
		case "right":
			fn = "hscroll"
		}
		if a.X != nil {
			return fmt.Sprintf("pyautogui.%s(%d, x=%d, y=%d)", fn, n, ToPixel(int(*a.X), w), ToPixel(int(*a.Y), h)), nil
		}
		return fmt.Sprintf("pyautogui.%s(%d)", fn, n), nil
	case Wait:
		return "WAIT", nil
	case Done:
		return "DONE", nil
	}
	return "FAIL", nil
}

// PyQuote writes s as a single-quoted Python string literal.
func PyQuote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch {
		case r == '\\' || r == '\'':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x` + fmt.Sprintf("%02x", r))
		case r > 0xffff:
			b.WriteString(fmt.Sprintf(`\U%08x`, r))
		case r > 0x7e:
			b.WriteString(fmt.Sprintf(`\u%04x`, r))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}
