package pyautogui

import (
	"encoding/json"
	"testing"

	"github.com/cualake/cualake/schemas"
)

func show(a schemas.Action) string {
	b, _ := json.Marshal(a)
	return string(b)
}

func TestParse(t *testing.T) {
	cases := []struct{ src, want string }{
		{"DONE", `{"Kind":"done","X":null,"Y":null,"X2":null,"Y2":null,"Text":"","Keys":null,"Direction":"","Amount":0}`},
		{"import pyautogui\nimport time\npyautogui.click(960, 540)\ntime.sleep(0.5)\n", `{"Kind":"click","X":500,"Y":500,"X2":null,"Y2":null,"Text":"","Keys":null,"Direction":"","Amount":0}`},
		{"pyautogui.click(x=100.4, y=1079, button='right')", `{"Kind":"right_click","X":53,"Y":1000,"X2":null,"Y2":null,"Text":"","Keys":null,"Direction":"","Amount":0}`},
		{"pyautogui.click(1919, 0, clicks=2)", `{"Kind":"double_click","X":1000,"Y":0,"X2":null,"Y2":null,"Text":"","Keys":null,"Direction":"","Amount":0}`},
		{"pyautogui.typewrite('hello\\nworld', interval=0.05)", `{"Kind":"type","X":null,"Y":null,"X2":null,"Y2":null,"Text":"hello\nworld","Keys":null,"Direction":"","Amount":0}`},
		{`pyautogui.write("""it's""")`, `{"Kind":"type","X":null,"Y":null,"X2":null,"Y2":null,"Text":"it's","Keys":null,"Direction":"","Amount":0}`},
		{"pyautogui.press('Enter', presses=3)", `{"Kind":"key","X":null,"Y":null,"X2":null,"Y2":null,"Text":"","Keys":["enter"],"Direction":"","Amount":3}`},
		{"pyautogui.hotkey('ctrl', 'shift', 'T')", `{"Kind":"hotkey","X":null,"Y":null,"X2":null,"Y2":null,"Text":"","Keys":["ctrl","shift","T"],"Direction":"","Amount":0}`},
		{"pyautogui.keyDown('ctrl'); pyautogui.press('c'); pyautogui.keyUp('ctrl')", `{"Kind":"hotkey","X":null,"Y":null,"X2":null,"Y2":null,"Text":"","Keys":["ctrl","c"],"Direction":"","Amount":0}`},
		{"pyautogui.scroll(-5, x=960, y=540)", `{"Kind":"scroll","X":500,"Y":500,"X2":null,"Y2":null,"Text":"","Keys":null,"Direction":"down","Amount":5}`},
		{"pyautogui.moveTo(0, 0)\npyautogui.dragTo(1920, 1080, duration=1)", `{"Kind":"drag","X":0,"Y":0,"X2":1000,"Y2":1000,"Text":"","Keys":null,"Direction":"","Amount":0}`},
		{"pyautogui.moveTo(96, 54); pyautogui.mouseDown(); pyautogui.moveTo(192, 108); pyautogui.mouseUp()", `{"Kind":"drag","X":50,"Y":50,"X2":100,"Y2":100,"Text":"","Keys":null,"Direction":"","Amount":0}`},
		{"time.sleep(3)", `{"Kind":"wait","X":null,"Y":null,"X2":null,"Y2":null,"Text":"","Keys":null,"Direction":"","Amount":0}`},
	}
	for _, c := range cases {
		a, err := Parse(c.src, 1920, 1080)
		if err != nil {
			t.Errorf("%q: %v", c.src, err)
			continue
		}
		if got := show(a); got != c.want {
			t.Errorf("%q:\n got %s\nwant %s", c.src, got, c.want)
		}
	}
	for _, bad := range []string{"", "for i in range(3):\n    pyautogui.press('a')", "pyautogui.click(100, 100); pyautogui.typewrite('x')",
		"x = foo()", "pyautogui.locateOnScreen('a.png')", "pyautogui.click('button.png')", "pyautogui.click(1,", "'unterminated"} {
		if a, err := Parse(bad, 1920, 1080); err == nil {
			t.Errorf("%q: want an error, got %s", bad, show(a))
		}
	}
}

func TestComputer13(t *testing.T) {
	a, err := ParseComputer13([]byte(`{"action_type":"CLICK","parameters":{"x":960,"y":540,"button":"left","num_clicks":2}}`), 1920, 1080)
	if err != nil || a.Kind != "double_click" || *a.X != 500 {
		t.Fatalf("%s %v", show(a), err)
	}
	a, err = ParseComputer13([]byte(`{"action_type":"HOTKEY","parameters":{"keys":["ctrl","s"]}}`), 0, 0)
	if err != nil || a.Kind != "hotkey" || len(a.Keys) != 2 {
		t.Fatalf("%s %v", show(a), err)
	}
	if _, err := ParseComputer13([]byte(`{"action_type":"FLY"}`), 0, 0); err == nil {
		t.Fatal("unknown action_type accepted")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"DONE", "pyautogui.click(1, 2)", "pyautogui.hotkey('a', \"b\")", "pyautogui.write(r'\\x')", "import a.b as c; x = [1, (2, -3.5e2)]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		a, err := Parse(src, 1920, 1080)
		if err != nil {
			return
		}
		for _, p := range []*int32{a.X, a.Y, a.X2, a.Y2} {
			if p != nil && (*p < 0 || *p > Grid) {
				t.Fatalf("%q: coordinate off the grid: %s", src, show(a))
			}
		}
	})
}
