package action

import (
	"errors"
	"image"
	"reflect"
	"strings"
	"testing"

	"github.com/cualake/cualake/schemas"
)

// fakeLive records the actions a script runs and holds a clipboard.
type fakeLive struct {
	acts   []schemas.Action
	clip   string
	refuse string // an action kind Do refuses
}

func (f *fakeLive) Do(a schemas.Action) error {
	if a.Kind == f.refuse {
		return errors.New("refused " + a.Kind)
	}
	f.acts = append(f.acts, a)
	if a.Kind == Hotkey && reflect.DeepEqual(a.Keys, []string{"ctrl", "c"}) {
		f.clip = "copied by ctrl+c"
	}
	return nil
}
func (f *fakeLive) Clipboard() string        { return f.clip }
func (f *fakeLive) SetClipboard(text string) { f.clip = text }

var screen1280 = Screen{Width: 1280, Height: 800, Mouse: &image.Point{X: 10, Y: 10}}

// TestTweensAndDurations: OSWorld's execute_action sends MOVE_TO as
// moveTo(x, y, duration, <random tween>).
func TestTweensAndDurations(t *testing.T) {
	for _, src := range []string{
		"pyautogui.moveTo(640, 400, 0.7316, pyautogui.easeInQuad)",
		"pyautogui.moveTo(640, 400, 0.5, pyautogui.easeInOutQuad)",
		"pyautogui.moveTo(640, 400, 0.9, pyautogui.easeInBounce)",
		"pyautogui.moveTo(640, 400, 0.9, pyautogui.easeInElastic)",
		"pyautogui.moveTo(640, 400, duration=0.5, tween=pyautogui.easeOutQuad)",
		"import pyautogui as pg; pg.moveTo(640, 400, 1, pg.linear)",
		"pyautogui.dragTo(640, 400, duration=1.0, button='left', mouseDownUp=True)",
	} {
		acts, err := ParsePyAutoGUI(src, screen1280)
		if err == nil && len(acts) == 1 && acts[0].Kind == Drag {
			acts[0].X, acts[0].Y = acts[0].X2, acts[0].Y2
		}
		if err != nil || len(acts) != 1 || *acts[0].X != 500 || *acts[0].Y != 500 {
			t.Errorf("%s: %s %v", src, show(acts), err)
		}
	}
	if _, err := ParsePyAutoGUI("pyautogui.moveTo(1, 2, 0.5, pyautogui.easeSideways)", screen1280); err == nil {
		t.Error("an unknown tween was accepted")
	}
	if _, err := ParsePyAutoGUI("pyautogui.moveTo(pyautogui.linear, 2)", screen1280); err == nil {
		t.Error("a tween as a coordinate was accepted")
	}
}

func TestRunPrintsAndPlatform(t *testing.T) {
	live := &fakeLive{}
	for src, want := range map[string]string{
		"import platform; print(platform.system())":                           "Linux\n",
		"import platform; print(platform.machine())":                          "x86_64\n",
		"import pyautogui; import time; pyautogui.FAILSAFE = False; print(1)": "1\n",
		"x = 1; y = x + 2; print(x, y, y / 2, 'a' + 'b', None, True)":         "1 3 1.5 ab None True\n",
		"print([1, 'a'], (2,), sep='|', end='')":                              "[1, 'a']|(2,)",
		"w, h = pyautogui.size(); print(w, h)":                                "1280 800\n",
		"print(str(2.0) + '!')":                                               "2.0!\n",
	} {
		out, err := RunPyAutoGUI(src, screen1280, &Input{}, live)
		if err != nil || out != want {
			t.Errorf("%s: %q %v, want %q", src, out, err, want)
		}
	}
}

func TestRunClipboard(t *testing.T) {
	live := &fakeLive{}
	out, err := RunPyAutoGUI("import pyperclip; pyperclip.copy('héllo'); pyautogui.hotkey('ctrl', 'v'); print(pyperclip.paste())", screen1280, nil, live)
	if err != nil || out != "héllo\n" || live.clip != "héllo" || len(live.acts) != 1 {
		t.Fatalf("%q %v %q %s", out, err, live.clip, show(live.acts))
	}
	// paste reads the clipboard as the statements before it left it.
	out, err = RunPyAutoGUI("pyautogui.hotkey('ctrl', 'c'); x = pyperclip.paste(); print(x)", screen1280, nil, live)
	if err != nil || out != "copied by ctrl+c\n" {
		t.Fatalf("paste after ctrl+c: %q %v", out, err)
	}
	// Without a live desktop there is no clipboard: an error, not a no-op.
	if _, err := ParsePyAutoGUI("pyperclip.copy('x')", screen1280); err == nil {
		t.Fatal("pyperclip.copy translated without a desktop")
	}
}

// TestRunButtonsPersist: MOUSE_DOWN, MOVE_TO and MOUSE_UP arrive as three
// /execute calls.
func TestRunButtonsPersist(t *testing.T) {
	live := &fakeLive{}
	in := &Input{}
	for _, src := range []string{"pyautogui.moveTo(128, 80)", "pyautogui.mouseDown(button='left')", "pyautogui.moveTo(640, 400, 0.6, pyautogui.easeOutQuad)", "pyautogui.mouseUp(button='left')"} {
		scr := screen1280
		if n := len(live.acts); n > 0 {
			p := image.Pt(ToPixel(int(*live.acts[n-1].X), 1280), ToPixel(int(*live.acts[n-1].Y), 800))
			scr.Mouse = &p
		}
		if _, err := RunPyAutoGUI(PyPrefixForTest+src, scr, in, live); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
	}
	last := live.acts[len(live.acts)-1]
	if last.Kind != Drag || *last.X != 100 || *last.X2 != 500 || in.Down != nil {
		t.Fatalf("want a drag from (100,100) to (500,500), got %s, down %v", show(live.acts), in.Down)
	}
	// Right button down and up in place is a right click.
	live.acts = nil
	RunPyAutoGUI("pyautogui.mouseDown(button='right')", screen1280, in, live)
	if in.Button != "right" || in.Down == nil {
		t.Fatalf("right button not held: %+v", in)
	}
	if _, err := RunPyAutoGUI("pyautogui.mouseUp(button='right')", screen1280, in, live); err != nil || len(live.acts) != 1 || live.acts[0].Kind != RightClick {
		t.Fatalf("right up: %s %v", show(live.acts), err)
	}
	if _, err := RunPyAutoGUI("pyautogui.mouseUp()", screen1280, in, live); err == nil {
		t.Fatal("mouseUp without mouseDown accepted")
	}
	// Modifiers held by keyDown in one call apply to presses in the next.
	live.acts = nil
	for _, src := range []string{"pyautogui.keyDown('ctrl')", "pyautogui.press('c')", "pyautogui.keyUp('ctrl')", "pyautogui.press('c')"} {
		if _, err := RunPyAutoGUI(src, screen1280, in, live); err != nil {
			t.Fatal(err)
		}
	}
	if len(live.acts) != 2 || live.acts[0].Kind != Hotkey || live.acts[1].Kind != Key || in.Held != nil {
		t.Fatalf("held modifiers: %s %+v", show(live.acts), in)
	}
}

// PyPrefixForTest is what OSWorld's PythonController puts before commands.
const PyPrefixForTest = "import pyautogui; import time; pyautogui.FAILSAFE = False; "

// TestRunRefusesOutsideSubset: a script the simulator cannot run in full
// runs nothing.
func TestRunRefusesOutsideSubset(t *testing.T) {
	for _, src := range []string{
		"pyautogui.click(1, 2); os.system('ls')",
		"pyautogui.click(1, 2); pyautogui.locateCenterOnScreen('a.png')",
		"pyautogui.click(1, 2); print(undefined_name)",
		"pyautogui.click(1, 2); x = subprocess.run('ls')",
		"pyautogui.click(1, 2); import os; print(os.getcwd())",
		"pyautogui.click(1, 2)\nfor i in range(3): pass",
	} {
		live := &fakeLive{}
		if _, err := RunPyAutoGUI(src, screen1280, nil, live); err == nil || len(live.acts) != 0 {
			t.Errorf("%s: err %v, ran %s", src, err, show(live.acts))
		}
	}
	// A refused action stops the script there.
	live := &fakeLive{refuse: Key}
	out, err := RunPyAutoGUI("print('a'); pyautogui.press('x'); print('b')", screen1280, nil, live)
	if err == nil || !strings.Contains(err.Error(), "refused key") || out != "a\n" {
		t.Fatalf("refusal: %q %v", out, err)
	}
}
