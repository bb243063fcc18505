package trainer

import (
	"github.com/cualake/cualake/pipeline/advantage"

	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/sugarme/gotch"

	"github.com/cualake/cualake/trainer/policy"
)

// synthTask is a context/action pair of the synthetic grounding task: the
// instruction names a widget, the observation lists widgets with their
// coordinates, and the action clicks the named one (or types a word).
type synthTask struct{ context, action string }

var widgetNames = []string{"save", "open", "close", "cancel", "ok", "next", "back", "help", "search", "print", "copy", "paste"}

func synthTasks(n int, seed uint64) []synthTask {
	rng := rand.New(rand.NewPCG(seed, 99))
	var out []synthTask
	for len(out) < n {
		perm := rng.Perm(len(widgetNames))[:4]
		var obs []string
		xs, ys := make([]int, 4), make([]int, 4)
		for i, w := range perm {
			xs[i], ys[i] = rng.IntN(1000), rng.IntN(1000)
			obs = append(obs, fmt.Sprintf("button %s x:%d y:%d", widgetNames[w], xs[i], ys[i]))
		}
		target := rng.IntN(4)
		var instr, act string
		if len(out)%4 == 3 {
			word := widgetNames[rng.IntN(len(widgetNames))]
			instr = "type " + word + " in the search box"
			act = "type " + word
		} else {
			instr = "click the " + widgetNames[perm[target]] + " button"
			act = fmt.Sprintf("click x:%d y:%d", xs[target], ys[target])
		}
		ctx := "<|im_start|>user " + instr + "<|im_end|><|im_start|>observation " + strings.Join(obs, " ; ") + "<|im_end|>"
		out = append(out, synthTask{ctx, act})
	}
	return out
}

func synthVocab(t testing.TB, tasks []synthTask) *policy.Vocab {
	var corpus []string
	for _, tk := range tasks {
		corpus = append(corpus, tk.context, tk.action)
	}
	v, err := policy.NewVocab(corpus, policy.VocabOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func synthItems(v *policy.Vocab, tasks []synthTask) []Item {
	var out []Item
	for _, tk := range tasks {
		out = append(out, Item{Context: v.Encode(tk.context), Action: append(v.Encode(tk.action), policy.EOSID)})
	}
	return out
}

func batchesOf(items []Item, size int) [][]Item {
	var out [][]Item
	for i := 0; i < len(items); i += size {
		out = append(out, items[i:min(i+size, len(items))])
	}
	return out
}

func exactMatch(t testing.TB, p *policy.Policy, items []Item) float64 {
	var in []policy.Input
	for _, it := range items {
		in = append(in, policy.Input{Tokens: it.Context})
	}
	got, err := p.Greedy(in, 0)
	if err != nil {
		t.Fatal(err)
	}
	hit := 0
	for i, it := range items {
		if fmt.Sprint(got[i].Tokens) == fmt.Sprint(it.Action) {
			hit++
		}
	}
	return float64(hit) / float64(len(items))
}

// TestSFTSynthetic trains on the synthetic grounding task and requires >90%
// exact-match greedy accuracy on it.
func TestSFTSynthetic(t *testing.T) {
	tasks := synthTasks(64, 1)
	v := synthVocab(t, tasks)
	items := synthItems(v, tasks)
	p, err := policy.New(policy.DefaultConfig(v.VocabSize()), v, gotch.CPU, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	before := exactMatch(t, p, items)
	// 3e-3 rather than DefaultSFTLR: a 200-step schedule keeps the test short
	ms, err := SFT(p, batchesOf(items, 16), SFTOptions{Epochs: 50, Seed: 1, LR: 3e-3})
	if err != nil {
		t.Fatal(err)
	}
	last := ms[len(ms)-1]
	acc := exactMatch(t, p, items)
	t.Logf("%d steps: first loss %.3f, last loss %.4f, token acc %.3f, grad norm %.3f; exact match %.3f -> %.3f",
		len(ms), ms[0].Loss, last.Loss, last.TokenAccuracy, last.GradNorm, before, acc)
	if acc <= 0.9 {
		t.Errorf("exact-match greedy accuracy %.3f, want > 0.9", acc)
	}
}

// vocabJSON encodes a hand-made token list as a vocabulary.
func vocabJSON(toks []string) []byte {
	js, _ := json.Marshal(map[string]any{"format": "cualake-policy-vocab/1", "coord_step": 20, "tokens": toks})
	return js
}

// bandit is a one-token, four-arm bandit in a tiny vocabulary: arm a2 pays 1.
func bandit(t *testing.T) (*policy.Policy, policy.Input, int32) {
	toks := append(append([]string{}, policy.SpecialTokens...), "pick", "a0", "a1", "a2", "a3")
	v, err := policy.UnmarshalVocab(vocabJSON(toks))
	if err != nil {
		t.Fatal(err)
	}
	cfg := policy.DefaultConfig(v.VocabSize())
	cfg.Dim, cfg.FFNDim, cfg.MaxAction = 32, 64, 1
	p, err := policy.New(cfg, v, gotch.CPU, 3)
	if err != nil {
		t.Fatal(err)
	}
	win, _ := v.TokenID("a2")
	return p, policy.Input{Tokens: v.Encode("<|im_start|> pick <|im_end|>")}, win
}

func winProb(t *testing.T, p *policy.Policy, in policy.Input, win int32) float64 {
	lp, err := p.LogProbs([]policy.Input{in}, [][]int32{{win}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	return math.Exp(float64(lp[0][0]))
}

// TestGRPOBandit: GRPO with group-relative advantages raises the expected
// reward of the bandit within a fixed number of seeded steps.
func TestGRPOBandit(t *testing.T) {
	p, in, win := bandit(t)
	defer p.Close()
	ref, err := p.Clone()
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	opt, err := NewOptimizer(p, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Close()
	opts := DefaultGRPOOptions()
	opts.Temperature = 1
	start := winProb(t, p, in, win)
	const group, steps = 16, 60
	var m GRPOMetrics
	for step := 0; step < steps; step++ {
		inputs := make([]policy.Input, group)
		for i := range inputs {
			inputs[i] = in
		}
		acts, err := p.Sample(inputs, policy.SampleOptions{Temperature: 1, TopP: 1, Seed: uint64(step)})
		if err != nil {
			t.Fatal(err)
		}
		rewards := make([]float64, group)
		for i, a := range acts {
			if a.Tokens[0] == win {
				rewards[i] = 1
			}
		}
		adv, err := advantage.GroupAdvantages(rewards, advantage.DefaultGRPO())
		if err != nil {
			t.Fatal(err)
		}
		batch := make([]Item, group)
		for i, a := range acts {
			batch[i] = Item{Context: in.Tokens, Action: a.Tokens, OldLogp: a.Logp, Advantage: float32(adv[i])}
		}
		if m, err = GRPOStep(p, ref, opt, batch, opts); err != nil {
			t.Fatal(err)
		}
		if step == 0 && math.Abs(m.RatioMean-1) > 1e-5 {
			t.Errorf("on-policy ratio mean %v, want 1", m.RatioMean)
		}
	}
	end := winProb(t, p, in, win)
	t.Logf("P(a2) %.3f -> %.3f after %d steps; last: %+v", start, end, steps, m)
	if end < 0.8 || end < start+0.5 {
		t.Errorf("P(rewarded arm) went %.3f -> %.3f, want >= 0.8", start, end)
	}
	if m.KL <= 0 {
		t.Errorf("KL to the reference is %v after training, want > 0", m.KL)
	}
}

// TestGRPORecomputesOldLogp: items without OldLogp are treated as on-policy.
func TestGRPORecomputesOldLogp(t *testing.T) {
	p, in, win := bandit(t)
	defer p.Close()
	opt, err := NewOptimizer(p, DefaultRLLR)
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Close()
	batch := []Item{{Context: in.Tokens, Action: []int32{win}, Advantage: 1}, {Context: in.Tokens, Action: []int32{win + 1}, Advantage: -1}}
	m, err := GRPOStep(p, nil, opt, batch, DefaultGRPOOptions())
	if err != nil {
		t.Fatal(err)
	}
	if m.RecomputedOldLogp != 2 || math.Abs(m.RatioMean-1) > 1e-6 || m.KL != 0 || m.Tokens != 2 {
		t.Errorf("metrics %+v: want 2 recomputed, ratio 1, no KL, 2 tokens", m)
	}
	if _, err := GRPOStep(p, nil, opt, []Item{{Context: in.Tokens, Action: []int32{win}, OldLogp: []float32{-1, -2}}}, DefaultGRPOOptions()); err == nil {
		t.Error("mismatched OldLogp length accepted")
	}
	if _, err := GRPOStep(p, nil, opt, []Item{{Context: []int32{9999}, Action: []int32{win}}}, DefaultGRPOOptions()); err == nil {
		t.Error("out-of-vocabulary context accepted")
	}
}

func trainSmall(t *testing.T, seed uint64) (*policy.Policy, []Item) {
	tasks := synthTasks(32, 5)
	v := synthVocab(t, tasks)
	items := synthItems(v, tasks)
	p, err := policy.New(policy.DefaultConfig(v.VocabSize()), v, gotch.CPU, seed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := SFT(p, batchesOf(items, 8), SFTOptions{Epochs: 3, Seed: seed}); err != nil {
		t.Fatal(err)
	}
	return p, items
}

// TestCheckpointRoundTrip: a loaded checkpoint scores and samples exactly
// like the policy it was saved from.
func TestCheckpointRoundTrip(t *testing.T) {
	p, items := trainSmall(t, 11)
	defer p.Close()
	data, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	q, err := policy.Load(data, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var in []policy.Input
	for _, it := range items[:8] {
		in = append(in, policy.Input{Tokens: it.Context})
	}
	opts := policy.DefaultSampleOptions()
	opts.Seed = 42
	a, err := p.Sample(in, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := q.Sample(in, opts)
	if err != nil {
		t.Fatal(err)
	}
	var acts [][]int32
	for i := range a {
		if fmt.Sprint(a[i]) != fmt.Sprint(b[i]) {
			t.Errorf("sample %d differs after reload: %v vs %v", i, a[i], b[i])
		}
		acts = append(acts, a[i].Tokens)
	}
	lp, err := q.LogProbs(in, acts, opts.Temperature)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		for k := range a[i].Logp {
			if d := math.Abs(float64(lp[i][k] - a[i].Logp[k])); d > 1e-5 {
				t.Errorf("item %d token %d: sampled logp %v, reloaded LogProbs %v", i, k, a[i].Logp[k], lp[i][k])
			}
		}
	}
	again, err := q.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, again) {
		t.Error("re-serialised checkpoint differs")
	}
	if _, err := policy.Load(data[:len(data)-1], gotch.CPU); err == nil {
		t.Error("truncated checkpoint loaded")
	}
}

// TestDeterministicCheckpoint: same data and seed give the same checkpoint
// bytes; another seed gives different ones.
func TestDeterministicCheckpoint(t *testing.T) {
	sum := func(seed uint64) string {
		p, _ := trainSmall(t, seed)
		defer p.Close()
		data, err := p.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(data)
		return hex.EncodeToString(h[:])
	}
	a, b, c := sum(7), sum(7), sum(8)
	t.Logf("sha256 seed 7: %s, seed 8: %s", a, c)
	if a != b {
		t.Errorf("two identical runs gave %s and %s", a, b)
	}
	if a == c {
		t.Error("different seeds gave the same checkpoint")
	}
}

func TestDevice(t *testing.T) {
	if d, err := Device("cpu"); err != nil || d.IsCuda() {
		t.Errorf("cpu: %v %v", d, err)
	}
	if _, err := Device("tpu"); err == nil {
		t.Error("unknown device accepted")
	}
	d, err := Device("cuda")
	if gotch.CudaIfAvailable().IsCuda() {
		if err != nil || !d.IsCuda() {
			t.Errorf("cuda available but Device(cuda) = %v, %v", d, err)
		}
	} else if err == nil {
		t.Error("cuda without a GPU: want ErrNoCUDA")
	}
}

// TestSFTOnDevice runs a short SFT, sampling and a checkpoint round trip on
// the device named by CUALAKE_TEST_DEVICE (e.g. "cuda"); skipped when unset.
func TestSFTOnDevice(t *testing.T) {
	name := os.Getenv("CUALAKE_TEST_DEVICE")
	if name == "" {
		t.Skip("CUALAKE_TEST_DEVICE not set")
	}
	dev, err := Device(name)
	if err != nil {
		t.Fatal(err)
	}
	tasks := synthTasks(32, 5)
	v := synthVocab(t, tasks)
	items := synthItems(v, tasks)
	p, err := policy.New(policy.DefaultConfig(v.VocabSize()), v, dev, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ms, err := SFT(p, batchesOf(items, 16), SFTOptions{Epochs: 20, LR: 3e-3})
	if err != nil {
		t.Fatal(err)
	}
	if first, last := ms[0].Loss, ms[len(ms)-1].Loss; !(last < first/2) {
		t.Errorf("loss %v -> %v on %s", first, last, name)
	}
	data, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	cpu, err := policy.Load(data, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	in := []policy.Input{{Tokens: items[0].Context}}
	a, err := p.LogProbs(in, [][]int32{items[0].Action}, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cpu.LogProbs(in, [][]int32{items[0].Action}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for k := range a[0] {
		if math.Abs(float64(a[0][k]-b[0][k])) > 1e-3 {
			t.Errorf("token %d: %s logp %v, cpu %v", k, name, a[0][k], b[0][k])
		}
	}
}
