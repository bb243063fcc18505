package simdesk

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/schemas"
)

func newDesk(t *testing.T, seed int64) *Desktop {
	t.Helper()
	d, err := New(DefaultWidth, DefaultHeight, seed)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func i32(v int32) *int32 { return &v }

// Invalid actions are no-ops that say why; only the step counter moves.
func TestInvalidActionsAreNoOps(t *testing.T) {
	d := newDesk(t, 1)
	d.openApp("editor")
	cases := []struct {
		a    schemas.Action
		want string
	}{
		{schemas.Action{Kind: "click"}, "missing coordinate"},
		{schemas.Action{Kind: "click", X: i32(1001), Y: i32(5)}, "off-screen"},
		{schemas.Action{Kind: "double_click", X: i32(5), Y: i32(-1)}, "off-screen"},
		{schemas.Action{Kind: "drag", X: i32(5), Y: i32(5)}, "missing coordinate x2"},
		{schemas.Action{Kind: "key", Keys: []string{"hyperspace"}}, "unknown key"},
		{schemas.Action{Kind: "key"}, "exactly one key"},
		{schemas.Action{Kind: "hotkey", Keys: []string{"ctrl", "blorp"}}, "unknown key"},
		{schemas.Action{Kind: "type"}, "needs text"},
		{schemas.Action{Kind: "scroll", Direction: "sideways", Amount: 1}, "scroll direction"},
		{schemas.Action{Kind: "scroll", Direction: "down"}, "scroll amount"},
		{schemas.Action{Kind: "teleport"}, "unknown kind"},
		{schemas.Action{Kind: "unknown"}, "unknown kind"},
		{schemas.Action{Kind: "type", Text: strings.Repeat("x", action.MaxText+1)}, "exceeds"},
	}
	before, _ := d.MarshalState()
	for _, c := range cases {
		msg := d.Apply(c.a)
		if !strings.Contains(msg, c.want) {
			t.Errorf("%+v: error %q, want it to mention %q", c.a, msg, c.want)
		}
	}
	after, _ := d.MarshalState()
	d.S.Steps -= len(cases)
	same, _ := d.MarshalState()
	if !bytes.Equal(before, same) || bytes.Equal(before, after) {
		t.Fatal("invalid actions changed the state beyond the step counter")
	}
	// After done, every action is refused.
	if msg := d.Apply(action.Simple(action.Done)); msg != "" {
		t.Fatal(msg)
	}
	if msg := d.Apply(action.TypeAction("x")); !strings.Contains(msg, "already ended") {
		t.Fatalf("action after done: %q", msg)
	}
}

// No sequence of random, often invalid, actions makes the simulator panic
// or break its own invariants.
func TestRandomGarbageActions(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	keys := []string{"enter", "tab", "escape", "backspace", "delete", "f2", "a", "Z", "space", "ctrl", "up", "pagedown", "nope", ""}
	coord := func() *int32 {
		if r.IntN(20) == 0 {
			return nil
		}
		return i32(int32(r.IntN(1100) - 50))
	}
	pool := Pool()
	for ep := 0; ep < 60; ep++ {
		d := newDesk(t, int64(ep))
		if err := d.ApplySetup(pool[(ep*13)%len(pool)].Setup); err != nil {
			t.Fatal(err)
		}
		for _, a := range Apps() {
			if r.IntN(2) == 0 {
				d.openApp(a)
			}
		}
		for i := 0; i < 150; i++ {
			var a schemas.Action
			a.Kind = action.Kinds[r.IntN(len(action.Kinds)-2)] // rarely end the episode
			a.X, a.Y, a.X2, a.Y2 = coord(), coord(), coord(), coord()
			a.Keys = []string{keys[r.IntN(len(keys))], keys[r.IntN(len(keys))]}[:1+r.IntN(2)]
			a.Text = []string{"hello\nworld", "=SUM(A1:A9)\t7\n", "\x00\x7f", "~/Documents/", "ünïcödé", "a@b.c"}[r.IntN(6)]
			a.Direction = []string{"up", "down", "left", "x"}[r.IntN(4)]
			a.Amount = int32(r.IntN(8) - 1)
			d.Apply(a)
			if i%25 == 0 {
				st, err := d.MarshalState()
				if err != nil {
					t.Fatal(err)
				}
				if err := newDesk(t, 0).RestoreState(st); err != nil {
					t.Fatalf("episode %d step %d: state fails its own validation: %v", ep, i, err)
				}
				if !json.Valid(d.Tree()) {
					t.Fatal("tree is not valid JSON")
				}
			}
		}
		if _, err := d.Screenshot(); err != nil {
			t.Fatal(err)
		}
	}
}

// State survives a marshal/restore round trip: same bytes, same screen, and
// the same future under the same actions.
func TestStateRoundTrip(t *testing.T) {
	pool := Pool()
	task := pool[len(pool)/2]
	sim, _ := NewSim(Options{TreeOnly: true})
	obs, err := sim.Reset(task, 11)
	if err != nil {
		t.Fatal(err)
	}
	pol := RandomPolicy(11)
	for i := 0; i < 20; i++ {
		a, _ := pol.Next(obs)
		obs, _ = sim.Step(a)
	}
	d := sim.Desktop()
	st, err := d.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	e := newDesk(t, 99)
	if err := e.RestoreState(st); err != nil {
		t.Fatal(err)
	}
	st2, _ := e.MarshalState()
	if !bytes.Equal(st, st2) {
		t.Fatal("restored state marshals differently")
	}
	s1, _ := d.Screenshot()
	s2, _ := e.Screenshot()
	if !bytes.Equal(s1, s2) || !bytes.Equal(d.Tree(), e.Tree()) {
		t.Fatal("restored state observes differently")
	}
	for i := 0; i < 20; i++ {
		a, _ := pol.Next(Obs{Desktop: d})
		if d.Apply(a) != e.Apply(a) {
			t.Fatal("restored state answered an action differently")
		}
	}
	a1, _ := d.MarshalState()
	a2, _ := e.MarshalState()
	if !bytes.Equal(a1, a2) {
		t.Fatal("restored state diverged")
	}
	// Corrupt states are refused, not trusted.
	for _, bad := range []string{`{}`, `{"version":1}`, strings.Replace(string(st), `"width":1280`, `"width":5`, 1),
		strings.Replace(string(st), `"app":"`, `"app":"x`, 1), `not json`} {
		if err := e.RestoreState([]byte(bad)); err == nil {
			t.Errorf("restored a corrupt state %.60s", bad)
		}
	}
}

// The same seed gives the same initial state; another seed varies it.
func TestSeedDeterminism(t *testing.T) {
	a, _ := newDesk(t, 5).MarshalState()
	b, _ := newDesk(t, 5).MarshalState()
	c, _ := newDesk(t, 6).MarshalState()
	if !bytes.Equal(a, b) || bytes.Equal(a, c) {
		t.Fatal("initial state is not a function of the seed")
	}
}

func TestSetupSteps(t *testing.T) {
	d := newDesk(t, 1)
	setup := BuildSetup(createFile("~/Work/deep/a.txt", "hi"), createFolder("~/Empty"),
		Step("set_cell", map[string]string{"path": "~/s.csv", "cell": "B2", "value": "=1+2"}),
		Step("set_setting", map[string]string{"key": "display.brightness", "value": "33"}),
		Step("add_mail", map[string]string{"from": "x@y.z", "subject": "S", "body": "B"}),
		Step("launch", map[string]any{"command": []string{"gedit", "~/Work/deep/a.txt"}}),
		Step("execute", map[string]any{"command": "mkdir -p ~/Made/here"}),
		Step("type_text", map[string]string{"text": "more "}),
		Step("sleep", map[string]float64{"seconds": 1}))
	if err := d.ApplySetup(setup); err != nil {
		t.Fatal(err)
	}
	if got, _ := d.S.FS.Read("/home/user/Work/deep/a.txt"); got != "hi" {
		t.Fatalf("file content %q", got)
	}
	if !d.S.FS.IsDir("/home/user/Made/here") || !d.S.FS.IsDir("/home/user/Empty") {
		t.Fatal("folders missing")
	}
	if csv, _ := d.S.FS.Read("/home/user/s.csv"); csv != ",\n,=1+2\n" {
		t.Fatalf("sheet %q", csv)
	}
	if v, _ := d.S.SettingValue("display.brightness"); v != 33.0 {
		t.Fatalf("setting %v", v)
	}
	if d.S.Focused() != "editor" || d.S.Editor.Buf.Text() != "more hi" || !d.S.Editor.Dirty {
		t.Fatalf("editor %q dirty=%v focus=%s", d.S.Editor.Buf.Text(), d.S.Editor.Dirty, d.S.Focused())
	}
	for _, bad := range []string{`[{"type":"nuke"}]`, `[{"type":"create_file","parameters":{"path":""}}]`,
		`[{"type":"set_setting","parameters":{"key":"display.brightness","value":"loud"}}]`, `{"type":"x"}`,
		`[{"type":"open_app","parameters":{"app":"browser"}}]`, `[{"type":"launch","parameters":{"command":"firefox"}}]`} {
		if err := CheckSetup(bad); err == nil {
			t.Errorf("CheckSetup accepted %s", bad)
		}
	}
	if err := d.ApplySetup(`[{"type":"open_file","parameters":{"path":"~/none.txt"}}]`); err == nil {
		t.Error("opening a missing file succeeded")
	}
	paths, err := SetupPaths(setup)
	if err != nil || len(paths) != 3 {
		t.Fatalf("SetupPaths = %v, %v", paths, err)
	}
}

func TestTreeJSON(t *testing.T) {
	d := newDesk(t, 1)
	for _, a := range Apps() {
		d.openApp(a)
	}
	var root struct {
		Role     string `json:"role"`
		Children []struct {
			Role   string `json:"role"`
			ID     string `json:"id"`
			Name   string `json:"name"`
			Bounds []int  `json:"bounds"`
			Center []int  `json:"center"`
			States []string
		} `json:"children"`
	}
	if err := json.Unmarshal(d.Tree(), &root); err != nil {
		t.Fatal(err)
	}
	if root.Role != "desktop" || len(root.Children) != 1+len(Apps()) {
		t.Fatalf("root %s with %d children", root.Role, len(root.Children))
	}
	last := root.Children[len(root.Children)-1]
	if last.Role != "window" || last.ID != "mail/window" || len(last.Bounds) != 4 || len(last.Center) != 2 || last.States[0] != "active" {
		t.Fatalf("top window %+v", last)
	}
	for _, s := range []string{`"role":"switch"`, `"role":"text_field"`} {
		d.raise("settings")
		d.invalidate()
		if !strings.Contains(string(d.Tree()), s) {
			t.Errorf("tree lacks %s", s)
		}
	}
}

func TestKnowledge(t *testing.T) {
	for _, app := range Apps() {
		k, err := Knowledge(app)
		if err != nil || !strings.Contains(k, "## Judge getters") || !strings.HasPrefix(k, "# ") {
			t.Fatalf("%s: %v", app, err)
		}
	}
	k, _ := Knowledge("settings")
	for _, p := range Pages {
		for _, s := range p.Settings {
			if !strings.Contains(k, "`"+s.Key+"`") {
				t.Errorf("settings knowledge lacks %s", s.Key)
			}
		}
	}
	if _, err := Knowledge("browser"); err == nil {
		t.Fatal("knowledge of an unknown app")
	}
}
