package policy

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/sugarme/gotch"

	"github.com/cualake/cualake/trainer/internal/tx"
)

func TestMain(m *testing.M) {
	if err := tx.SetThreads(1); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

var corpus = []string{
	"<|im_start|>user Open the Settings menu and click Save<|im_end|>",
	"button Save x:120 y:340 ; button Open x:500 y:80",
	"type hello world",
	"hotkey ctrl s",
}

func testVocab(t testing.TB) *Vocab {
	v, err := NewVocab(corpus, VocabOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVocabDeterministic(t *testing.T) {
	a := testVocab(t)
	rev := append([]string(nil), corpus...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	b, err := NewVocab(rev, VocabOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := a.MarshalJSON()
	jb, _ := b.MarshalJSON()
	if !bytes.Equal(ja, jb) {
		t.Error("vocabulary depends on corpus order")
	}
	c, err := UnmarshalVocab(ja)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Tokens(), c.Tokens()) || c.CoordStep() != a.CoordStep() {
		t.Error("JSON round trip changed the vocabulary")
	}
	for i, s := range SpecialTokens {
		if id, ok := a.TokenID(s); !ok || id != int32(i) {
			t.Errorf("special %q has id %d, want %d", s, id, i)
		}
	}
}

func TestEncodeDecode(t *testing.T) {
	v := testVocab(t)
	cases := []struct{ in, want string }{
		{"<|im_start|>system click Save<|im_end|>", "<|im_start|> <unk> click Save <|im_end|>"},
		{"click x:123 y:456", "click x:120 y:440"},
		{"double_click x:999 y:0", "double_click x:980 y:0"},
		{"hotkey ctrl+s", "hotkey ctrl + s"},
		{"type hello, zebra!", "type hello , <unk> !"},
		{"  ", ""},
	}
	for _, c := range cases {
		ids := v.Encode(c.in)
		if got := v.Decode(ids); got != c.want {
			t.Errorf("Decode(Encode(%q)) = %q, want %q", c.in, got, c.want)
		}
		if again := v.Encode(v.Decode(ids)); !reflect.DeepEqual(again, ids) && len(ids) > 0 {
			t.Errorf("Encode(Decode(ids)) changed %v to %v", ids, again)
		}
	}
	if _, c, ok := v.CoordValue("x:120"); !ok || c != 130 {
		t.Errorf("CoordValue(x:120) = %d, %v; want bin centre 130", c, ok)
	}
	lower, err := NewVocab(corpus, VocabOptions{Lowercase: true, CoordStep: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := lower.Decode(lower.Encode("Click SAVE x:123")); got != "click save x:120" {
		t.Errorf("lowercase vocab: %q", got)
	}
}

func TestVocabRejectsBadJSON(t *testing.T) {
	for _, js := range []string{
		`{}`,
		`{"format":"cualake-policy-vocab/1","coord_step":20,"tokens":["<unk>","<pad>"]}`,
		`{"format":"cualake-policy-vocab/1","coord_step":0,"tokens":[]}`,
		`{"format":"cualake-policy-vocab/1","coord_step":20,"tokens":["<pad>","<unk>","<bos>","<eos>","<|im_start|>","<|im_end|>","<|vision_start|>","<|image_pad|>","<|vision_end|>","a","a"]}`,
		`not json`,
	} {
		if _, err := UnmarshalVocab([]byte(js)); err == nil {
			t.Errorf("accepted %s", js)
		}
	}
}

func FuzzEncode(f *testing.F) {
	v, err := NewVocab(corpus, VocabOptions{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add("click x:10 y:20<|im_end|>")
	f.Add("<|vision_start|><|image_pad|><|vision_end|>")
	f.Fuzz(func(t *testing.T, s string) {
		ids := v.Encode(s)
		for _, id := range ids {
			if id < 0 || int(id) >= v.VocabSize() {
				t.Fatalf("id %d out of range", id)
			}
		}
		if again := v.Encode(v.Decode(ids)); !reflect.DeepEqual(again, ids) && len(ids) > 0 {
			t.Fatalf("Encode(Decode(%v)) = %v", ids, again)
		}
	})
}

func newTestPolicy(t *testing.T, patchDim int) (*Policy, *Vocab) {
	v := testVocab(t)
	cfg := DefaultConfig(v.VocabSize())
	cfg.Dim, cfg.FFNDim, cfg.PatchDim, cfg.MaxAction = 32, 64, patchDim, 6
	p, err := New(cfg, v, gotch.CPU, 1)
	if err != nil {
		t.Fatal(err)
	}
	return p, v
}

func TestSampleDeterministicAndConsistent(t *testing.T) {
	p, v := newTestPolicy(t, 0)
	defer p.Close()
	in := []Input{{Tokens: v.Encode(corpus[0])}, {Tokens: v.Encode(corpus[1])}, {Tokens: v.Encode("type hello")}}
	opts := DefaultSampleOptions()
	opts.Seed = 9
	a, err := p.Sample(in, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Sample(in, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed, different samples")
	}
	// a draw does not depend on the rest of the batch
	one, err := p.Sample(in[:1], opts)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(one[0].Tokens, a[0].Tokens) {
		t.Errorf("item 0 alone sampled %v, in batch %v", one[0].Tokens, a[0].Tokens)
	}
	var acts [][]int32
	for _, x := range a {
		if len(x.Tokens) == 0 || len(x.Tokens) != len(x.Logp) || len(x.Tokens) > 6 {
			t.Fatalf("bad action %+v", x)
		}
		acts = append(acts, x.Tokens)
	}
	lp, err := p.LogProbs(in, acts, opts.Temperature)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		for k := range a[i].Logp {
			if math.Abs(float64(lp[i][k]-a[i].Logp[k])) > 1e-5 {
				t.Errorf("item %d token %d: sampled logp %v, scored %v", i, k, a[i].Logp[k], lp[i][k])
			}
		}
	}
	g, err := p.Greedy(in, 0)
	if err != nil {
		t.Fatal(err)
	}
	lp1, err := p.LogProbs(in, [][]int32{g[0].Tokens, g[1].Tokens, g[2].Tokens}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(float64(lp1[0][0]-g[0].Logp[0])) > 1e-5 {
		t.Errorf("greedy logp %v, scored %v", g[0].Logp[0], lp1[0][0])
	}
}

func TestTopP(t *testing.T) {
	logp := []float32{float32(math.Log(0.5)), float32(math.Log(0.3)), float32(math.Log(0.15)), float32(math.Log(0.05))}
	rng := rand.New(rand.NewPCG(1, 1))
	seen := map[int]int{}
	for i := 0; i < 2000; i++ {
		seen[draw(logp, 0.75, rng)]++
	}
	if seen[2] != 0 || seen[3] != 0 || seen[0] == 0 || seen[1] == 0 {
		t.Errorf("top-p 0.75 kept %v, want only ids 0 and 1", seen)
	}
	// renormalised within the nucleus: 0.5/0.8 = 0.625
	if f := float64(seen[0]) / 2000; math.Abs(f-0.625) > 0.04 {
		t.Errorf("P(0) = %.3f within nucleus, want 0.625", f)
	}
	if argmax(logp) != 0 {
		t.Error("argmax")
	}
}

func TestVisionPatches(t *testing.T) {
	p, v := newTestPolicy(t, 12)
	defer p.Close()
	ctx := v.Encode("<|vision_start|><|image_pad|><|image_pad|><|vision_end|> click Save")
	patch := func(x float32) [][]float32 {
		a, b := make([]float32, 12), make([]float32, 12)
		for i := range a {
			a[i], b[i] = x, -x
		}
		return [][]float32{a, b}
	}
	act := [][]int32{v.Encode("click x:120 y:340")}
	lpA, err := p.LogProbs([]Input{{Tokens: ctx, Patches: patch(1)}}, act, 1)
	if err != nil {
		t.Fatal(err)
	}
	lpB, err := p.LogProbs([]Input{{Tokens: ctx, Patches: patch(-2)}}, act, 1)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(lpA, lpB) {
		t.Error("patch features do not change the policy's output")
	}
	bad := []Input{
		{Tokens: ctx},                                 // patches missing
		{Tokens: ctx, Patches: patch(1)[:1]},          // one too few
		{Tokens: ctx, Patches: [][]float32{{1}, {2}}}, // wrong width
		{Tokens: []int32{int32(v.VocabSize())}},       // id out of range
		{Tokens: nil},                                 // empty
	}
	for i, in := range bad {
		if _, err := p.LogProbs([]Input{in}, act, 1); err == nil {
			t.Errorf("bad input %d accepted", i)
		}
	}
	text, _ := newTestPolicy(t, 0)
	defer text.Close()
	if _, err := text.LogProbs([]Input{{Tokens: ctx, Patches: patch(1)}}, act, 1); err == nil {
		t.Error("text-only policy accepted patches")
	}
}

func TestCheckpointRejectsCorruption(t *testing.T) {
	p, _ := newTestPolicy(t, 0)
	defer p.Close()
	data, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	q, err := Load(data, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	q.Close()
	for name, d := range map[string][]byte{
		"empty":     nil,
		"magic":     append([]byte("x"), data[1:]...),
		"truncated": data[:len(data)-4],
		"trailing":  append(append([]byte{}, data...), 0),
		"header":    bytes.Replace(data, []byte(`"dim":32`), []byte(`"dim":33`), 1),
	} {
		if _, err := Load(d, gotch.CPU); err == nil {
			t.Errorf("%s checkpoint loaded", name)
		}
	}
}

func FuzzLoad(f *testing.F) {
	f.Add([]byte("cualake-policy\x00\x01\x00\x00\x00\x02\x00\x00\x00{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if p, err := Load(data, gotch.CPU); err == nil {
			p.Close()
		}
	})
}

func TestConfigValidate(t *testing.T) {
	good := DefaultConfig(300)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, mut := range []func(*Config){
		func(c *Config) { c.Dim = 30 }, // not a multiple of 4 heads
		func(c *Config) { c.VocabSize = 3 },
		func(c *Config) { c.MaxAction = 0 },
		func(c *Config) { c.PatchDim = -1 },
	} {
		c := good
		mut(&c)
		if c.Validate() == nil {
			t.Errorf("accepted %+v", c)
		}
	}
	v := testVocab(t)
	if _, err := New(DefaultConfig(v.VocabSize()+1), v, gotch.CPU, 1); err == nil || !strings.Contains(err.Error(), "vocab") {
		t.Errorf("size mismatch: %v", err)
	}
}

func ExampleVocab_Encode() {
	v, _ := NewVocab([]string{"click the Save button"}, VocabOptions{})
	ids := v.Encode("click x:123 y:456 <eos>")
	fmt.Println(v.Decode(ids))
	// Output: click x:120 y:440 <eos>
}

func TestImagePatches(t *testing.T) {
	pix := make([]float32, 4*2)
	for i := range pix {
		pix[i] = float32(i)
	}
	got, err := ImagePatches(pix, 4, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float32{{0, 1, 4, 5}, {2, 3, 6, 7}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("patches %v, want %v", got, want)
	}
	if _, err := ImagePatches(pix, 4, 2, 3); err == nil {
		t.Error("uneven patch size accepted")
	}
	v := testVocab(t)
	ids := v.Encode(VisionTokens(2) + " click")
	if len(ids) != 5 || ids[1] != ImagePadID || ids[2] != ImagePadID {
		t.Errorf("VisionTokens encodes to %v", ids)
	}
}

// TestCheckpointVariants: checkpoints of the earlier plain architecture (no
// copy output, mean pooling only) still load, and every variant gives the
// same log-probabilities after a round trip.
func TestCheckpointVariants(t *testing.T) {
	v := testVocab(t)
	for _, c := range []struct{ copyOut, attnPool bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		cfg := DefaultConfig(v.VocabSize())
		cfg.Dim, cfg.FFNDim, cfg.MaxAction = 32, 64, 6
		cfg.Copy, cfg.AttnPool = c.copyOut, c.attnPool
		p, err := New(cfg, v, gotch.CPU, 1)
		if err != nil {
			t.Fatal(err)
		}
		data, err := p.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if !c.copyOut && !c.attnPool && (bytes.Contains(data, []byte(`"copy"`)) || bytes.Contains(data, []byte(`"attn_pool"`))) {
			t.Fatal("a plain checkpoint names the new fields; older readers would differ")
		}
		q, err := Load(data, gotch.CPU)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		in := []Input{{Tokens: v.Encode(corpus[0])}}
		act := [][]int32{v.Encode("type hello")}
		a, err := p.LogProbs(in, act, 1)
		if err != nil {
			t.Fatal(err)
		}
		b, err := q.LogProbs(in, act, 1)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("%+v: log-probs changed by a round trip: %v vs %v", c, a, b)
		}
		p.Close()
		q.Close()
	}
}
