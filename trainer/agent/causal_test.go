package agent

import (
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/sugarme/gotch"

	"github.com/cualake/cualake/pipeline/segment"
	"github.com/cualake/cualake/pipeline/simdesk"
	"github.com/cualake/cualake/schemas"
	"github.com/cualake/cualake/trainer/causal"
)

// Test ids: words 1..40, the template tokens 100..104.
var testSpecial = causal.Special{ImStart: 100, ImEnd: 101, VisionStart: 102, VisionEnd: 103, ImagePad: 104}

// testPolicy serves a small random causal model over the test ids (no
// tokenizer: generate works on ids, the validity test is the caller's).
func testPolicy(t *testing.T, greedy bool, redraws int) *causalEpisode {
	t.Helper()
	var ids []int32
	for i := int32(1); i <= 40; i++ {
		ids = append(ids, i)
	}
	ids = append(ids, testSpecial.ImStart, testSpecial.ImEnd, testSpecial.VisionStart, testSpecial.VisionEnd, testSpecial.ImagePad)
	im, err := causal.NewIDMap(ids)
	if err != nil {
		t.Fatal(err)
	}
	cfg := causal.Config{VocabSize: im.Size(), Dim: 16, Heads: 2, Layers: 2, FFNDim: 32, MaxContext: 1024,
		ImageCols: 2, ImageRows: 1, PatchSize: 2, MaxResponse: 6}
	m, err := causal.New(cfg, im, testSpecial, "test@sha256:0", gotch.CPU, 11)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	temp := 0.8
	if greedy {
		temp = 1
	}
	c := &Causal{m: m, codec: &segment.Codec{ImStart: testSpecial.ImStart, ImEnd: testSpecial.ImEnd,
		VisionStart: testSpecial.VisionStart, VisionEnd: testSpecial.VisionEnd, ImagePad: testSpecial.ImagePad},
		temp: temp, greedy: greedy, redraws: redraws}
	e := &causalEpisode{c: c, dec: m.NewDecoder()}
	t.Cleanup(e.dec.Close)
	return e
}

var testContext = &segment.Item{IDs: []int32{100, 3, 7, 9, 12, 101, 100, 5, 8}}

// teacherForced returns the model's log-probability of each response token
// after the context, from a fresh decoder, and each position's
// distribution.
func teacherForced(t *testing.T, e *causalEpisode, resp []int32) ([]float32, [][]float32) {
	t.Helper()
	d := e.c.m.NewDecoder()
	defer d.Close()
	lp, err := d.Feed(testContext.IDs, nil, e.c.temp)
	if err != nil {
		t.Fatal(err)
	}
	var out []float32
	var dists [][]float32
	for i, tok := range resp {
		dists = append(dists, lp)
		out = append(out, lp[e.c.m.IDs().Compact(tok)])
		if i+1 < len(resp) {
			if lp, err = d.Feed([]int32{tok}, nil, e.c.temp); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out, dists
}

func sameLogprobs(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d log-probabilities, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-5 {
			t.Fatalf("%s: token %d log-probability %v, the model gives %v", what, i, got[i], want[i])
		}
	}
}

// TestRedrawGreedyIsBestFirst refuses the greedy response: the redrawn one
// must be the greedy continuation of the most probable one-token deviation
// from it (worked out here from fresh decoders), with the model's own
// log-probabilities, and the decoder must hold the context and that
// response.
func TestRedrawGreedyIsBestFirst(t *testing.T) {
	e := testPolicy(t, true, 4)
	greedy, _, draws, err := e.generate(testContext, 1, func([]int32) bool { return true })
	if err != nil || draws != 1 {
		t.Fatalf("valid first response: %v, %d draws", err, draws)
	}
	_, dists := teacherForced(t, e, greedy)
	// the best deviation: keep greedy[:i], take the best other token at i
	bestScore, bestAt, bestTok := math.Inf(-1), -1, int32(0)
	prefix := 0.0
	for i, dist := range dists {
		chosen := e.c.m.IDs().Compact(greedy[i])
		for k, v := range dist {
			if int32(k) != chosen && v > minLogProb && prefix+float64(v) > bestScore {
				bestScore, bestAt, bestTok = prefix+float64(v), i, int32(k)
			}
		}
		prefix += float64(dist[chosen])
	}
	tok, _ := e.c.m.IDs().Token(bestTok)
	want := append(slices.Clone(greedy[:bestAt]), tok)
	// continue greedily from there
	for want[len(want)-1] != testSpecial.ImEnd && len(want) < e.c.m.Config().MaxResponse {
		_, ds := teacherForced(t, e, append(slices.Clone(want), 0))
		k, _ := e.c.m.IDs().Token(int32(argmax(ds[len(want)])))
		want = append(want, k)
	}

	e2 := testPolicy(t, true, 4)
	got, logp, draws, err := e2.generate(testContext, 1, func(r []int32) bool { return !slices.Equal(r, greedy) })
	if err != nil {
		t.Fatal(err)
	}
	if draws != 2 || !slices.Equal(got, want) {
		t.Fatalf("redrawn greedy response %v after %d draws, want %v (greedy was %v)", got, draws, want, greedy)
	}
	wantLp, _ := teacherForced(t, e2, got)
	sameLogprobs(t, "redrawn greedy response", logp, wantLp)
	if held := e2.dec.Tokens(); !slices.Equal(held, append(slices.Clone(testContext.IDs), got[:len(got)-1]...)) {
		t.Fatalf("the decoder holds %v, want the context and the response but its last token", held)
	}
}

// TestRedrawSampledAndExhausted: a sampled response that is refused is
// drawn again from the same context (the result is valid and carries the
// model's log-probabilities); when every draw is refused the first
// response stands after 1 + redraws draws, and the decoder holds it.
func TestRedrawSampledAndExhausted(t *testing.T) {
	e := testPolicy(t, false, 6)
	first, _, _, err := e.generate(testContext, 3, func([]int32) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	e = testPolicy(t, false, 6)
	got, logp, draws, err := e.generate(testContext, 3, func(r []int32) bool { return r[0] != first[0] })
	if err != nil {
		t.Fatal(err)
	}
	if got[0] == first[0] || draws < 2 || draws > 7 {
		t.Fatalf("redrawn sample %v after %d draws; the first sample %v was refused", got, draws, first)
	}
	wantLp, _ := teacherForced(t, e, got)
	sameLogprobs(t, "redrawn sample", logp, wantLp)

	for _, greedy := range []bool{false, true} {
		e = testPolicy(t, greedy, 3)
		got, logp, draws, err = e.generate(testContext, 3, func([]int32) bool { return false })
		if err != nil {
			t.Fatal(err)
		}
		want := first
		if greedy {
			want, _, _, _ = testPolicy(t, true, 0).generate(testContext, 3, func([]int32) bool { return false })
		}
		if draws != 4 || !slices.Equal(got, want) {
			t.Fatalf("greedy %v, nothing valid: %v after %d draws, want the first response %v after 4", greedy, got, draws, want)
		}
		wantLp, _ = teacherForced(t, e, got)
		sameLogprobs(t, "first response", logp, wantLp)
		if held := e.dec.Tokens(); !slices.Equal(held, append(slices.Clone(testContext.IDs), got[:len(got)-1]...)) {
			t.Fatalf("greedy %v: the decoder holds %v, want the context and the first response but its last token", greedy, held)
		}
	}
	if r, _, draws, err := testPolicy(t, false, 0).generate(testContext, 3, func([]int32) bool { return false }); err != nil ||
		draws != 1 || !slices.Equal(r, first) {
		t.Fatalf("redraws 0: %v after %d draws (%v), want the first sample %v after 1", r, draws, err, first)
	}
}

// TestRedrawGreedySecondDeviation refuses the greedy response and the
// first redraw: the third response must come from the best deviation over
// both responses tried (the first's deviations at every position, the
// second's after its forced start, each scored by its whole prefix), as a
// search over fresh, teacher-forced decoders finds it.
func TestRedrawGreedySecondDeviation(t *testing.T) {
	ref := testPolicy(t, true, 4)
	maxTok := ref.c.m.Config().MaxResponse
	continueGreedy := func(p []int32) []int32 {
		out := slices.Clone(p)
		for len(out) == 0 || out[len(out)-1] != testSpecial.ImEnd && len(out) < maxTok {
			_, ds := teacherForced(t, ref, append(slices.Clone(out), 0)) // 0: a placeholder, the last distribution is all we read
			k, _ := ref.c.m.IDs().Token(int32(argmax(ds[len(out)])))
			out = append(out, k)
		}
		return out
	}
	type cand struct {
		prefix []int32
		score  float64
	}
	var cands []cand
	addDeviations := func(r []int32, from int) {
		lps, dists := teacherForced(t, ref, r)
		score := 0.0
		for i := range r {
			if i >= from {
				for k, v := range dists[i] {
					if tok, ok := ref.c.m.IDs().Token(int32(k)); ok && tok != r[i] && v > minLogProb {
						cands = append(cands, cand{append(slices.Clone(r[:i]), tok), score + float64(v)})
					}
				}
			}
			score += float64(lps[i])
		}
	}
	pop := func() []int32 {
		best := 0
		for i, c := range cands {
			if c.score > cands[best].score {
				best = i
			}
		}
		p := cands[best].prefix
		cands = slices.Delete(cands, best, best+1)
		return p
	}
	r1 := continueGreedy(nil)
	addDeviations(r1, 0)
	p2 := pop()
	r2 := continueGreedy(p2)
	addDeviations(r2, len(p2))
	r3 := continueGreedy(pop())

	e := testPolicy(t, true, 4)
	refused := func(r []int32) bool { return !slices.Equal(r, r1) && !slices.Equal(r, r2) }
	got, logp, draws, err := e.generate(testContext, 1, refused)
	if err != nil {
		t.Fatal(err)
	}
	if draws != 3 || !slices.Equal(got, r3) {
		t.Fatalf("third response %v after %d draws, want %v (refused %v and %v)", got, draws, r3, r1, r2)
	}
	wantLp, _ := teacherForced(t, e, got)
	sameLogprobs(t, "third response", logp, wantLp)
}

func TestTopK(t *testing.T) {
	v := []float32{0.1, 0.5, 0.3, 0.5, -1, 0.4}
	if got := topK(v, 3); !slices.Equal(got, []int{1, 3, 5}) {
		t.Fatalf("topK = %v, want [1 3 5]", got)
	}
	if got := topK(v, 10); !slices.Equal(got, []int{1, 3, 5, 2, 0, 4}) {
		t.Fatalf("topK(all) = %v", got)
	}
}

// TestFramePatchesEqualPNG: the simulator's frame gives the same patches,
// bit for bit, as the PNG screenshot it encodes, decoded, so the causal
// policy may read the frame instead of decoding the PNG.
func TestFramePatchesEqualPNG(t *testing.T) {
	sim, err := simdesk.NewSim(simdesk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := causal.DefaultConfig(10)
	seen := map[string]bool{}
	checked := 0
	for _, task := range simdesk.Pool() {
		if seen[task.Domain] {
			continue
		}
		seen[task.Domain] = true
		obs, err := sim.Reset(task, 1)
		if err != nil {
			t.Fatal(err)
		}
		for turn := 0; turn < 3 && !obs.Done; turn++ {
			if obs.Frame == nil || obs.Screenshot == nil {
				t.Fatalf("task %s: observation without frame or screenshot", task.TaskID)
			}
			fromPNG, err := cfg.Patches(obs.Screenshot)
			if err != nil {
				t.Fatal(err)
			}
			fromFrame, err := cfg.ImagePatches(obs.Frame)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fromPNG, fromFrame) {
				t.Fatalf("task %s turn %d: frame patches differ from the PNG's", task.TaskID, turn)
			}
			checked++
			x, y := int32(200+150*turn), int32(300+100*turn)
			if obs, err = sim.Step(schemas.Action{Kind: "click", X: &x, Y: &y}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(seen) < 5 || checked < 10 {
		t.Fatalf("checked %d screens over %d apps, want every app", checked, len(seen))
	}
	tree, err := simdesk.NewSim(simdesk.Options{TreeOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if obs, err := tree.Reset(simdesk.Pool()[0], 1); err != nil || obs.Frame != nil {
		t.Fatalf("tree-only observation: frame %v, err %v", obs.Frame != nil, err)
	}
}

// TestEpisodesDecodeAtOnce: episodes of one policy, each with its own
// decoder over the shared weights, generate on several goroutines at once
// exactly (bit for bit) what they generate one after another, turn after
// turn with redraws, as the rollout stage's workers run them.
func TestEpisodesDecodeAtOnce(t *testing.T) {
	base := testPolicy(t, false, 3)
	type turnOut struct {
		ids  []int32
		logp []float32
	}
	episode := func(k int) []turnOut {
		e := &causalEpisode{c: base.c, dec: base.c.m.NewDecoder()}
		defer e.dec.Close()
		ctx := []int32{testSpecial.ImStart, int32(1 + k%40), int32(1 + (7*k)%40), testSpecial.ImEnd, testSpecial.ImStart}
		var out []turnOut
		for turn := 0; turn < 4; turn++ {
			// refuse responses whose first token is odd: redraws happen
			ids, logp, _, err := e.generate(&segment.Item{IDs: ctx}, uint64(100*k+turn), func(r []int32) bool { return r[0]%2 == 0 })
			if err != nil {
				t.Error(err)
				return nil
			}
			out = append(out, turnOut{ids, logp})
			ctx = append(append(append(slices.Clone(ctx), ids...), testSpecial.ImStart), int32(1+(k+turn)%40), testSpecial.ImEnd, testSpecial.ImStart)
		}
		return out
	}
	const n = 8
	want := make([][]turnOut, n)
	for k := range want {
		want[k] = episode(k)
	}
	for round := 0; round < 3; round++ {
		got := make([][]turnOut, n)
		done := make(chan struct{})
		for k := range got {
			go func() {
				defer func() { done <- struct{}{} }()
				got[k] = episode(k)
			}()
		}
		for range got {
			<-done
		}
		for k := range want {
			if len(got[k]) != len(want[k]) {
				t.Fatalf("round %d episode %d: %d turns, want %d", round, k, len(got[k]), len(want[k]))
			}
			for i := range want[k] {
				g, w := got[k][i], want[k][i]
				if !slices.Equal(g.ids, w.ids) || !slices.EqualFunc(g.logp, w.logp, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
					t.Fatalf("round %d episode %d turn %d: at once %v %v, one after another %v %v", round, k, i, g.ids, g.logp, w.ids, w.logp)
				}
			}
		}
	}
}
