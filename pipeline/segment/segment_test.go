package segment

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cualake/cualake/pipeline/chat"
	"github.com/cualake/cualake/pipeline/tokenizer"
	"github.com/cualake/cualake/schemas"
)

// simulateItems counts items by walking Algorithm 2's screenshot counter,
// independently of ExpectedItems' closed form.
func simulateItems(T, K, D int) int {
	if T == 0 {
		return 0
	}
	items, n := 0, 1
	for t := 0; t < T-1; t++ {
		if n+1 > K+D {
			items++
			n = n + 1 - D
		} else {
			n++
		}
	}
	return items + 1
}

func TestExpectedItemsFormula(t *testing.T) {
	for T := 0; T <= 80; T++ {
		for K := 1; K <= 9; K++ {
			for D := 1; D <= 9; D++ {
				p := Params{Mode: ModeWindow, K: K, Delta: D}
				if got, want := ExpectedItems(p, T), simulateItems(T, K, D); got != want {
					t.Fatalf("T=%d K=%d Delta=%d: formula %d, simulation %d", T, K, D, got, want)
				}
			}
		}
		if ExpectedItems(Params{Mode: ModeStep}, T) != T {
			t.Fatal("step items")
		}
	}
	// ScaleCUA's setting: 50 turns, K = Delta = 5 gives 9 items, not 50.
	if n := ExpectedItems(Params{Mode: ModeWindow, K: 5, Delta: 5}, 50); n != 9 {
		t.Fatalf("T=50: %d items", n)
	}
}

type encoderCase struct {
	name string
	enc  tokenizer.Encoder
	n    int // trajectories
}

func encoders(t *testing.T) []encoderCase {
	cases := []encoderCase{{"fake", newFakeEncoder(), 300}}
	if testing.Short() {
		return cases
	}
	return append(cases, encoderCase{"qwen", qwen(t), 120})
}

var modeParams = []Params{
	{Mode: ModeTrajectory},
	{Mode: ModeStep, Window: 0},
	{Mode: ModeStep, Window: 2},
	{Mode: ModeStep, Window: 5},
	{Mode: ModeWindow, K: 1, Delta: 1},
	{Mode: ModeWindow, K: 2, Delta: 3},
	{Mode: ModeWindow, K: 3, Delta: 1},
	{Mode: ModeWindow, K: 5, Delta: 5},
}

func newBuilder(t testing.TB, c *Codec, system string) *Builder {
	t.Helper()
	tpl, err := chat.New(c.Enc, chat.DefaultImageSpec())
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBuilder(c, tpl, system)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func prepare(t testing.TB, c *Codec, system string, tr *schemas.Trajectory, steps []schemas.Step) *Prepared {
	t.Helper()
	p, err := newBuilder(t, c, system).Prepare(Input{Trajectory: tr, Steps: steps, Instruction: "Open the file " + tr.TaskID, ImageSize: imageSizeOf})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func segmentOK(t testing.TB, c *Codec, p *Prepared, prm Params) ([]Item, int) {
	t.Helper()
	items, merges, err := Segment(c, p, prm)
	if err != nil {
		t.Fatal(err)
	}
	return items, merges
}

// TestInvariants checks, over many random trajectories, both tokenizers and
// every mode: each response token is trained in exactly one item, in order,
// with its log-probability; item counts follow the formulas; windows hold
// at most K + Delta screenshots; counts are consistent; and the streams are
// exactly those of the literal (re-tokenize everything) algorithm.
func TestInvariants(t *testing.T) {
	for _, ec := range encoders(t) {
		t.Run(ec.name, func(t *testing.T) {
			c := mustCodec(t, ec.enc)
			r := rand.New(rand.NewPCG(1, 2))
			for k := 0; k < ec.n; k++ {
				tr, steps := randTrajectory(r, ec.enc, fmt.Sprintf("traj-%04d", k), trajOpts{maxTurns: 23, imageNames: 7, textOnly: k%9 == 0})
				for _, prm := range modeParams {
					p := prepare(t, c, DefaultSystem, &tr, steps)
					items, merges := segmentOK(t, c, p, prm)
					where := fmt.Sprintf("%s %+v", tr.TrajectoryID, prm)
					checkItems(t, where, ec.enc, prm, steps, items)
					if merges != 0 {
						t.Fatalf("%s: %d boundary merges with the Qwen template", where, merges)
					}
					want := literal(ec.enc, DefaultSystem, "Open the file "+tr.TaskID, steps, prm)
					if len(want) != len(items) {
						t.Fatalf("%s: %d items, literal algorithm %d", where, len(items), len(want))
					}
					for i := range items {
						if !slices.Equal(items[i].IDs, want[i].IDs) || !slices.Equal(items[i].Mask, want[i].Mask) ||
							!slices.Equal(items[i].Logp, want[i].Logp) || items[i].HasLogprobs != want[i].HasLogprobs {
							t.Fatalf("%s item %d differs from the literal algorithm:\n got %v\nwant %v", where, i, items[i].IDs, want[i].IDs)
						}
					}
				}
			}
		})
	}
}

func checkItems(t *testing.T, where string, enc tokenizer.Encoder, prm Params, steps []schemas.Step, items []Item) {
	t.Helper()
	rows := firstRows(steps)
	if got, want := len(items), ExpectedItems(prm, len(rows)); got != want {
		t.Fatalf("%s: %d items for %d turns, formula says %d", where, got, len(rows), want)
	}
	var wantIDs, gotIDs []int32
	var wantLp, gotLp []float32
	for i := range rows {
		ids, lp := responseTokens(enc, &rows[i])
		wantIDs = append(wantIDs, ids...)
		if lp == nil {
			lp = make([]float32, len(ids))
		}
		wantLp = append(wantLp, lp...)
	}
	vs, pad := mustID(enc, visionStart), mustID(enc, imagePad)
	next := 0
	for i, it := range items {
		if len(it.IDs) != len(it.Mask) || len(it.IDs) != len(it.Logp) {
			t.Fatalf("%s item %d: lengths %d %d %d", where, i, len(it.IDs), len(it.Mask), len(it.Logp))
		}
		if it.First != next || it.Last < it.First {
			t.Fatalf("%s item %d trains turns %d..%d, want from %d", where, i, it.First, it.Last, next)
		}
		next = it.Last + 1
		trainable, images, pads := 0, 0, 0
		for k, id := range it.IDs {
			if it.Mask[k] == 1 {
				gotIDs = append(gotIDs, id)
				gotLp = append(gotLp, it.Logp[k])
				trainable++
			} else if it.Logp[k] != 0 {
				t.Fatalf("%s item %d: logprob %v at a context token", where, i, it.Logp[k])
			}
			if id == vs {
				images++
			}
			if id == pad {
				pads++
			}
		}
		if trainable != it.Trainable || images != it.Images || pads != it.ImageTokens {
			t.Fatalf("%s item %d: counts %d/%d/%d, stream has %d/%d/%d", where, i, it.Trainable, it.Images, it.ImageTokens, trainable, images, pads)
		}
		switch prm.Mode {
		case ModeWindow:
			if it.Images > prm.K+prm.Delta {
				t.Fatalf("%s item %d holds %d screenshots > K+Delta", where, i, it.Images)
			}
		case ModeStep:
			if want := min(it.First, prm.Window) + 1; it.Images != want {
				t.Fatalf("%s item %d holds %d screenshots, want %d", where, i, it.Images, want)
			}
		case ModeTrajectory:
			if it.Images != len(rows) {
				t.Fatalf("%s: %d screenshots for %d turns", where, it.Images, len(rows))
			}
		}
	}
	if next != len(rows) {
		t.Fatalf("%s: items train turns up to %d of %d", where, next, len(rows))
	}
	if !slices.Equal(gotIDs, wantIDs) || !slices.Equal(gotLp, wantLp) {
		t.Fatalf("%s: trainable tokens are not the response tokens in order (%d vs %d)", where, len(gotIDs), len(wantIDs))
	}
}

// TestStreamEqualsRetokenization: with canonical responses (the ids the
// tokenizer itself gives their text) every item is exactly the tokenization
// of its rendered history, so the token diffs lose nothing.
func TestStreamEqualsRetokenization(t *testing.T) {
	for _, ec := range encoders(t) {
		t.Run(ec.name, func(t *testing.T) {
			c := mustCodec(t, ec.enc)
			r := rand.New(rand.NewPCG(3, 4))
			for k := 0; k < ec.n/2; k++ {
				tr, steps := randTrajectory(r, ec.enc, fmt.Sprintf("traj-%04d", k), trajOpts{maxTurns: 16, canonical: true, imageNames: 5})
				for _, prm := range modeParams {
					p := prepare(t, c, DefaultSystem, &tr, steps)
					items, _ := segmentOK(t, c, p, prm)
					for i, it := range items {
						text := ec.enc.Decode(it.IDs)
						if re := ec.enc.Encode(text); !slices.Equal(re, it.IDs) {
							t.Fatalf("%s %+v item %d: stream differs from re-tokenizing its text %q", tr.TrajectoryID, prm, i, text)
						}
					}
				}
			}
		})
	}
}

// TestRolloutTokensSurviveMerges: where BPE would merge across a boundary
// the stream keeps the rollout's tokens. (a) The policy sampled "foo" and
// "bar" as two tokens; re-tokenizing the text gives one "foobar" token, the
// item keeps both. (b) A template whose observation starts with plain text
// right after a response: the diff follows the literal formula
// Tokenize(H + o)[len(Tokenize(H)):], the merge is counted, the response's
// tokens stay.
func TestRolloutTokensSurviveMerges(t *testing.T) {
	for _, ec := range encoders(t) {
		t.Run(ec.name, func(t *testing.T) {
			enc := ec.enc
			c := mustCodec(t, enc)
			foobar := enc.Encode("foobar")
			split := append(enc.Encode("foo"), enc.Encode("bar")...)
			if len(foobar) != 1 || len(split) != 2 {
				t.Fatalf("want foobar to be one token: %v %v", foobar, split)
			}
			resp := append(slices.Clone(split), mustID(enc, imEnd))
			tr := schemas.Trajectory{TrajectoryID: "t1", TaskID: "x", GroupID: "g"}
			steps := []schemas.Step{
				{TrajectoryID: "t1", Step: 0, ActionKind: "wait", Observation: "obs-1", ResponseIDs: resp, Logprobs: []float32{-1, -2, -0.5}},
				{TrajectoryID: "t1", Step: 1, ActionKind: "done", Observation: "obs-2", Response: "done"},
			}
			for _, prm := range modeParams {
				items, _ := segmentOK(t, c, prepare(t, c, "", &tr, steps), prm)
				var trained []int32
				for _, it := range items {
					for k := range it.IDs {
						if it.Mask[k] == 1 {
							trained = append(trained, it.IDs[k])
						}
					}
					if re := enc.Encode(enc.Decode(it.IDs)); slices.Equal(re, it.IDs) && it.First == 0 {
						t.Fatalf("%+v: expected re-tokenization to merge foo+bar", prm)
					}
				}
				if !slices.Equal(trained[:3], resp) {
					t.Fatalf("%+v: trained %v, want the rollout's %v", prm, trained[:3], resp)
				}
			}

			// (b) The literal diff across a non-boundary.
			var s Stream
			s.Reset(0)
			head := c.TextPiece(imStart + "assistant\n")
			s.AppendContext(c, &head)
			s.AppendResponse(c, enc.Encode("foo"), []float32{-0.25})
			obs := c.TextPiece("bar says the screen" + imEnd + "\n")
			s.AppendContext(c, &obs)
			H := imStart + "assistant\n" + "foo"
			o := "bar says the screen" + imEnd + "\n"
			l := len(enc.Encode(H))
			want := slices.Concat(enc.Encode(imStart+"assistant\n"), enc.Encode("foo"), enc.Encode(H + o)[l:])
			if !slices.Equal(s.IDs(), want) {
				t.Fatalf("literal diff: got %v want %v", s.IDs(), want)
			}
			if s.Merges != 1 {
				t.Fatalf("merges %d, want 1", s.Merges)
			}
			if !slices.Contains(s.IDs(), enc.Encode("foo")[0]) || slices.Contains(s.IDs(), foobar[0]) {
				t.Fatalf("the rollout's foo token must stay: %v", s.IDs())
			}
			// Without a merge the same non-boundary diff is Tokenize(o).
			var s2 Stream
			s2.Reset(0)
			s2.AppendContext(c, &head)
			s2.AppendResponse(c, enc.Encode("hello"), nil)
			tail := c.TextPiece(" world" + imEnd)
			s2.AppendContext(c, &tail)
			H2 := imStart + "assistant\nhello"
			if got, want := s2.IDs()[len(s2.IDs())-len(enc.Encode(H2+" world"+imEnd))+len(enc.Encode(H2)):],
				enc.Encode(H2 + " world" + imEnd)[len(enc.Encode(H2)):]; !slices.Equal(got, want) || s2.Merges != 0 {
				t.Fatalf("non-merging diff %v want %v (merges %d)", got, want, s2.Merges)
			}
		})
	}
}

func TestCodecRejectsTokenizerWithoutVisionTokens(t *testing.T) {
	f := newFakeEncoder()
	delete(f.vocab, visionStart)
	if _, err := NewCodec(f); err == nil || !strings.Contains(err.Error(), visionStart) {
		t.Fatalf("want an error naming %s, got %v", visionStart, err)
	}
}

func TestBadInputNamesTrajectoryAndStep(t *testing.T) {
	enc := newFakeEncoder()
	c := mustCodec(t, enc)
	tr := schemas.Trajectory{TrajectoryID: "bad-1", TaskID: "x", GroupID: "g"}
	ok := schemas.Step{TrajectoryID: "bad-1", Step: 0, ActionKind: "wait", Observation: "obs-0", Response: "hi"}
	cases := []struct {
		name  string
		steps []schemas.Step
		want  string
	}{
		{"logprobs length", []schemas.Step{ok, {TrajectoryID: "bad-1", Step: 1, ActionKind: "done", ResponseIDs: []int32{20, 21, 22}, Logprobs: []float32{-1}}},
			`trajectory "bad-1" step 1: logprobs: 1 log-probabilities recorded for 3 response ids`},
		{"id outside vocab", []schemas.Step{{TrajectoryID: "bad-1", Step: 3, ActionKind: "done", ResponseIDs: []int32{20, 1 << 30}}},
			`trajectory "bad-1" step 3: response_ids: id 1073741824 at 1 is outside`},
		{"positive logprob", []schemas.Step{{TrajectoryID: "bad-1", Step: 2, ActionKind: "done", ResponseIDs: []int32{20}, Logprobs: []float32{0.5}}},
			`trajectory "bad-1" step 2: logprobs: log-probability 0.5`},
		{"repeated step", []schemas.Step{ok, ok}, `trajectory "bad-1" step 0: step: steps out of order or repeated`},
	}
	for _, tc := range cases {
		_, err := newBuilder(t, c, "").Prepare(Input{Trajectory: &tr, Steps: tc.steps, ImageSize: imageSizeOf})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	missing := func(st *schemas.Step) (int, int, error) {
		return 0, 0, fmt.Errorf("screenshot blob %s is not in the blobs table", st.Observation)
	}
	_, err := newBuilder(t, c, "").Prepare(Input{Trajectory: &tr, Steps: []schemas.Step{ok}, ImageSize: missing})
	if err == nil || !strings.Contains(err.Error(), `trajectory "bad-1" step 0: observation: screenshot blob obs-0 is not in the blobs table`) {
		t.Errorf("missing blob: %v", err)
	}
	if err := (Params{Mode: ModeWindow, K: 0, Delta: 5, Image: chat.DefaultImageSpec()}).Validate(); err == nil {
		t.Error("K = 0 accepted")
	}
	if err := (Params{Mode: ModeWindow, K: 5, Delta: 0, Image: chat.DefaultImageSpec()}).Validate(); err == nil {
		t.Error("Delta = 0 accepted")
	}
	// K + Delta must not overflow in window (a huge K ran past int).
	for _, prm := range []Params{{Mode: ModeWindow, K: math.MaxInt, Delta: 1}, {Mode: ModeWindow, K: 5, Delta: MaxK + 1},
		{Mode: ModeStep, Window: MaxK + 1}} {
		prm.Image = chat.DefaultImageSpec()
		err := prm.Validate()
		if err == nil || !strings.Contains(err.Error(), "1048576") {
			t.Errorf("%+v: Validate() = %v, want an error naming the bound 1048576", prm, err)
		}
	}
	if err := (Params{Mode: ModeWindow, K: MaxK, Delta: MaxK, Image: chat.DefaultImageSpec()}).Validate(); err != nil {
		t.Errorf("K = Delta = MaxK: %v", err)
	}
}

// The benchmark's screenshots: 1280x800 is 1000 pad tokens for Qwen3-VL.
func TestBenchmarkScreenshotTokens(t *testing.T) {
	if n, err := chat.DefaultImageSpec().Tokens(1280, 800); err != nil || n != 1000 {
		t.Fatalf("1280x800: %d %v", n, err)
	}
}
