package action

import (
	"image"
	"reflect"
	"strings"
	"testing"

	"github.com/cualake/cualake/schemas"
)

func TestCompactRoundTrip(t *testing.T) {
	canonical := []string{
		"click 512 300", "right_click 0 1000", "middle_click 1 2", "double_click 999 1", "triple_click 5 5",
		"move 10 20", "drag 100 200 300 400", "key enter", "key backspace 3", "hotkey ctrl s",
		"hotkey ctrl shift n", "type hello world", `type two\nlines and a \\ backslash\tand tab`, "type  leading space",
		"scroll down 3", "scroll up 2 500 400", "scroll left 1", "wait", "done", "fail", "key A", "hotkey ctrl +",
	}
	for _, s := range canonical {
		a, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		got, err := Format(a)
		if err != nil || got != s {
			t.Fatalf("Format(Parse(%q)) = %q, %v", s, got, err)
		}
	}
	a, _ := Parse(`type a\nb`)
	if a.Text != "a\nb" {
		t.Fatalf("escape: %q", a.Text)
	}
}

func TestCompactRejects(t *testing.T) {
	for _, s := range []string{"", "click", "click 1", "click 1 2 3", "click a b", "click 1001 5", "click -1 5",
		"drag 1 2 3", "key", "key nosuchkey", "key enter 0", "hotkey", "type", "type bad\\q", "scroll sideways 3",
		"scroll down", "scroll down 0", "scroll down 3 1", "wait now", "jump 1 2", "key enter 101"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
}

func TestGridMapping(t *testing.T) {
	for _, size := range []int{640, 800, 1000, 1280, 1920} {
		if ToPixel(0, size) != 0 || ToPixel(Grid, size) != size-1 {
			t.Fatalf("size %d: ends map to %d..%d", size, ToPixel(0, size), ToPixel(Grid, size))
		}
		for p := 0; p < size; p++ {
			got := ToPixel(ToGrid(p, size), size)
			if (size <= Grid && got != p) || got < p || got > p+1 {
				t.Fatalf("size %d: pixel %d -> grid -> %d", size, p, got)
			}
		}
		for g := 0; g <= Grid; g++ {
			p := ToPixel(g, size)
			if ToPixel(ToGrid(p, size), size) != p {
				t.Fatalf("size %d: grid %d not stable", size, g)
			}
		}
	}
}

func ptr(v int32) *int32 { return &v }

func TestParsePyAutoGUI(t *testing.T) {
	scr := Screen{Width: 1280, Height: 800}
	g := func(px, py int) (*int32, *int32) {
		return ptr(int32(ToGrid(px, 1280))), ptr(int32(ToGrid(py, 800)))
	}
	x, y := g(640, 400)
	x2, y2 := g(100, 50)
	cases := []struct {
		src  string
		want []schemas.Action
	}{
		{"pyautogui.click(640, 400)", []schemas.Action{{Kind: Click, X: x, Y: y}}},
		{"pyautogui.click(x=640, y=400, button='right')", []schemas.Action{{Kind: RightClick, X: x, Y: y}}},
		{"pyautogui.click((640, 400), clicks=2)", []schemas.Action{{Kind: DoubleClick, X: x, Y: y}}},
		{"pyautogui.doubleClick(640.4, 399.6)", []schemas.Action{{Kind: DoubleClick, X: x, Y: y}}},
		{"pyautogui.tripleClick(640, 400)", []schemas.Action{{Kind: TripleClick, X: x, Y: y}}},
		{"pyautogui.rightClick(640, 400)", []schemas.Action{{Kind: RightClick, X: x, Y: y}}},
		{"pyautogui.middleClick(640, 400)", []schemas.Action{{Kind: MiddleClick, X: x, Y: y}}},
		{"pyautogui.moveTo(640, 400); pyautogui.dragTo(100, 50, duration=0.5)", []schemas.Action{{Kind: Move, X: x, Y: y}, {Kind: Drag, X: x, Y: y, X2: x2, Y2: y2}}},
		{"pyautogui.dragTo(100, 50)", []schemas.Action{{Kind: Drag, X2: x2, Y2: y2}}},
		{"pyautogui.mouseDown(640, 400)\npyautogui.moveTo(100, 50)\npyautogui.mouseUp()", []schemas.Action{{Kind: Move, X: x2, Y: y2}, {Kind: Drag, X: x, Y: y, X2: x2, Y2: y2}}},
		{`pyautogui.typewrite('it\'s "ok"\n')`, []schemas.Action{{Kind: Type, Text: "it's \"ok\"\n"}}},
		{`pyautogui.write("a\tb", interval=0.1)`, []schemas.Action{{Kind: Type, Text: "a\tb"}}},
		{`pyautogui.typewrite(['a', 'enter'])`, []schemas.Action{{Kind: Key, Keys: []string{"a"}}, {Kind: Key, Keys: []string{"enter"}}}},
		{"pyautogui.hotkey('ctrl', 's')", []schemas.Action{{Kind: Hotkey, Keys: []string{"ctrl", "s"}}}},
		{"pyautogui.press('enter')", []schemas.Action{{Kind: Key, Keys: []string{"enter"}}}},
		{"pyautogui.press('backspace', presses=4)", []schemas.Action{{Kind: Key, Keys: []string{"backspace"}, Amount: 4}}},
		{"pyautogui.keyDown('ctrl'); pyautogui.press('c'); pyautogui.keyUp('ctrl')", []schemas.Action{{Kind: Hotkey, Keys: []string{"ctrl", "c"}}}},
		{"pyautogui.scroll(-3)", []schemas.Action{{Kind: Scroll, Direction: "down", Amount: 3}}},
		{"pyautogui.scroll(5, x=640, y=400)", []schemas.Action{{Kind: Scroll, Direction: "up", Amount: 5, X: x, Y: y}}},
		{"pyautogui.hscroll(2)", []schemas.Action{{Kind: Scroll, Direction: "right", Amount: 2}}},
		{"import pyautogui; import time; pyautogui.FAILSAFE = False; time.sleep(0.5)", []schemas.Action{{Kind: Wait}}},
		{"DONE", []schemas.Action{{Kind: Done}}},
		{"FAIL", []schemas.Action{{Kind: Fail}}},
		{"WAIT", []schemas.Action{{Kind: Wait}}},
		{"pyautogui.click()", []schemas.Action{{Kind: Click}}},
		{"# comment only\n", nil},
	}
	for _, c := range cases {
		got, err := ParsePyAutoGUI(c.src, scr)
		if err != nil {
			t.Fatalf("%q: %v", c.src, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Fatalf("%q:\n got %s\nwant %s", c.src, dump(got), dump(c.want))
		}
	}
	mouse := image.Pt(640, 400)
	got, _ := ParsePyAutoGUI("pyautogui.click()", Screen{Width: 1280, Height: 800, Mouse: &mouse})
	if got[0].X == nil || *got[0].X != *x {
		t.Fatal("click() did not use the known mouse position")
	}
	for _, bad := range []string{"os.system('rm -rf /')", "pyautogui.click(x)", "x = y", "pyautogui.locateOnScreen('a.png')",
		"pyautogui.click('button.png')", "pyautogui.typewrite('unterminated)", "pyautogui.click(1,2) junk", "pyautogui.press(5)",
		"pyautogui.moveRel(5, 5)", "pyautogui.mouseUp()", "pyautogui.click(1e99, 2)", "pyautogui.click(button='left', clicks=9, x=1, y=2)"} {
		if _, err := ParsePyAutoGUI(bad, scr); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func dump(as []schemas.Action) string {
	var parts []string
	for _, a := range as {
		s, err := Format(a)
		if err != nil {
			s = a.Kind + "(" + err.Error() + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " | ")
}

// Every formattable action survives FormatPyAutoGUI then ParsePyAutoGUI,
// which is what crossing an OSWorld server does.
func TestPyAutoGUIRoundTrip(t *testing.T) {
	for _, s := range []string{"click 512 300", "right_click 0 1000", "double_click 999 1", "triple_click 5 5", "middle_click 7 7",
		"move 10 20", "key enter", "key backspace 3", "hotkey ctrl shift s", "type it's a \"test\"\\nwith ünïcode \\\\ and \\t",
		"scroll down 3", "scroll up 2 500 400", "scroll left 1", "scroll right 4 3 3", "wait", "done", "fail"} {
		a, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range [][2]int{{1280, 800}, {1000, 1000}, {1920, 1080}} {
			py, err := FormatPyAutoGUI(a, size[0], size[1])
			if err != nil {
				t.Fatal(err)
			}
			back, err := ParsePyAutoGUI(py, Screen{Width: size[0], Height: size[1]})
			if err != nil || len(back) != 1 {
				t.Fatalf("%q -> %q -> %v", s, py, err)
			}
			b := back[0]
			if b.Kind != a.Kind || b.Text != a.Text || !reflect.DeepEqual(b.Keys, a.Keys) || b.Direction != a.Direction || b.Amount != a.Amount {
				t.Fatalf("%q -> %q -> %+v", s, py, b)
			}
			if a.X != nil && (ToPixel(int(*b.X), size[0]) != ToPixel(int(*a.X), size[0]) || ToPixel(int(*b.Y), size[1]) != ToPixel(int(*a.Y), size[1])) {
				t.Fatalf("%q -> %q moved the pixel", s, py)
			}
		}
	}
	drag := DragAction(1, 2, 3, 4)
	py, _ := FormatPyAutoGUI(drag, 1280, 800)
	back, err := ParsePyAutoGUI(py, Screen{Width: 1280, Height: 800})
	if err != nil || len(back) != 2 || back[1].Kind != Drag || ToPixel(int(*back[1].X2), 1280) != ToPixel(3, 1280) {
		t.Fatalf("drag: %q -> %v %v", py, dump(back), err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"click 1 2", "type x", "scroll down 3 4 5", "hotkey ctrl s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := Parse(s)
		if err != nil {
			return
		}
		out, err := Format(a)
		if err != nil {
			t.Fatalf("parsed %q but cannot format: %v", s, err)
		}
		b, err := Parse(out)
		if err != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("%q -> %q does not parse back the same", s, out)
		}
	})
}

func FuzzParsePyAutoGUI(f *testing.F) {
	for _, s := range []string{"pyautogui.click(1, 2)", "pyautogui.typewrite('a\\nb')", "DONE", "pyautogui.hotkey('ctrl','s')"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		acts, err := ParsePyAutoGUI(s, Screen{Width: 1280, Height: 800})
		if err != nil {
			return
		}
		for _, a := range acts {
			_ = Validate(a) // must not panic; invalid actions are the env's business
		}
	})
}
