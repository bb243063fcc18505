package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/cualake/cualake/pipeline/rollout"
	"github.com/cualake/cualake/schemas"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// The Judge's history accumulates every round (VeriCUA section 2.2,
// H^(k+1) = H^(k) + (C^(k), e^(k))): the third Judge call of a two-probe
// verification sees the trajectory, round 1's criteria and evidence, and
// round 2's.

const (
	histA = "memo.txt is open in the Text Editor"
	histB = "~/Documents/memo.txt exists (Files > ~/Documents)"
	histC = "~/Documents/memo.txt holds exactly \"Ship it on Friday.\" (open it from Files)"
)

func histReply(a, b, c string) string {
	out, _ := json.Marshal(map[string]any{"criteria": []map[string]string{
		{"criterion": histA, "status": a}, {"criterion": histB, "status": b}, {"criterion": histC, "status": c}}, "status": Uncertain})
	return string(out)
}

// messageText is the text of a chat message's content, and how many
// images it carries.
func messageText(t *testing.T, m any) (role, text string, images int) {
	t.Helper()
	msg := m.(map[string]any)
	role = msg["role"].(string)
	switch c := msg["content"].(type) {
	case string:
		return role, c, 0
	case []any:
		var b strings.Builder
		for _, p := range c {
			part := p.(map[string]any)
			switch part["type"] {
			case "text":
				b.WriteString(part["text"].(string) + "\n")
			case "image_url":
				images++
			}
		}
		return role, b.String(), images
	}
	t.Fatalf("message content %T", msg["content"])
	return
}

func TestOpenAIJudgeHistoryAccumulates(t *testing.T) {
	srv := &scripted{
		judge: []string{
			histReply(Success, Uncertain, Uncertain),
			histReply(Success, Success, Uncertain),
			histReply(Success, Success, Uncertain),
		},
		probe: []string{
			`{"tool": "criteria", "index": 2, "status": "success", "note": "R1-NOTE Documents lists memo.txt"}`,
			`{"tool": "answer"}`,
			`{"tool": "criteria", "index": 3, "status": "uncertain", "note": "R2-NOTE the file would not open"}`,
			`{"tool": "answer"}`,
		}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	in := wrongFolderInput(t)
	att, err := openaiRunner(t, ts).Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if att.Rounds != 3 || att.Verdict != Uncertain || len(srv.judgeReqs) != 3 {
		t.Fatalf("rounds %d verdict %s, %d Judge requests; want 3, uncertain, 3", att.Rounds, att.Verdict, len(srv.judgeReqs))
	}
	// H^(2) = psi(tau) + (C^(0), e^(0)) + (C^(1), e^(1)): one user turn for
	// the trajectory, then per round the Judge's criteria as its own turn
	// and the Probe's evidence as the next user turn.
	msgs := srv.judgeReqs[2]["messages"].([]any)
	var roles []string
	for _, m := range msgs {
		r, _, _ := messageText(t, m)
		roles = append(roles, r)
	}
	if strings.Join(roles, ",") != "system,user,assistant,user,assistant,user" {
		t.Fatalf("third Judge request roles %v, want the trajectory and both rounds", roles)
	}
	_, traj, trajImages := messageText(t, msgs[1])
	if !strings.Contains(traj, "Action History") || !strings.Contains(traj, "Step 1. click") || trajImages != len(in.Screens) {
		t.Errorf("the trajectory turn: %d images, %q", trajImages, traj)
	}
	// C^(0) and C^(1): the Judge's criteria with the statuses it gave then.
	for k, want := range [][]string{{Success, Uncertain, Uncertain}, {Success, Success, Uncertain}} {
		_, text, _ := messageText(t, msgs[2+2*k])
		var r judgeReply
		if err := json.Unmarshal([]byte(text), &r); err != nil || len(r.Criteria) != 3 {
			t.Fatalf("round %d's Judge turn %q: %v", k+1, text, err)
		}
		for i, c := range r.Criteria {
			if c.Criterion != []string{histA, histB, histC}[i] || c.Status != want[i] {
				t.Errorf("round %d's criterion %d: %+v, want status %s", k+1, i+1, c, want[i])
			}
		}
	}
	// e^(0) and e^(1): each round's Probe notes and evidence screenshot.
	_, e0, img0 := messageText(t, msgs[3])
	_, e1, img1 := messageText(t, msgs[5])
	if !strings.Contains(e0, "R1-NOTE") || strings.Contains(e0, "R2-NOTE") || img0 != 1 || !strings.Contains(e0, histB+":success") {
		t.Errorf("round 1's evidence turn (%d images): %q", img0, e0)
	}
	if !strings.Contains(e1, "R2-NOTE") || img1 != 1 || !strings.Contains(e1, histC+":uncertain") {
		t.Errorf("round 2's evidence turn (%d images): %q", img1, e1)
	}
	// The second request is H^(1): the trajectory and round 1 only.
	if n := len(srv.judgeReqs[1]["messages"].([]any)); n != 4 {
		t.Errorf("second Judge request has %d messages, want 4", n)
	}
}

// notingProbe looks at every criterion it is sent, cannot decide it, and
// reports a note and an evidence screenshot per round.
type notingProbe struct{ round int }

func (p *notingProbe) Probe(_ context.Context, req ProbeRequest) (ProbeReport, error) {
	p.round++
	shot := schemas.Blob{Hash: fmt.Sprintf("shot-of-round-%d", p.round), Mime: "image/png", Bytes: []byte{byte(p.round)}}
	rep := ProbeReport{Criteria: cloneCriteria(req.Criteria), Evidence: []schemas.Blob{shot}}
	for _, i := range req.Order {
		c := &rep.Criteria[i]
		c.Note, c.tried = fmt.Sprintf("probe: R%d-NOTE looked, could not tell", p.round), true
		c.Evidence = append(c.Evidence, shot.Hash)
	}
	return rep, nil
}

// recordingJudge keeps what a Judge was asked and answered.
type recordingJudge struct {
	inner Judge
	reqs  []*JudgeRequest
	outs  []*Judgment
}

func (r *recordingJudge) Judge(ctx context.Context, req *JudgeRequest) (*Judgment, error) {
	out, err := r.inner.Judge(ctx, req)
	r.reqs, r.outs = append(r.reqs, req), append(r.outs, out)
	return out, err
}

func TestBuiltinJudgeHistoryAccumulates(t *testing.T) {
	in := wrongFolderInput(t)
	rec := &recordingJudge{inner: &BuiltinJudge{Strategy: Builtin()}}
	r := &Runner{Name: StrategyBuiltin, Judge: rec, Probe: &notingProbe{}, MaxRounds: 2, StepsPerRound: 15}
	att, err := r.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if att.Rounds != 3 || att.Verdict != Uncertain || len(rec.reqs) != 3 {
		t.Fatalf("rounds %d verdict %s; want 3 Judge rounds ending uncertain", att.Rounds, att.Verdict)
	}
	// The third round's input is H^(2): both rounds, each with the
	// criteria as the Judge wrote and sent them and the Probe's evidence.
	if len(rec.reqs[0].History) != 0 || len(rec.reqs[1].History) != 1 || len(rec.reqs[2].History) != 2 {
		t.Fatalf("history lengths %d, %d, %d; want 0, 1, 2", len(rec.reqs[0].History), len(rec.reqs[1].History), len(rec.reqs[2].History))
	}
	for k, h := range rec.reqs[2].History {
		judged := rec.outs[k]
		if FormatCriteria(h.Criteria) != FormatCriteria(judged.Criteria) || !slices.Equal(h.Sent, judged.Order) || len(h.Sent) == 0 {
			t.Errorf("round %d: criteria\n%ssent %v; the Judge gave\n%sorder %v", k+1, FormatCriteria(h.Criteria), h.Sent, FormatCriteria(judged.Criteria), judged.Order)
		}
		if len(h.Evidence) != 1 || h.Evidence[0].Hash != fmt.Sprintf("shot-of-round-%d", k+1) {
			t.Errorf("round %d evidence %v", k+1, h.Evidence)
		}
		for _, i := range h.Sent {
			if !strings.Contains(h.Probed[i].Note, fmt.Sprintf("R%d-NOTE", k+1)) {
				t.Errorf("round %d: criterion %d after probing: %q", k+1, i+1, h.Probed[i].Note)
			}
		}
	}
	if FormatCriteria(rec.reqs[1].History[0].Probed) != FormatCriteria(rec.reqs[2].History[0].Probed) {
		t.Error("round 1 changed in the history between the second and third Judge rounds")
	}
	// The Judge's record of a criterion probed twice keeps both rounds'
	// findings and both screenshots.
	probed := 0
	for _, c := range att.Criteria {
		if !strings.Contains(c.Note, "R2-NOTE") {
			continue
		}
		probed++
		if !strings.Contains(c.Note, "R1-NOTE") || !slices.Equal(c.Evidence[len(c.Evidence)-2:], []string{"shot-of-round-1", "shot-of-round-2"}) {
			t.Errorf("criterion %q: note %q, evidence %v; want both rounds", c.Text, c.Note, c.Evidence)
		}
	}
	if probed == 0 {
		t.Fatalf("no criterion was probed in round 2: %s", FormatCriteria(att.Criteria))
	}
}

// An attempt whose trajectory has no executable outcome is unresolved
// (VeriCUA table 9: "the executable evaluator returns no metadata"): its row
// carries -1.0, the metrics count it as unresolved, and Judge training
// scores it -1.0. The Actor's reward still follows the verdict.
func TestNoExecutableOutcomeIsUnresolved(t *testing.T) {
	tk := task("scenario-hidden", "editor", "Use the text editor to create ~/Documents/memo.txt containing exactly this text:\nShip it on Friday.",
		nil, fileJudge("~/Documents/memo.txt", "Ship it on Friday."))
	ep := episode(t, tk, 5, click("dock/editor"), typeText("Ship it on Friday."), keys("ctrl", "s"), keys("ctrl", "a"),
		typeText("~/Documents/memo.txt\n"), finish("done"))
	// An imported log without a judge: no outcome, no judge detail.
	ep.Trajectory.Outcome, ep.Trajectory.JudgeDetail, ep.Trajectory.Reward = schemas.OutcomeIncomplete, "", 0
	v := &Verifier{Runners: []*Runner{NewRunner(Passive(), nil, false), NewRunner(Builtin(), nil, false)}}
	if err := rollout.ApplyVerifier(context.Background(), v, "verifier", ep); err != nil {
		t.Fatal(err)
	}
	if len(ep.Verifications) != 2 {
		t.Fatalf("%d rows", len(ep.Verifications))
	}
	for _, r := range ep.Verifications {
		if r.ExecutableOutcome != "" || r.Reward != RewardUnresolved || r.Verdict != Success {
			t.Errorf("%s: outcome %q verdict %s reward %v; want no outcome, the Judge's verdict, reward -1", r.Strategy, r.ExecutableOutcome, r.Verdict, r.Reward)
		}
		if err := schemas.Verifications.Validate(&r); err != nil {
			t.Errorf("%s: %v", r.Strategy, err)
		}
	}
	if ep.Trajectory.Reward != 1 {
		t.Errorf("the Actor's verifier reward is %v, want 1 for a success verdict", ep.Trajectory.Reward)
	}
	// Metrics: one scored success and the unscoreable row, per strategy.
	scored := ep.Verifications[0]
	scored.TrajectoryID, scored.ExecutableOutcome, scored.Reward = "other", Success, RewardCorrect
	var all Metrics
	for _, m := range Summarize([]schemas.Verification{scored, ep.Verifications[0]}) {
		if m.Domain == AllDomains {
			all = m
		}
	}
	if all.N != 2 || all.Agree != 1 || all.Unresolved != 1 || all.NoOutcome != 1 || all.Agreement != 0.5 || all.MeanReward != 0 {
		t.Errorf("metrics %+v; want n 2, 1 agreeing, 1 unresolved without outcome, mean reward (1 - 1) / 2", all)
	}
	// Training: the attempt is scored -1 like any unresolved one.
	in := input(t, ep)
	if in.Outcome != "" {
		t.Fatalf("input outcome %q", in.Outcome)
	}
	att, err := NewRunner(Builtin(), rand.New(rand.NewPCG(1, 2)), false).Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	st, err := update(Builtin(), []*Input{in}, []*Attempt{att}, trainParams(), &adam{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Attempts != 1 || st.MeanReward != RewardUnresolved {
		t.Errorf("training stats %+v; want 1 attempt at -1", st)
	}
}

func trainParams() TrainParams {
	p := TrainParams{}
	p.defaults()
	return p
}
