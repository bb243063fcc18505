package action

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/cualake/cualake/schemas"
)

func show(as []schemas.Action) string {
	b, _ := json.Marshal(as)
	return string(b)
}

var hd = Screen{Width: 1920, Height: 1080}

// TestParsePyAutoGUISteps holds the cases of the importer's former parser
// (pipeline/importer/pyautogui), which this function replaced: each gives
// the same action it gave there.
func TestParsePyAutoGUISteps(t *testing.T) {
	g := func(v int32) *int32 { return &v }
	cases := []struct {
		src  string
		want []schemas.Action
	}{
		{"DONE", []schemas.Action{{Kind: Done}}},
		{"  FAIL\n", []schemas.Action{{Kind: Fail}}},
		{"import pyautogui\nimport time\npyautogui.click(960, 540)\ntime.sleep(0.5)\n", []schemas.Action{{Kind: Click, X: g(500), Y: g(500)}}},
		{"pyautogui.click(x=100.4, y=1079, button='right')", []schemas.Action{{Kind: RightClick, X: g(53), Y: g(1000)}}},
		{"pyautogui.click(1919, 0, clicks=2)", []schemas.Action{{Kind: DoubleClick, X: g(1000), Y: g(0)}}},
		{"pyautogui.typewrite('hello\\nworld', interval=0.05)", []schemas.Action{{Kind: Type, Text: "hello\nworld"}}},
		{`pyautogui.write("""it's""")`, []schemas.Action{{Kind: Type, Text: "it's"}}},
		{"pyautogui.press('Enter', presses=3)", []schemas.Action{{Kind: Key, Keys: []string{"enter"}, Amount: 3}}},
		{"pyautogui.hotkey('ctrl', 'shift', 'T')", []schemas.Action{{Kind: Hotkey, Keys: []string{"ctrl", "shift", "T"}}}},
		{"pyautogui.keyDown('ctrl'); pyautogui.press('c'); pyautogui.keyUp('ctrl')", []schemas.Action{{Kind: Hotkey, Keys: []string{"ctrl", "c"}}}},
		{"pyautogui.scroll(-5, x=960, y=540)", []schemas.Action{{Kind: Scroll, X: g(500), Y: g(500), Direction: "down", Amount: 5}}},
		{"pyautogui.moveTo(0, 0)\npyautogui.dragTo(1920, 1080, duration=1)", []schemas.Action{{Kind: Drag, X: g(0), Y: g(0), X2: g(1000), Y2: g(1000)}}},
		{"pyautogui.moveTo(96, 54); pyautogui.mouseDown(); pyautogui.moveTo(192, 108); pyautogui.mouseUp()", []schemas.Action{{Kind: Drag, X: g(50), Y: g(50), X2: g(100), Y2: g(100)}}},
		{"time.sleep(3)", []schemas.Action{{Kind: Wait}}},
		{"time.sleep(1); time.sleep(2)", []schemas.Action{{Kind: Wait}}},

		// Several actions in one script, in order.
		{"pyautogui.click(960, 540)\ntime.sleep(0.5)\npyautogui.typewrite('x')\npyautogui.press('enter')",
			[]schemas.Action{{Kind: Click, X: g(500), Y: g(500)}, {Kind: Type, Text: "x"}, {Kind: Key, Keys: []string{"enter"}}}},
		{"pyautogui.hotkey('ctrl', 'a'); pyautogui.press('delete'); DONE",
			[]schemas.Action{{Kind: Hotkey, Keys: []string{"ctrl", "a"}}, {Kind: Key, Keys: []string{"delete"}}, {Kind: Done}}},
		// Folding: a move into a click, a scroll at the mouse, repeated
		// presses of one key, consecutive texts; canonical key names.
		{"pyautogui.moveTo(960, 540); pyautogui.click()", []schemas.Action{{Kind: Click, X: g(500), Y: g(500)}}},
		{"pyautogui.moveTo(960, 540); pyautogui.scroll(-3)", []schemas.Action{{Kind: Scroll, X: g(500), Y: g(500), Direction: "down", Amount: 3}}},
		{"pyautogui.moveTo(0, 0); pyautogui.moveTo(960, 540)", []schemas.Action{{Kind: Move, X: g(500), Y: g(500)}}},
		{"pyautogui.moveTo(0, 0); pyautogui.click(960, 540)", []schemas.Action{{Kind: Click, X: g(500), Y: g(500)}}},
		{"pyautogui.moveTo(960, 540); pyautogui.press('a')", []schemas.Action{{Kind: Move, X: g(500), Y: g(500)}, {Kind: Key, Keys: []string{"a"}}}},
		{"pyautogui.press('down'); pyautogui.press('down'); pyautogui.press(['down', 'down'])", []schemas.Action{{Kind: Key, Keys: []string{"down"}, Amount: 4}}},
		{"pyautogui.typewrite(['a', 'A'])", []schemas.Action{{Kind: Key, Keys: []string{"a"}}, {Kind: Key, Keys: []string{"A"}}}},
		{"pyautogui.write('a'); pyautogui.write('b')", []schemas.Action{{Kind: Type, Text: "ab"}}},
		{"pyautogui.hotkey('Control', 'Return'); pyautogui.press('ESC'); pyautogui.press('F13')",
			[]schemas.Action{{Kind: Hotkey, Keys: []string{"ctrl", "enter"}}, {Kind: Key, Keys: []string{"escape"}}, {Kind: Key, Keys: []string{"f13"}}}},
		{"pyautogui.mouseDown(96, 54); pyautogui.mouseUp()", []schemas.Action{{Kind: Click, X: g(50), Y: g(50)}}},
		{"pyautogui.moveTo(96, 54); pyautogui.mouseDown(); pyautogui.moveTo(192, 108)", []schemas.Action{{Kind: Move, X: g(100), Y: g(100)}}},
		{"pyautogui.click(96, 54, button='right', clicks=2)", []schemas.Action{{Kind: RightClick, X: g(50), Y: g(50)}, {Kind: RightClick, X: g(50), Y: g(50)}}},
		// Nothing happens: no action, no error.
		{"", nil},
		{"import pyautogui", nil},
	}
	for _, c := range cases {
		got, err := ParsePyAutoGUISteps(c.src, hd)
		if err != nil {
			t.Errorf("%q: %v", c.src, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q:\n got %s\nwant %s", c.src, show(got), show(c.want))
		}
	}
	for _, bad := range []string{"for i in range(3):\n    pyautogui.press('a')", "x = foo()", "pyautogui.locateOnScreen('a.png')",
		"pyautogui.click('button.png')", "pyautogui.click(1,", "'unterminated", "click(1, 2)", "pyautogui.click(1, 2) if x else None"} {
		if a, err := ParsePyAutoGUISteps(bad, hd); err == nil {
			t.Errorf("%q: want an error, got %s", bad, show(a))
		}
	}
	// The simulator's reading is unchanged: every event, keys as written.
	raw, err := ParsePyAutoGUI("pyautogui.moveTo(96, 54); pyautogui.click(); time.sleep(1); pyautogui.press('Return')", hd)
	if err != nil || len(raw) != 4 || raw[0].Kind != Move || raw[2].Kind != Wait || raw[3].Keys[0] != "Return" {
		t.Fatalf("ParsePyAutoGUI: %s %v", show(raw), err)
	}
}

// TestPythonSubset covers what the importer's former parser read and the
// simulator's did not: arithmetic, parenthesised values, escapes, imports
// that rename pyautogui, positional clicks and buttons, pyautogui.sleep.
func TestPythonSubset(t *testing.T) {
	one := func(src string) schemas.Action {
		t.Helper()
		acts, err := ParsePyAutoGUI(src, hd)
		if err != nil || len(acts) != 1 {
			t.Fatalf("%q: %s %v", src, show(acts), err)
		}
		return acts[0]
	}
	at := func(src string, kind string, x, y int32) {
		t.Helper()
		a := one(src)
		if a.Kind != kind || a.X == nil || *a.X != x || *a.Y != y {
			t.Errorf("%q: %s, want %s %d %d", src, show([]schemas.Action{a}), kind, x, y)
		}
	}
	at("pyautogui.click(900 + 60, 600 - 60)", Click, 500, 500)
	at("pyautogui.click(1920 / 2, 1080 * 0.5)", Click, 500, 500)
	at("pyautogui.click(-(-960), (540))", Click, 500, 500)
	at("pyautogui.click(100 + 20 * 43, 540)", Click, 500, 500)
	at("pyautogui.click((960, 540), clicks=3)", TripleClick, 500, 500)
	at("pyautogui.click(960, 540, 2)", DoubleClick, 500, 500)
	at("pyautogui.click(960, 540, 1, 0.1, 'right')", RightClick, 500, 500)
	at("pyautogui.click(960, 540, 'right')", RightClick, 500, 500)
	at("pyautogui.click(960, 540, 1, button='middle')", MiddleClick, 500, 500)
	at("import pyautogui as pg\npg.click(960, 540)", Click, 500, 500)
	at("from pyautogui import click, press as p\nclick(960, 540)", Click, 500, 500)
	at("from pyautogui import (doubleClick,\n    rightClick)\ndoubleClick(960, 540)", DoubleClick, 500, 500)
	at("from pyautogui import *\nrightClick(960, 540)", RightClick, 500, 500)
	at("import pyautogui as pg; pg.FAILSAFE = False; pg.moveTo(960, 540)", Move, 500, 500)
	if a := one("import time as t; t.sleep(1)"); a.Kind != Wait {
		t.Errorf("t.sleep: %s", show([]schemas.Action{a}))
	}
	if a := one("pyautogui.sleep(1)"); a.Kind != Wait {
		t.Errorf("pyautogui.sleep: %s", show([]schemas.Action{a}))
	}
	if a := one("from pyautogui import *\nprint('x'); press('a')"); a.Kind != Key {
		t.Errorf("print after import *: %s", show([]schemas.Action{a}))
	}
	if a := one("pyautogui.press(('enter'))"); !reflect.DeepEqual(a.Keys, []string{"enter"}) {
		t.Errorf("(x) is x: %s", show([]schemas.Action{a}))
	}
	if a := one("pyautogui.typewrite('a' 'b' + \"c\")"); a.Text != "abc" {
		t.Errorf("string joins: %q", a.Text)
	}
	for src, want := range map[string]string{
		`pyautogui.write('\a\b\f\v\0|\101\0411|\x41\u00e9')`: "\a\b\f\v\x00|A!1|Aé",
		`pyautogui.write(r'\n\'')`:                           `\n\'`,
		"pyautogui.write('a')\f":                             "a",
		`pyautogui.write('\q')`:                              `\q`,
	} {
		if a := one(src); a.Text != want {
			t.Errorf("%s: %q, want %q", src, a.Text, want)
		}
	}
	for _, bad := range []string{"pyautogui.click(x=1, 2)", "pyautogui.click(1 / 0, 2)", "pyautogui.click('a' - 'b', 1)",
		"pyautogui.click(" + strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100) + ", 2)",
		"pyautogui.click(-" + strings.Repeat("-", 100) + "1, 2)",
		"pyautogui.write('" + strings.Repeat("a', '", 1<<16) + "')",
		"pg.click(1, 2)", "import pyautogui as pg; import os as pg; pg.click(1, 2)", "from time import *; click(1, 2)"} {
		if a, err := ParsePyAutoGUI(bad, hd); err == nil {
			t.Errorf("%.60q: want an error, got %s", bad, show(a))
		}
	}
}

func TestComputer13(t *testing.T) {
	cases := []struct{ src, want string }{
		{`{"action_type":"CLICK","parameters":{"x":960,"y":540,"button":"left","num_clicks":2}}`, "double_click 500 500"},
		{`{"action_type":"CLICK","x":960,"y":540,"button":"right","num_clicks":2}`, "right_click 500 500"},
		{`{"action_type":"HOTKEY","parameters":{"keys":["Control","s"]}}`, "hotkey ctrl s"},
		{`{"action_type":"PRESS","parameters":{"key":"Return"}}`, "key enter"},
		{`{"action_type":"SCROLL","parameters":{"dx":0,"dy":-500}}`, "scroll down 100"},
		{`{"action_type":"SCROLL","parameters":{"dx":-2}}`, "scroll left 2"},
		{`{"action_type":"DRAG_TO","parameters":{"x":1920,"y":1080}}`, ""},
		{`{"action_type":"TYPING","parameters":{"text":"hi"}}`, "type hi"},
		{`{"action_type":"MOVE_TO","parameters":{"x":0,"y":1080}}`, "move 0 1000"},
		{`{"action_type":"WAIT"}`, "wait"},
		{`{"action_type":"done"}`, "done"},
	}
	for _, c := range cases {
		a, err := ParseComputer13([]byte(c.src), hd)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		if c.want == "" {
			if a.Kind != Drag || a.X != nil || *a.X2 != 1000 || *a.Y2 != 1000 {
				t.Fatalf("%s: %s", c.src, show([]schemas.Action{a}))
			}
			continue
		}
		if got, err := Format(a); err != nil || got != c.want {
			t.Fatalf("%s: %q %v, want %q", c.src, got, err, c.want)
		}
	}
	for _, bad := range []string{`{"action_type":"FLY"}`, `{"action_type":"HOTKEY","keys":[]}`, `{"action_type":"HOTKEY","keys":[1]}`,
		`{"action_type":"SCROLL"}`, `{"action_type":"DRAG_TO","x":1e300,"y":1}`, `{"action_type":"MOUSE_DOWN"}`, `[1]`} {
		if a, err := ParseComputer13([]byte(bad), hd); err == nil {
			t.Errorf("%s accepted: %s", bad, show([]schemas.Action{a}))
		}
	}
	if _, err := ParseComputer13([]byte(`{"action_type":"WAIT"}`), Screen{}); err == nil {
		t.Error("no screen size accepted")
	}
}

// FuzzParsePyAutoGUISteps: any accepted script gives actions on the grid,
// folded (no wait beside other actions, no move before an action that moves
// the mouse, no two presses of one key in a row), keys canonical.
func FuzzParsePyAutoGUISteps(f *testing.F) {
	for _, s := range []string{"DONE", "pyautogui.click(1, 2)", "pyautogui.hotkey('a', \"b\")", "pyautogui.write(r'\\x')",
		"import a.b as c; pyautogui.click(*[1, (2, -3.5e2)])", "pyautogui.moveTo(5, 5); pyautogui.mouseDown(); pyautogui.moveTo(9, 9); pyautogui.mouseUp()",
		"pyautogui.press('Down'); pyautogui.press('down', presses=99); time.sleep(1)", "from pyautogui import *; scroll(1 - 2 * 3)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		acts, err := ParsePyAutoGUISteps(src, hd)
		if err != nil {
			return
		}
		for i, a := range acts {
			for _, p := range []*int32{a.X, a.Y, a.X2, a.Y2} {
				if p != nil && (*p < 0 || *p > Grid) {
					t.Fatalf("%q: coordinate off the grid: %s", src, show(acts))
				}
			}
			if a.Kind == Wait && len(acts) > 1 {
				t.Fatalf("%q: a wait beside other actions: %s", src, show(acts))
			}
			for _, k := range a.Keys {
				if k != CanonicalKey(k) {
					t.Fatalf("%q: key %q is not canonical", src, k)
				}
			}
			if i > 0 {
				prev := acts[i-1]
				if prev.Kind == Move && (pointer(a.Kind) || a.Kind == Scroll) {
					t.Fatalf("%q: a move before %s: %s", src, a.Kind, show(acts))
				}
				if prev.Kind == Key && a.Kind == Key && prev.Keys[0] == a.Keys[0] && presses(prev)+presses(a) <= MaxRepeat {
					t.Fatalf("%q: presses of one key not merged: %s", src, show(acts))
				}
			}
		}
	})
}
