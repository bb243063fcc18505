package simdesk

import (
	"fmt"
	"image"
	"math/rand/v2"
	"slices"

	"github.com/cualake/cualake/pipeline/simdesk/vfs"
)

// Default screen size.
const (
	DefaultWidth  = 1280
	DefaultHeight = 800
)

// Layout constants shared by the views, in pixels.
const (
	taskbarH = 32
	titleH   = 26
	menuH    = 22
	rowH     = 22
	charW    = 7
	charH    = 13
)

// Desktop is the simulator: a deterministic state machine over State with
// no goroutines, clocks or map-ordered output. It is not safe for concurrent
// use; run one Desktop per goroutine.
type Desktop struct {
	S    State
	view *Node
	rend *renderer
}

// app is one application: it builds its window's widgets from state and
// reacts to input aimed at them. Apps are stateless; their state is in
// State.
type app interface {
	id() string
	name() string
	title(s *State) string
	build(d *Desktop, win *Node, content image.Rectangle)
	click(d *Desktop, id string, ev ptrEvent)
	key(d *Desktop, k Key)
	typeText(d *Desktop, text string)
	scroll(d *Desktop, id string, dy int)
	drag(d *Desktop, from, to string, ev ptrEvent)
	command(d *Desktop, cmd string)
	menus() []menuDef
	openMenu(s *State) *string
	popupOpen(s *State) bool
	closePopups(s *State)
	modal(s *State) bool
	// requestClose asks to close the window; false defers (a dialog asks to
	// save first).
	requestClose(d *Desktop) bool
	reset(d *Desktop)
}

// ptrEvent is a pointer action delivered to an app.
type ptrEvent struct {
	kind string // an action kind: click, double_click, ...
	p    image.Point
	node *Node
	to   image.Point // drag end
}

var apps = []app{filesApp{}, editorApp{}, sheetApp{}, settingsApp{}, mailApp{}}

// Apps lists the app ids in dock order.
func Apps() []string {
	out := make([]string, len(apps))
	for i, a := range apps {
		out[i] = a.id()
	}
	return out
}

func appByID(id string) app {
	for _, a := range apps {
		if a.id() == id {
			return a
		}
	}
	return nil
}

func appIndex(id string) int {
	for i, a := range apps {
		if a.id() == id {
			return i
		}
	}
	return -1
}

// New returns a desktop of the given screen size in its initial state for
// seed.
func New(width, height int, seed int64) (*Desktop, error) {
	if err := checkScreen(width, height); err != nil {
		return nil, fmt.Errorf("simdesk: %w", err)
	}
	d := &Desktop{}
	d.S = initialState(width, height, seed)
	return d, nil
}

// Reset returns the desktop to its initial state for seed, keeping the
// screen size.
func (d *Desktop) Reset(seed int64) {
	d.S = initialState(d.S.Width, d.S.Height, seed)
	d.invalidate()
}

func (d *Desktop) invalidate() { d.view = nil }

// rng returns a generator for one purpose of the seed, so that adding a use
// of randomness never shifts another.
func rng(seed int64, purpose uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), purpose))
}

func initialState(w, h int, seed int64) State {
	s := State{Version: StateVersion, Seed: seed, Width: w, Height: h, Mouse: Point{X: w / 2, Y: h / 2}}
	s.FS = vfs.NewHome()
	r := rng(seed, 1)
	decoys := []struct{ dir, name, content string }{
		{"Documents", "readme.txt", "Welcome to SimDesk.\nThis folder holds your documents.\n"},
		{"Pictures", fmt.Sprintf("photo-%03d.png", r.IntN(1000)), "PNG image placeholder\n"},
		{"Pictures", fmt.Sprintf("screenshot-%03d.png", r.IntN(1000)), "PNG image placeholder\n"},
		{"Downloads", fmt.Sprintf("installer-%d.deb", 100+r.IntN(900)), "binary package placeholder\n"},
		{"Desktop", "todo.txt", "- water the plants\n- call the bank\n"},
	}
	for _, f := range decoys {
		_ = s.FS.Write(vfs.Home+"/"+f.dir+"/"+f.name, f.content) // folders exist in NewHome
	}
	s.Files = FilesState{Dir: vfs.Home}
	s.Editor = EditorState{Buf: newBuffer("")}
	s.Settings = defaultSettings()
	s.Mail = defaultMail(seed)
	return s
}

// defaultRect places an app's window: a per-app spot with a small seeded
// offset, clamped to the screen.
func (s *State) defaultRect(id string) Window {
	type spot struct{ x, y, w, h int }
	spots := map[string]spot{
		"files": {40, 60, 880, 600}, "editor": {140, 80, 900, 620}, "sheet": {90, 70, 980, 640},
		"settings": {220, 90, 860, 600}, "mail": {170, 100, 940, 640},
	}
	sp := spots[id]
	r := rng(s.Seed, 100+uint64(appIndex(id)))
	x, y := sp.x+r.IntN(33)-16, sp.y+r.IntN(25)-8
	w, h := min(sp.w, s.Width-20), min(sp.h, s.Height-taskbarH-20)
	x = min(max(x, 0), s.Width-w)
	y = min(max(y, taskbarH+4), s.Height-h)
	return Window{App: id, X: x, Y: y, W: w, H: h}
}

// window returns the open window of an app, or nil.
func (s *State) window(id string) *Window {
	for i := range s.Windows {
		if s.Windows[i].App == id {
			return &s.Windows[i]
		}
	}
	return nil
}

// Focused returns the app of the focused (top) window, "" when none.
func (s *State) Focused() string {
	if len(s.Windows) == 0 {
		return ""
	}
	return s.Windows[len(s.Windows)-1].App
}

// OpenApps returns the apps with an open window, bottom to top.
func (s *State) OpenApps() []string {
	out := make([]string, len(s.Windows))
	for i, w := range s.Windows {
		out[i] = w.App
	}
	return out
}

// openApp opens (or raises) an app's window.
func (d *Desktop) openApp(id string) {
	a := appByID(id)
	if a == nil {
		return
	}
	if d.S.window(id) != nil {
		d.raise(id)
		return
	}
	d.closeAllPopups()
	a.reset(d)
	d.S.Windows = append(d.S.Windows, d.S.defaultRect(id))
}

// raise brings an app's window to the top, closing other apps' popups.
func (d *Desktop) raise(id string) {
	i := slices.IndexFunc(d.S.Windows, func(w Window) bool { return w.App == id })
	if i < 0 || i == len(d.S.Windows)-1 {
		return
	}
	w := d.S.Windows[i]
	d.S.Windows = append(append(d.S.Windows[:i:i], d.S.Windows[i+1:]...), w)
	for _, a := range apps {
		if a.id() != id {
			a.closePopups(&d.S)
		}
	}
}

// closeWindow closes an app's window if the app agrees.
func (d *Desktop) closeWindow(id string) {
	a := appByID(id)
	if a == nil || d.S.window(id) == nil {
		return
	}
	d.raise(id)
	if !a.requestClose(d) {
		return
	}
	d.forceClose(id)
}

func (d *Desktop) forceClose(id string) {
	d.S.Windows = slices.DeleteFunc(d.S.Windows, func(w Window) bool { return w.App == id })
	if a := appByID(id); a != nil {
		a.closePopups(&d.S)
	}
}

func (d *Desktop) closeAllPopups() {
	for _, a := range apps {
		a.closePopups(&d.S)
	}
}

// View returns the view tree of the current state (cached until the state
// changes). Callers must not modify it.
func (d *Desktop) View() *Node {
	if d.view != nil {
		return d.view
	}
	s := &d.S
	root := &Node{Role: RoleDesktop, Name: "SimDesk", Rect: image.Rect(0, 0, s.Width, s.Height)}
	bar := root.add(&Node{Role: RoleTaskbar, Name: "Dock", Rect: image.Rect(0, 0, s.Width, taskbarH)})
	focused := s.Focused()
	for i, a := range apps {
		b := bar.add(&Node{ID: "dock/" + a.id(), Role: RoleButton, Name: a.name(), Rect: rect(8+i*112, 4, 104, 24), Style: btnDock})
		if s.window(a.id()) != nil {
			b.States |= StChecked
		}
		if focused == a.id() {
			b.States |= StActive
		}
	}
	bar.text(rect(s.Width-80, 9, 70, charH), "SimDesk", 10|styRight)
	for _, w := range s.Windows {
		a := appByID(w.App)
		win := root.add(&Node{ID: w.App + "/window", Role: RoleWindow, Name: a.title(s), Rect: rect(w.X, w.Y, w.W, w.H)})
		if w.App == focused {
			win.States |= StActive
		}
		tb := win.add(&Node{ID: w.App + "/title", Role: RoleTitleBar, Name: a.title(s), Rect: rect(w.X, w.Y, w.W, titleH), States: win.States & StActive})
		tb.add(&Node{ID: w.App + "/close", Role: RoleButton, Name: "Close", Rect: rect(w.X+w.W-24, w.Y+3, 20, 20), Style: btnFlat})
		a.build(d, win, image.Rect(w.X, w.Y+titleH, w.X+w.W, w.Y+w.H))
	}
	d.view = root
	return root
}
