package verify

import (
	"bytes"
	"context"
	"testing"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/action"
	"github.com/cualake/cualake/schemas"
)

// restoredDigest is the content digest of a fresh simulator restored from
// state bytes.
func restoredDigest(t *testing.T, state []byte) string {
	t.Helper()
	l, err := NewLive(state, false)
	if err != nil {
		t.Fatal(err)
	}
	return l.Digest()
}

func TestProbeNeverChangesState(t *testing.T) {
	// Every criterion of every bench state is probed with a budget large
	// enough to go everywhere; the document state stays what the episode
	// left, and the episode's state bytes are untouched.
	ctx := context.Background()
	ins, err := BenchInputs(ctx, simdesk.Pool()[:120], 11, 0, 4, true)
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	for _, in := range ins {
		state := append([]byte(nil), in.FinalState...)
		live, err := NewLive(in.FinalState, false)
		if err != nil {
			t.Fatal(err)
		}
		before := live.Digest()
		cs := WriteCriteria(in.Task.Instruction)
		var order []int
		for i := range cs {
			order = append(order, i)
		}
		if _, err := (BuiltinProbe{}).Probe(ctx, ProbeRequest{Task: in.Task, Live: live, Criteria: cs, Order: order, Budget: 100}); err != nil {
			t.Fatal(err)
		}
		steps += live.Steps()
		if live.Digest() != before || restoredDigest(t, in.FinalState) != before {
			t.Errorf("%s: the probe changed the document state", in.TrajectoryID)
		}
		if live.Refused() != 0 {
			t.Errorf("%s: the builtin probe tried %d refused actions: %v", in.TrajectoryID, live.Refused(), live.Refusals())
		}
		if !bytes.Equal(state, in.FinalState) {
			t.Errorf("%s: the final-state bytes changed", in.TrajectoryID)
		}
	}
	if steps < len(ins)/2 {
		t.Fatalf("the probe hardly acted (%d steps over %d states)", steps, len(ins))
	}
}

func TestGuardRefusesEdits(t *testing.T) {
	p := "~/Documents/notes.txt"
	tk := task("guard", "editor", "Save the notes.", []simdesk.SetupStep{
		simdesk.Step("create_file", map[string]string{"path": p, "content": "keep me\n"}),
		simdesk.Step("open_file", map[string]string{"path": p}),
		simdesk.Step("type_text", map[string]string{"text": "draft "}),
	}, fileJudge(p, "draft keep me"))
	ep := episode(t, tk, 2, click("dock/files"), click("files/place:/home/user/Documents"), click("files/item:notes.txt"), finish("done"))
	in := input(t, ep)
	state := append([]byte(nil), in.FinalState...)
	live, err := NewLive(in.FinalState, true)
	if err != nil {
		t.Fatal(err)
	}
	before := live.Digest()
	act := func(a schemas.Action) string {
		t.Helper()
		why, err := live.Act(a)
		if err != nil {
			t.Fatal(err)
		}
		return why
	}
	on := func(id string, kind string) schemas.Action {
		t.Helper()
		s, err := live.Screen()
		if err != nil {
			t.Fatal(err)
		}
		n := s.Find(id)
		if n == nil {
			t.Fatalf("%s is not visible", id)
		}
		return clickAt(kind, n)
	}
	// In the file manager, with notes.txt selected.
	refused := []schemas.Action{
		action.KeyAction("delete", 1), action.HotkeyAction("ctrl", "x"), action.KeyAction("f2", 1),
		action.HotkeyAction("ctrl", "shift", "n"), action.DragAction(500, 500, 100, 100), action.Simple("done"),
	}
	for _, a := range refused {
		if why := act(a); why == "" {
			t.Errorf("%+v ran in the file manager", a)
		}
	}
	if why := act(on("files/menu:File", action.Click)); why != "" {
		t.Fatalf("opening a menu was refused: %s", why)
	}
	if why := act(on("files/pop:delete", action.Click)); why == "" {
		t.Error("File > Delete ran")
	}
	// In the editor, with unsaved changes.
	if why := act(on("dock/editor", action.Click)); why != "" {
		t.Fatalf("raising the editor was refused: %s", why)
	}
	for _, a := range []schemas.Action{action.HotkeyAction("ctrl", "s"), action.HotkeyAction("ctrl", "shift", "s"), action.TypeAction("x"),
		action.KeyAction("backspace", 3), action.KeyAction("enter", 1), action.HotkeyAction("ctrl", "v"), action.HotkeyAction("ctrl", "w")} {
		if why := act(a); why == "" {
			t.Errorf("%+v ran in the editor", a)
		}
	}
	act(on("editor/menu:File", action.Click))
	if why := act(on("editor/pop:save", action.Click)); why == "" {
		t.Error("File > Save ran")
	}
	// In Settings: switches and option lists change settings.
	act(on("dock/settings", action.Click))
	act(on("settings/page:privacy", action.Click))
	if why := act(on("settings/set:privacy.camera", action.Click)); why == "" {
		t.Error("a settings switch toggled")
	}
	if why := act(on("settings/set:privacy.lock_after", action.Click)); why != "" {
		t.Fatalf("opening an option list was refused: %s", why)
	}
	if why := act(on("settings/pop:opt:privacy.lock_after:0", action.Click)); why == "" {
		t.Error("picking an option ran")
	}
	// In Mail: composing and sending.
	act(on("dock/mail", action.Click))
	if why := act(on("mail/compose", action.Click)); why == "" {
		t.Error("compose ran")
	}
	if live.Refused() != 18 {
		t.Errorf("%d refusals counted, want 18: %v", live.Refused(), live.Refusals())
	}
	if live.Digest() != before {
		t.Error("refused actions changed the document state")
	}
	if !bytes.Equal(state, in.FinalState) {
		t.Error("the episode's state bytes changed")
	}
	// The same through a verification attempt: a Probe that only tries
	// edits gets every one refused and counted in the row.
	r := &Runner{Name: "edits", Judge: &BuiltinJudge{Strategy: Builtin()}, Probe: editProbe{}, MaxRounds: 2, StepsPerRound: 15}
	att, err := r.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	row := att.Row(in, "edits")
	if !row.ProbeUsed || row.RefusedActions != 2*3 || row.ProbeSteps != 2*3 {
		t.Errorf("row: probe %v, %d refused of %d steps, want 6 of 6", row.ProbeUsed, row.RefusedActions, row.ProbeSteps)
	}
}

// editProbe tries to save, type and delete, and reports nothing.
type editProbe struct{}

func (editProbe) Probe(_ context.Context, req ProbeRequest) (ProbeReport, error) {
	for _, a := range []schemas.Action{action.HotkeyAction("ctrl", "s"), action.TypeAction("oops"), action.KeyAction("delete", 1)} {
		if _, err := req.Live.Act(a); err != nil {
			return ProbeReport{}, err
		}
	}
	return ProbeReport{Criteria: req.Criteria}, nil
}

func TestGuardRollsBackHiddenEdits(t *testing.T) {
	// A cell edit the agent left pending: clicking another cell looks
	// harmless to the rule check but would commit it; the simulator-level
	// net rolls it back and counts it.
	p := "~/Documents/a.csv"
	tk := task("rollback", "sheet", "Put 5 in A3 of ~/Documents/a.csv and save the file.", []simdesk.SetupStep{
		simdesk.Step("create_file", map[string]string{"path": p, "content": "x,y\n1,2\n"}),
		simdesk.Step("open_file", map[string]string{"path": p}),
	}, fileJudge(p, "x,y\n1,2\n5,\n"))
	ep := episode(t, tk, 4, click("sheet/cell:A3"), typeText("5"), finish("done"))
	in := input(t, ep)
	live, err := NewLive(in.FinalState, false)
	if err != nil {
		t.Fatal(err)
	}
	before := live.Digest()
	s, err := live.Screen()
	if err != nil {
		t.Fatal(err)
	}
	why, err := live.Act(clickAt(action.Click, s.Find("sheet/cell:B1")))
	if err != nil {
		t.Fatal(err)
	}
	if why == "" || live.Refused() != 1 || live.Digest() != before {
		t.Fatalf("committing a pending edit: refused %q (%d), digest kept %v", why, live.Refused(), live.Digest() == before)
	}
}
