package verify

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/pipeline/simdesk/judge"
	"github.com/cualake/cualake/schemas"
)

// Terminal states whose last screenshots mislead: the passive verdict is
// wrong, the probing verdict right, the probe leaves the state alone and
// brings evidence screenshots.

func checkMisled(t *testing.T, in *Input, wantOutcome string) {
	t.Helper()
	state := append([]byte(nil), in.FinalState...)
	passive, builtin, att := verifyAll(t, in)
	if in.Outcome != wantOutcome {
		t.Fatalf("executable outcome %q, want %q", in.Outcome, wantOutcome)
	}
	if passive.Verdict == wantOutcome || passive.ProbeUsed {
		t.Errorf("passive verdict %s (probe %v) should be misled: %s", passive.Verdict, passive.ProbeUsed, passive.Criteria)
	}
	if builtin.Verdict != wantOutcome || !builtin.ProbeUsed {
		t.Errorf("builtin verdict %s (probe %v), want %s after probing: %s", builtin.Verdict, builtin.ProbeUsed, wantOutcome, builtin.Criteria)
	}
	if builtin.Reward != RewardCorrectProbe || passive.Reward != RewardWrong {
		t.Errorf("rewards builtin %v passive %v, want %v and %v", builtin.Reward, passive.Reward, RewardCorrectProbe, RewardWrong)
	}
	if builtin.RefusedActions != 0 || builtin.ProbeSteps == 0 || builtin.ProbeTokens == 0 {
		t.Errorf("builtin probe: %d steps, %d tokens, %d refused", builtin.ProbeSteps, builtin.ProbeTokens, builtin.RefusedActions)
	}
	if len(att.Evidence) == 0 || len(builtin.Evidence) == 0 {
		t.Errorf("no evidence screenshots: %v", builtin.Evidence)
	}
	for _, b := range att.Evidence {
		if b.Mime != "image/png" || schemas.HashBytes(b.Bytes) != b.Hash || !strings.Contains(strings.Join(builtin.Evidence, ","), b.Hash) {
			t.Errorf("evidence blob %s (%s) is not a referenced PNG", b.Hash, b.Mime)
		}
	}
	if !bytes.Equal(state, in.FinalState) {
		t.Error("verification changed the episode's final-state bytes")
	}
}

func TestEditMadeButNotSaved(t *testing.T) {
	p := "~/Documents/notes.txt"
	tk := task("scenario-unsaved", "editor", `Open ~/Documents/notes.txt in the text editor, add the line "3. Pack the demo laptop." at the end of the list, and save the file.`,
		[]simdesk.SetupStep{simdesk.Step("create_file", map[string]string{"path": p, "content": "1. Lunch is at noon.\n2. Book the tickets.\n"}),
			simdesk.Step("open_file", map[string]string{"path": p})},
		fileJudge(p, "1. Lunch is at noon.\n2. Book the tickets.\n3. Pack the demo laptop."))
	// The agent types the line, brings Mail to the front, reads two
	// messages and presses ctrl+s there: the history shows a save after the
	// edit, and the last screenshots show Mail over the editor and its
	// unsaved marker. The first seed where Mail's window covers the
	// editor's title and status bar gives such screens.
	for seed := int64(1); seed < 200; seed++ {
		ep := episode(t, tk, seed, keys("ctrl", "end"), typeText("3. Pack the demo laptop."), click("dock/mail"),
			click("mail/msg:0"), click("mail/msg:1"), keys("ctrl", "s"), finish("done"))
		in := input(t, ep)
		hidden := true
		for _, s := range in.Screens {
			_, status := s.StatusBar("editor")
			hidden = hidden && s.Find("editor/title") == nil && s.Find("editor/text") == nil && !status
		}
		if !hidden {
			continue
		}
		t.Logf("seed %d", seed)
		checkMisled(t, in, Failure)
		return
	}
	t.Fatal("no seed hides the editor behind Mail")
}

func TestSettingChangedThenCancelled(t *testing.T) {
	tk := task("scenario-setting", "settings", `Set "Device name" in the General settings to lab-7.`,
		[]simdesk.SetupStep{simdesk.Step("open_app", map[string]string{"app": "settings"})},
		judge.Build("and", judge.Criterion{Func: "exact_match", Result: &judge.Getter{Type: "setting", Key: "general.device_name"},
			Expected: &judge.Getter{Type: "rule", Rules: &judge.Rules{Expected: "lab-7"}}}))
	// The agent types the new name into the field and leaves for the file
	// manager without confirming: the field showed "lab-7", the setting
	// never changed.
	ep := episode(t, tk, 3, click("settings/set:general.device_name"), keys("ctrl", "a"), typeText("lab-7"), click("dock/files"), finish("done"))
	checkMisled(t, input(t, ep), Failure)
}

func TestCorrectFileInWrongFolder(t *testing.T) {
	tk := task("scenario-folder", "editor", "Use the text editor to create ~/Documents/memo.txt containing exactly this text:\nShip it on Friday.",
		nil, fileJudge("~/Documents/memo.txt", "Ship it on Friday."))
	// The right text, saved as ~/Desktop/memo.txt: the editor shows
	// memo.txt, saved, with the right text.
	ep := episode(t, tk, 5, click("dock/editor"), typeText("Ship it on Friday."), keys("ctrl", "s"), keys("ctrl", "a"),
		typeText("~/Desktop/memo.txt\n"), finish("done"))
	in := input(t, ep)
	last := in.Screens[len(in.Screens)-1]
	if title, _ := last.Title("editor"); title != "memo.txt - Text Editor" {
		t.Fatalf("the final screen should show the saved memo.txt, shows %q", title)
	}
	checkMisled(t, in, Failure)
}

func TestHiddenSuccessIsConfirmed(t *testing.T) {
	// A success whose evidence is hidden: passive guesses right from the
	// agent's ending; the probe confirms it.
	tk := task("scenario-hidden", "editor", "Use the text editor to create ~/Documents/memo.txt containing exactly this text:\nShip it on Friday.",
		nil, fileJudge("~/Documents/memo.txt", "Ship it on Friday."))
	ep := episode(t, tk, 5, click("dock/editor"), typeText("Ship it on Friday."), keys("ctrl", "s"), keys("ctrl", "a"),
		typeText("~/Documents/memo.txt\n"), click("dock/settings"), click("dock/files"), finish("done"))
	in := input(t, ep)
	passive, builtin, _ := verifyAll(t, in)
	if in.Outcome != Success || builtin.Verdict != Success || passive.Verdict != Success {
		t.Fatalf("outcome %s, builtin %s, passive %s", in.Outcome, builtin.Verdict, passive.Verdict)
	}
	if passive.Reward != RewardCorrect || (builtin.ProbeUsed && builtin.Reward != RewardCorrectProbe) {
		t.Errorf("rewards passive %v builtin %v", passive.Reward, builtin.Reward)
	}
}

func TestVerifierImplementsRollout(t *testing.T) {
	tk := task("scenario-folder", "editor", "Use the text editor to create ~/Documents/memo.txt containing exactly this text:\nShip it on Friday.",
		nil, fileJudge("~/Documents/memo.txt", "Ship it on Friday."))
	ep := episode(t, tk, 5, click("dock/editor"), typeText("Ship it on Friday."), keys("ctrl", "s"), keys("ctrl", "a"),
		typeText("~/Desktop/memo.txt\n"), finish("done"))
	v := &Verifier{Runners: []*Runner{NewRunner(Builtin(), nil, true), NewRunner(Passive(), nil, true)}}
	rows, blobs, err := v.Verify(context.Background(), tk, ep)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Strategy != StrategyBuiltin || rows[1].Strategy != StrategyPassive || len(blobs) == 0 {
		t.Fatalf("rows %+v, %d blobs", rows, len(blobs))
	}
	for _, r := range rows {
		if err := schemas.Verifications.Validate(&r); err != nil {
			t.Errorf("row %s: %v", r.Strategy, err)
		}
		if r.TrajectoryID != ep.Trajectory.TrajectoryID || r.TaskID != tk.TaskID || r.Domain != "editor" || r.ExecutableOutcome != Failure {
			t.Errorf("row %+v", r)
		}
	}
}
