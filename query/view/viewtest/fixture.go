// Package viewtest builds a small lake with what the viewer pages show:
// a task, a rollout group of two with screenshots, trees, segments and a
// verification, and a tree-only evaluation episode. It is for tests only.
package viewtest

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/lake"
	"github.com/cualake/cualake/schemas"
)

func i32(v int32) *int32     { return &v }
func f64(v float64) *float64 { return &v }
func pngOf(t testing.TB, w, h int, shade uint8) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{shade, uint8(x), uint8(y), 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Words decodes id n as the word "wN": a stand-in for the tokenizer the
// fixture's segments name.
type Words struct{}

// Decode implements view.Decoder.
func (Words) Decode(ids []int32) string {
	var out []string
	for _, id := range ids {
		out = append(out, "w"+itoa(int(id)))
	}
	return strings.Join(out, " ")
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var d []byte
	for n > 0 {
		d = append([]byte{byte('0' + n%10)}, d...)
		n /= 10
	}
	if neg {
		return "-" + string(d)
	}
	return string(d)
}

const tree = `{"role":"desktop","bounds":[0,0,200,100],"center":[500,500],"children":[` +
	`{"role":"window","name":"Files","bounds":[10,10,180,80],"center":[500,500],"children":[` +
	`{"id":"b1","role":"button","name":"Save","bounds":[20,20,40,16],"center":[200,280]}]}]}`

// IDs of the fixture.
const (
	Task       = "files-001"
	Group      = "files-001@it001"
	Success    = "files-001@it001#00" // three steps: click, drag, scroll + type
	Failure    = "files-001@it001#01" // one hotkey step that was a no-op
	TreeOnly   = "eval:files-001@it001#00"
	TreeOnlyGr = "eval:files-001@it001"
)

// Fixture is the lake with its snapshot and blobs.
type Fixture struct {
	Lake         *lake.Lake
	Snap         *lake.Manifest
	Shot1, Shot2 schemas.Blob // screenshots, 200x100
	Tree, Evid   schemas.Blob // an accessibility tree, a probe's evidence
}

// New commits the fixture into a new lake in dir.
func New(t testing.TB, dir string) *Fixture {
	t.Helper()
	ctx := context.Background()
	l, err := lake.OpenDir(ctx, dir, true)
	if err != nil {
		t.Fatal(err)
	}
	blob := func(b []byte, mime string, w, h int32) schemas.Blob {
		return schemas.Blob{Hash: schemas.HashBytes(b), Mime: mime, Size: int64(len(b)), Width: w, Height: h, Bytes: b}
	}
	f := &Fixture{Lake: l}
	f.Shot1 = blob(pngOf(t, 200, 100, 10), "image/png", 200, 100)
	f.Shot2 = blob(pngOf(t, 200, 100, 200), "image/png", 200, 100)
	f.Evid = blob(pngOf(t, 40, 30, 99), "image/png", 40, 30)
	f.Tree = blob([]byte(tree), "application/json", 0, 0)
	tasks := []schemas.Task{{TaskID: "files-001", Domain: "files", App: "files", Instruction: "Save the <report> & close",
		Setup: `[{"type":"open","parameters":{"path":"/home/user/r.txt"}}]`, Judge: `{"func":"check_file","expected":{"value":1}}`,
		Feasible: true, Source: schemas.SourceSeed, Split: "train", Difficulty: 3}}
	trajs := []schemas.Trajectory{
		{TrajectoryID: "files-001@it001#00", TaskID: "files-001", Domain: "files", GroupID: "files-001@it001", Policy: "checkpoint",
			PolicyVersion: 2, Iteration: 1, Seed: 7, Steps: 3, Reward: 1, Outcome: schemas.OutcomeSuccess, JudgeDetail: `{"check_file":{"score":1,"message":"saved"}}`, Source: "rollout"},
		{TrajectoryID: "files-001@it001#01", TaskID: "files-001", Domain: "files", GroupID: "files-001@it001", Policy: "checkpoint",
			PolicyVersion: 2, Iteration: 1, Seed: 8, Steps: 1, Reward: 0, Outcome: schemas.OutcomeFailure, JudgeDetail: `{"check_file":{"score":0}}`, Source: "rollout"},
		{TrajectoryID: "eval:files-001@it001#00", TaskID: "files-001", Domain: "files", GroupID: "eval:files-001@it001", Policy: "checkpoint",
			PolicyVersion: 2, Iteration: 1, Steps: 1, Outcome: schemas.OutcomeFailure, Source: "eval"},
	}
	a, b := trajs[0].TrajectoryID, trajs[1].TrajectoryID
	steps := []schemas.Step{
		{TrajectoryID: a, Step: 0, ActionKind: "click", X: i32(200), Y: i32(280), RawAction: "click(200, 280)", Response: "I click Save.\nAction: click",
			Observation: f.Shot1.Hash, A11y: f.Tree.Hash, Info: "{}"},
		{TrajectoryID: a, Step: 1, ActionKind: "drag", X: i32(100), Y: i32(100), X2: i32(900), Y2: i32(800), Response: "drag it",
			Observation: f.Shot2.Hash, Info: "{}"},
		{TrajectoryID: a, Step: 2, Sub: 0, ActionKind: "scroll", X: i32(500), Y: i32(500), Direction: "down", Amount: 3, Response: "scroll, then type",
			Observation: f.Shot1.Hash, Info: "{}"},
		{TrajectoryID: a, Step: 2, Sub: 1, ActionKind: "type", Text: "hello <world>", Response: "scroll, then type", Observation: f.Shot1.Hash, Info: "{}"},
		{TrajectoryID: b, Step: 0, ActionKind: "hotkey", Keys: []string{"ctrl", "s"}, Response: "save", Observation: f.Shot2.Hash,
			ActionError: "no window has focus", Info: "{}"},
		{TrajectoryID: trajs[2].TrajectoryID, Step: 0, ActionKind: "click", X: i32(200), Y: i32(280), Response: "tree only", A11y: f.Tree.Hash, Info: "{}"},
	}
	// Trajectory a: one window item training turns 0..2 (three runs of
	// mask 1), one step item of b.
	segs := []schemas.Segment{
		seg(a, 0, "window", 0, 2, []int32{1, 2, 3, 9, 9, 9, 9, 9, 101, 102, 4, 5, 201, 202, 203, 6, 301}, []int8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1}, 0.707),
		seg(b, 0, "step", 0, 0, []int32{1, 2, 401, 402}, []int8{0, 0, 1, 1}, -0.707),
	}
	verifs := []schemas.Verification{{TrajectoryID: a, Strategy: "builtin", TaskID: "files-001", Domain: "files", Rounds: 2,
		Criteria: `[{"criterion":"report saved","status":"satisfied","evidence":"title bar shows r.txt"}]`, ProbeUsed: true, ProbeSteps: 2,
		ProbeTokens: 321, Evidence: []string{f.Evid.Hash}, Verdict: "success", ExecutableOutcome: "success", Reward: 1}}
	o1, o2 := 1.0, 0.5
	rates := []schemas.PassRate{
		{TaskID: "files-001", Iteration: 0, Rollouts: 4, Successes: 1, Observed: f64(0.25), EMA: f64(0.25), Weight: f64(0.75), InPool: true, Feasible: true},
		{TaskID: "files-001", Iteration: 1, Rollouts: 2, Successes: 1, Observed: &o2, EMA: &o1, InPool: true, Feasible: true},
	}
	tx, err := l.Begin(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		lake.ReplaceTable(ctx, tx, schemas.Tasks, tasks), lake.ReplaceTable(ctx, tx, schemas.Trajectories, trajs),
		lake.ReplaceTable(ctx, tx, schemas.Steps, steps), lake.ReplaceTable(ctx, tx, schemas.Segments, segs),
		lake.ReplaceTable(ctx, tx, schemas.Verifications, verifs), lake.ReplaceTable(ctx, tx, schemas.PassRates, rates),
		lake.ReplaceTable(ctx, tx, schemas.Blobs, []schemas.Blob{f.Shot1, f.Shot2, f.Evid, f.Tree}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if f.Snap, err = tx.Commit(ctx, lake.CommitInfo{Stage: "fixture"}); err != nil {
		t.Fatal(err)
	}
	return f
}

func seg(tid string, idx int32, mode string, first, last int32, ids []int32, mask []int8, adv float64) schemas.Segment {
	s := schemas.Segment{SegmentID: tid + "/" + itoa(int(idx)), TrajectoryID: tid, TaskID: "files-001", GroupID: "files-001@it001", Index: idx,
		Mode: mode, InputIDs: ids, LossMask: mask, Logprobs: make([]float32, len(ids)), Tokens: int32(len(ids)), FirstStep: first, LastStep: last,
		Advantage: adv, Tokenizer: "words@sha256:0123456789abcdef", HasLogprobs: true}
	for _, m := range mask {
		s.TrainableTokens += int32(m)
	}
	return s
}
