package simdesk

import (
	"image"
	"strings"

	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/schemas"
)

// Apply executes one action. An invalid action (unknown kind, missing or
// off-screen coordinates, unknown key, an action after done/fail) changes
// nothing but the step counter and returns why; a valid action returns "".
// Apply never panics on any input.
func (d *Desktop) Apply(a schemas.Action) string {
	d.S.Steps++
	d.invalidate()
	if d.S.Terminal != "" {
		return "episode already ended with " + d.S.Terminal
	}
	if err := action.Validate(a); err != nil {
		return err.Error()
	}
	px := func(x, y *int32) image.Point {
		return image.Pt(action.ToPixel(int(*x), d.S.Width), action.ToPixel(int(*y), d.S.Height))
	}
	switch a.Kind {
	case action.Click, action.RightClick, action.MiddleClick, action.DoubleClick, action.TripleClick:
		d.pointer(a.Kind, px(a.X, a.Y))
	case action.Move:
		p := px(a.X, a.Y)
		d.S.Mouse = Point{p.X, p.Y}
	case action.Drag:
		from := image.Pt(d.S.Mouse.X, d.S.Mouse.Y)
		if a.X != nil {
			from = px(a.X, a.Y)
		}
		d.drag(from, px(a.X2, a.Y2))
	case action.Key:
		k, err := parseKeys(a.Keys)
		if err != nil {
			return err.Error()
		}
		for range max(int(a.Amount), 1) {
			d.press(k)
		}
	case action.Hotkey:
		k, err := parseKeys(a.Keys)
		if err != nil {
			return err.Error()
		}
		if k.Name == "" {
			return "" // modifiers alone do nothing
		}
		d.press(k)
	case action.Type:
		d.typeText(a.Text)
	case action.Scroll:
		p := image.Pt(d.S.Mouse.X, d.S.Mouse.Y)
		if a.X != nil {
			p = px(a.X, a.Y)
			d.S.Mouse = Point{p.X, p.Y}
		}
		d.scroll(p, a.Direction, int(a.Amount))
	case action.Done, action.Fail:
		d.S.Terminal = a.Kind
	}
	d.invalidate()
	return ""
}

// target resolves a screen point to the app and local widget id under it.
func (d *Desktop) target(p image.Point) (path []*Node, appID, local string) {
	path = d.View().hit(p)
	for i := len(path) - 1; i >= 0; i-- {
		if id := path[i].ID; id != "" {
			appID, local, _ = strings.Cut(id, "/")
			return path, appID, local
		}
	}
	return path, "", ""
}

func (d *Desktop) pointer(kind string, p image.Point) {
	d.S.Mouse = Point{p.X, p.Y}
	path, appID, local := d.target(p)
	if appID == "" {
		d.closeAllPopups()
		return
	}
	if appID == "dock" {
		d.closeAllPopups()
		if kind == action.Click || kind == action.DoubleClick {
			d.openApp(local)
		}
		return
	}
	a := appByID(appID)
	if a == nil {
		return
	}
	d.raise(appID)
	switch local {
	case "close":
		if kind == action.Click {
			d.closeWindow(appID)
		}
		return
	case "title", "window":
		a.closePopups(&d.S)
		return
	}
	// A click outside an open popup only closes it, as in real toolkits.
	isPopup := strings.HasPrefix(local, "pop:") || strings.HasPrefix(local, "menu:")
	if a.popupOpen(&d.S) && !isPopup {
		a.closePopups(&d.S)
		return
	}
	if a.modal(&d.S) && !strings.HasPrefix(local, "dlg:") {
		return
	}
	ev := ptrEvent{kind: kind, p: p, node: path[len(path)-1]}
	for i := len(path) - 1; i >= 0; i-- {
		if path[i].ID != "" {
			ev.node = path[i]
			break
		}
	}
	switch {
	case strings.HasPrefix(local, "menu:"):
		if kind != action.Click {
			return
		}
		title := local[len("menu:"):]
		open := a.openMenu(&d.S)
		if *open == title {
			*open = ""
		} else {
			a.closePopups(&d.S)
			*open = title
		}
	case strings.HasPrefix(local, "pop:"):
		if kind != action.Click && kind != action.DoubleClick {
			return
		}
		a.closePopups(&d.S)
		a.command(d, local[len("pop:"):])
	default:
		a.click(d, local, ev)
	}
}

func (d *Desktop) drag(from, to image.Point) {
	d.S.Mouse = Point{to.X, to.Y}
	path, appID, local := d.target(from)
	if appID == "" || appID == "dock" {
		return
	}
	a := appByID(appID)
	if a == nil {
		return
	}
	d.raise(appID)
	if local == "title" {
		w := d.S.window(appID)
		// Keep a grabbable part of the title bar on screen.
		w.X = min(max(w.X+to.X-from.X, 100-w.W), d.S.Width-100)
		w.Y = min(max(w.Y+to.Y-from.Y, taskbarH), d.S.Height-titleH)
		return
	}
	if a.popupOpen(&d.S) {
		a.closePopups(&d.S)
		return
	}
	_, toApp, toLocal := d.target(to)
	if toApp != appID {
		toLocal = ""
	}
	if a.modal(&d.S) && (!strings.HasPrefix(local, "dlg:") || (toLocal != "" && !strings.HasPrefix(toLocal, "dlg:"))) {
		return
	}
	a.drag(d, local, toLocal, ptrEvent{kind: action.Drag, p: from, to: to, node: path[len(path)-1]})
}

func (d *Desktop) press(k Key) {
	top := d.S.Focused()
	switch k.Combo() {
	case "alt+f4", "ctrl+q":
		if top != "" {
			d.closeWindow(top)
		}
		return
	}
	if top == "" {
		return
	}
	a := appByID(top)
	if k.Combo() == "escape" && a.popupOpen(&d.S) {
		a.closePopups(&d.S)
		return
	}
	a.key(d, k)
}

// typeText types text into the focused window: "\n" presses Enter and "\t"
// Tab, as pyautogui.typewrite does.
func (d *Desktop) typeText(text string) {
	top := d.S.Focused()
	if top == "" {
		return
	}
	a := appByID(top)
	if a.popupOpen(&d.S) {
		a.closePopups(&d.S)
	}
	start := 0
	flush := func(end int) {
		if end > start {
			a.typeText(d, text[start:end])
		}
	}
	for i, r := range text {
		switch r {
		case '\n', '\t':
			flush(i)
			start = i + 1
			name := map[rune]string{'\n': "enter", '\t': "tab"}[r]
			a.key(d, Key{Name: name})
			// Enter may have opened or closed a window; later text goes to
			// whatever now has the focus.
			if a = appByID(d.S.Focused()); a == nil {
				return
			}
		case '\r':
			flush(i)
			start = i + 1
		}
	}
	flush(len(text))
}

func (d *Desktop) scroll(p image.Point, dir string, n int) {
	_, appID, local := d.target(p)
	a := appByID(appID)
	if a == nil {
		return
	}
	dy := n
	switch dir {
	case "up":
		dy = -n
	case "left", "right":
		return // nothing scrolls sideways
	}
	a.scroll(d, local, dy)
}
