package action_test

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/schemas"
)

// randomScript writes a pyautogui script of a few statements that agents
// write, on a w x h screen, with coordinates that often repeat (so that
// moves meet clicks and drags at the same point).
func randomScript(r *rand.Rand, w, h int) string {
	pts := [][2]int{{r.Intn(w), r.Intn(h)}, {r.Intn(w), r.Intn(h)}, {w / 2, h / 2}, {40, h - 20}}
	pt := func() string { p := pts[r.Intn(len(pts))]; return fmt.Sprintf("%d, %d", p[0], p[1]) }
	keys := []string{"'a'", "'A'", "'enter'", "'Return'", "'tab'", "'down'", "'backspace'", "'esc'", "'ctrl'"}
	key := func() string { return keys[r.Intn(len(keys))] }
	stmts := []func() string{
		func() string { return "pyautogui.moveTo(" + pt() + ")" },
		func() string { return "pyautogui.click(" + pt() + ")" },
		func() string { return "pyautogui.click()" },
		func() string { return "pyautogui.doubleClick(" + pt() + ")" },
		func() string { return "pyautogui.rightClick(" + pt() + ")" },
		func() string { return "pyautogui.dragTo(" + pt() + ", duration=0.5)" },
		func() string { return "pyautogui.mouseDown(" + pt() + ")" },
		func() string { return "pyautogui.mouseDown()" },
		func() string { return "pyautogui.mouseUp()" },
		func() string { return "pyautogui.scroll(" + fmt.Sprint(r.Intn(11)-5) + ")" },
		func() string { return "pyautogui.scroll(-3, x=" + strings.Replace(pt(), ", ", ", y=", 1) + ")" },
		func() string { return "pyautogui.press(" + key() + ")" },
		func() string { return "pyautogui.press(" + key() + ", presses=" + fmt.Sprint(1+r.Intn(3)) + ")" },
		func() string { return "pyautogui.typewrite([" + key() + ", " + key() + "])" },
		func() string { return "pyautogui.write('hi')" },
		func() string { return "pyautogui.hotkey('ctrl', " + key() + ")" },
		func() string { return "pyautogui.keyDown('shift')" },
		func() string { return "pyautogui.keyUp('shift')" },
		func() string { return "time.sleep(0.5)" },
	}
	n := 1 + r.Intn(6)
	var b strings.Builder
	b.WriteString("import pyautogui\nimport time\n")
	for range n {
		b.WriteString(stmts[r.Intn(len(stmts))]() + "\n")
	}
	return b.String()
}

func stateAfter(t *testing.T, acts []schemas.Action, w, h int, seed int64) string {
	t.Helper()
	d, err := simdesk.New(w, h, seed)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range acts {
		d.Apply(a)
	}
	s := d.S
	s.Steps = 0 // folding saves steps: the one thing it may change
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestStepsSameEffect: the folded actions of a script leave the simulated
// desktop exactly as the simulator's own reading of it does.
func TestStepsSameEffect(t *testing.T) {
	const w, h = 1280, 800
	r := rand.New(rand.NewSource(7))
	folded, parsed := 0, 0
	for i := range 3000 {
		src := randomScript(r, w, h)
		scr := action.Screen{Width: w, Height: h}
		all, err1 := action.ParsePyAutoGUI(src, scr)
		steps, err2 := action.ParsePyAutoGUISteps(src, scr)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("%q: ParsePyAutoGUI %v, ParsePyAutoGUISteps %v", src, err1, err2)
		}
		if err1 != nil {
			continue
		}
		parsed++
		if len(steps) < len(all) {
			folded++
		}
		seed := int64(i % 5)
		if a, b := stateAfter(t, all, w, h, seed), stateAfter(t, steps, w, h, seed); a != b {
			t.Fatalf("%q: folding changed the outcome\nall:   %v\nsteps: %v\n%s\n%s", src, all, steps, a, b)
		}
	}
	if parsed < 1500 || folded < parsed/5 {
		t.Fatalf("%d of 3000 scripts parsed, %d folded: the generator is too tame", parsed, folded)
	}
	t.Logf("%d of 3000 scripts parsed, %d folded", parsed, folded)
}
