package segment

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/chat"
	"github.com/cualake/cualake/schemas"
)

// turnStart returns where turn t's response starts in item it (which trains
// it): the (t - First)-th run of trained tokens.
func turnStart(it *Item, t int) int {
	run := -1
	for k, m := range it.Mask {
		if m == 1 && (k == 0 || it.Mask[k-1] == 0) {
			run++
			if run == t-it.First {
				return k
			}
		}
	}
	return -1
}

// pendingPrefix returns the rows a rollout has before writing turn t's
// response: every row of the earlier turns, and turn t's first row with a
// placeholder response.
func pendingPrefix(steps []schemas.Step, t int, imEndID int32) []schemas.Step {
	var out []schemas.Step
	turn := -1
	for i := range steps {
		if i == 0 || steps[i].Step != steps[i-1].Step {
			turn++
		}
		if turn < t {
			out = append(out, steps[i])
			continue
		}
		if turn == t {
			st := steps[i]
			st.ResponseIDs, st.Logprobs, st.Response = []int32{imEndID}, nil, ""
			return append(out, st)
		}
	}
	return out
}

// TestContextIsTheItemInTheMaking: for every mode and every turn, the
// context a rollout builds with Context from the turns it has so far is,
// token for token, the prefix of the item that trains that turn's
// response, up to the response; and its screenshots come from the same
// turns. So a policy that acts on Context, and records what it saw, is
// trained on exactly the streams it was sampled in.
func TestContextIsTheItemInTheMaking(t *testing.T) {
	for _, ec := range encoders(t) {
		t.Run(ec.name, func(t *testing.T) {
			c := mustCodec(t, ec.enc)
			imEndID := mustID(ec.enc, imEnd)
			r := rand.New(rand.NewPCG(7, 8))
			n := ec.n / 4
			for k := 0; k < n; k++ {
				tr, steps := randTrajectory(r, ec.enc, fmt.Sprintf("traj-%04d", k), trajOpts{maxTurns: 17, imageNames: 5, textOnly: k%7 == 0})
				for _, prm := range modeParams {
					items := segmentOK2(t, c, prepare(t, c, DefaultSystem, &tr, steps), prm)
					for turn := range items.turns {
						ctx, err := Context(c, prepare(t, c, DefaultSystem, &tr, pendingPrefix(steps, turn, imEndID)), prm)
						if err != nil {
							t.Fatal(err)
						}
						it := items.training(turn)
						pos := turnStart(it, turn)
						where := fmt.Sprintf("%s %+v turn %d", tr.TrajectoryID, prm, turn)
						if pos < 0 || !slices.Equal(ctx.IDs, it.IDs[:pos]) {
							t.Fatalf("%s: context of %d tokens is not the first %d of its item's %d", where, len(ctx.IDs), pos, len(it.IDs))
						}
						if !slices.Equal(ctx.Mask, it.Mask[:pos]) || !slices.Equal(ctx.Logp, it.Logp[:pos]) {
							t.Fatalf("%s: the context's mask or log-probabilities differ from its item's", where)
						}
						if !slices.Equal(ctx.ImageTurns, it.ImageTurns[:len(ctx.ImageTurns)]) || len(ctx.ImageTurns) != ctx.Images {
							t.Fatalf("%s: context screenshots %v, item %v", where, ctx.ImageTurns, it.ImageTurns)
						}
						if ctx.ImageTurns[len(ctx.ImageTurns)-1] != turn {
							t.Fatalf("%s: the context does not end with the turn's own screenshot: %v", where, ctx.ImageTurns)
						}
					}
				}
			}
		})
	}
}

type segmented struct {
	items []Item
	turns []int
}

func (s segmented) training(turn int) *Item {
	for i := range s.items {
		if s.items[i].First <= turn && turn <= s.items[i].Last {
			return &s.items[i]
		}
	}
	return nil
}

func segmentOK2(t *testing.T, c *Codec, p *Prepared, prm Params) segmented {
	t.Helper()
	items, _ := segmentOK(t, c, p, prm)
	s := segmented{items: items}
	for i := range p.Turns {
		s.turns = append(s.turns, i)
	}
	return s
}

// testTree is a simdesk-style accessibility tree with a window and two
// buttons, one of them named after a word of the instruction.
func testTree(extra string) []byte {
	return []byte(`{"role":"desktop","children":[{"id":"w1","role":"window","name":"Files","center":[500,500],"children":[` +
		`{"id":"b1","role":"button","name":"Save","center":[100,200]},` +
		`{"id":"b2","role":"button","name":"` + extra + `","center":[300,400],"states":["focused"]}]}]}`)
}

// TestPointerView: the prefix shows the marked instruction, each turn its
// step counter and elements after the screenshot; a response without ids
// is written in the pointer language; recorded prompt ids are used as they
// are and must be one message with one screenshot of the right size.
func TestPointerView(t *testing.T) {
	for _, ec := range encoders(t) {
		t.Run(ec.name, func(t *testing.T) {
			c := mustCodec(t, ec.enc)
			spec := chat.ImageSpec{FixedTokens: 3}
			tpl, err := chat.New(c.Enc, spec)
			if err != nil {
				t.Fatal(err)
			}
			b, err := NewBuilder(c, tpl, DefaultSystem)
			if err != nil {
				t.Fatal(err)
			}
			b.WithView(ViewPointer)
			trees := map[string][]byte{"t0": testTree("Open"), "t1": testTree("Close")}
			tree := func(st *schemas.Step) ([]byte, error) { return trees[st.A11y], nil }
			x, y := int32(100), int32(200)
			tr := schemas.Trajectory{TrajectoryID: "r1", TaskID: "task", GroupID: "g"}
			steps := []schemas.Step{
				{TrajectoryID: "r1", Step: 0, ActionKind: "click", X: &x, Y: &y, Observation: "png0", A11y: "t0"},
				{TrajectoryID: "r1", Step: 1, ActionKind: "done", Observation: "png1", A11y: "t1", ResponseIDs: c.Encode("done")},
			}
			instr := `Press "Save" now`
			p, err := b.Prepare(Input{Trajectory: &tr, Steps: steps, Instruction: instr, Tree: tree})
			if err != nil {
				t.Fatal(err)
			}
			items, _, err := Segment(c, p, Params{Mode: ModeTrajectory})
			if err != nil {
				t.Fatal(err)
			}
			text := c.Enc.Decode(items[0].IDs)
			for _, want := range []string{"task w0 press q1 w1 \"save\" w2 now", "s0 screen e0 window files e1 button save e2 button open focused",
				"s1 screen e0 window files e1 button save e2 button close focused", "assistant\nclick q1<|im_end|>"} {
				if !strings.Contains(text, want) {
					t.Fatalf("item lacks %q:\n%s", want, text)
				}
			}
			if !slices.Equal(items[0].ImageTurns, []int{0, 1}) || p.Turns[1].Image != "png1" {
				t.Fatalf("screenshots %v", items[0].ImageTurns)
			}
			// The turn rendered from its tree equals ObservationIDs, which
			// is what a rollout records; recorded ids are used unchanged.
			screen, _, err := ScreenText(1, trees["t1"], instr)
			if err != nil {
				t.Fatal(err)
			}
			obs, err := b.ObservationIDs(0, 0, screen)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Turns[1].Fresh.Chunks[0], obs) {
				t.Fatal("the rendered observation differs from ObservationIDs")
			}
			rec := slices.Clone(steps)
			rec[1].PromptIDs = obs
			rec[1].A11y = "" // not needed once the prompt is recorded
			p2, err := b.Prepare(Input{Trajectory: &tr, Steps: rec, Instruction: instr, Tree: tree})
			if err != nil {
				t.Fatal(err)
			}
			items2, _, _ := Segment(c, p2, Params{Mode: ModeTrajectory})
			if !slices.Equal(items2[0].IDs, items[0].IDs) {
				t.Fatal("recorded prompt ids give another item")
			}
			other := slices.Clone(obs)
			other[len(other)-3] = c.Encode("x")[0] // the screen text changed: used as recorded
			rec[1].PromptIDs = other
			p3, err := b.Prepare(Input{Trajectory: &tr, Steps: rec, Instruction: instr, Tree: tree})
			if err != nil {
				t.Fatal(err)
			}
			if items3, _, _ := Segment(c, p3, Params{Mode: ModeTrajectory}); slices.Equal(items3[0].IDs, items[0].IDs) {
				t.Fatal("recorded prompt ids were not used")
			}
			pad, vs := mustID(ec.enc, imagePad), mustID(ec.enc, visionStart)
			bad := map[string][]int32{
				"the image spec gives 3": slices.Insert(slices.Clone(obs), slices.Index(obs, pad), pad),
				"a second screenshot":    slices.Insert(slices.Clone(obs), len(obs)-2, vs),
				"not one message":        obs[1:],
			}
			for want, ids := range bad {
				rec[1].PromptIDs = ids
				_, err := b.Prepare(Input{Trajectory: &tr, Steps: rec, Instruction: instr, Tree: tree})
				if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `step 1: prompt_ids`) {
					t.Errorf("%s: %v", want, err)
				}
			}
			// without a tree the pointer view cannot render a turn
			if _, err := b.Prepare(Input{Trajectory: &tr, Steps: steps, Instruction: instr}); err == nil || !strings.Contains(err.Error(), "step 0: a11y") {
				t.Errorf("no tree: %v", err)
			}
		})
	}
}
