package causal

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sugarme/gotch"

	"github.com/cualake/cualake/trainer"
	"github.com/cualake/cualake/trainer/internal/tx"
)

func TestMain(m *testing.M) {
	if err := tx.SetThreads(1); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// Test ids: words 1..40, the template tokens 100..104.
var testSpecial = Special{ImStart: 100, ImEnd: 101, VisionStart: 102, VisionEnd: 103, ImagePad: 104}

func testConfig(vocab int) Config {
	return Config{VocabSize: vocab, Dim: 16, Heads: 2, Layers: 2, FFNDim: 32, MaxContext: 1024,
		ImageCols: 2, ImageRows: 1, PatchSize: 2, MaxResponse: 8}
}

func testModel(t testing.TB, seed uint64) *Model {
	t.Helper()
	return testModelLayers(t, seed, testConfig(1).Layers)
}

// testModelLayers is testModel with the given number of layers.
func testModelLayers(t testing.TB, seed uint64, layers int) *Model {
	t.Helper()

	var ids []int32
	for i := int32(1); i <= 40; i++ {
		ids = append(ids, i)
	}
	ids = append(ids, testSpecial.ids()...)
	im, err := NewIDMap(ids)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(im.Size())
	cfg.Layers = layers
	m, err := New(cfg, im, testSpecial, "test@sha256:0", gotch.CPU, seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// testImage returns n patches of pd values from a seeded stream.
func testImage(r *rand.Rand, n, pd int) [][]float32 {
	out := make([][]float32, n)
	for i := range out {
		out[i] = make([]float32, pd)
		for j := range out[i] {
			out[i][j] = r.Float32()
		}
	}
	return out
}

// testStream is a chat-like stream with two screenshots and an unmapped id.
func testStream(m *Model, r *rand.Rand) Input {
	sp := m.special
	n, pd := m.cfg.ImageTokens(), m.cfg.PatchDim()
	var ids []int32
	var imgs [][][]float32
	words := func(k int) {
		for i := 0; i < k; i++ {
			ids = append(ids, int32(1+r.IntN(40)))
		}
	}
	ids = append(ids, sp.ImStart)
	words(5)
	ids = append(ids, 777) // not in the map: reads as <unk>
	for img := 0; img < 2; img++ {
		ids = append(ids, sp.ImStart, sp.VisionStart)
		for k := 0; k < n; k++ {
			ids = append(ids, sp.ImagePad)
		}
		ids = append(ids, sp.VisionEnd)
		imgs = append(imgs, testImage(r, n, pd))
		words(4)
		ids = append(ids, sp.ImEnd)
		words(3)
	}
	return Input{IDs: ids, Images: imgs}
}

func scorable(m *Model, ids []int32) []int {
	var at []int
	for k := 1; k < len(ids); k++ {
		if c := m.ids.Compact(ids[k]); c != Unk && !slices.Contains(m.never, c) {
			at = append(at, k)
		}
	}
	return at
}

// TestCausal: a token's log-probability does not depend on what follows it.
func TestCausal(t *testing.T) {
	m := testModel(t, 1)
	r := rand.New(rand.NewPCG(3, 4))
	in := testStream(m, r)
	at := scorable(m, in.IDs)
	base, err := m.LogProbs(in, at, 1)
	if err != nil {
		t.Fatal(err)
	}
	cut := len(in.IDs) - 4
	changed := Input{IDs: append([]int32(nil), in.IDs...), Images: in.Images}
	for k := cut; k < len(changed.IDs); k++ {
		changed.IDs[k] = 1 + (changed.IDs[k]+7)%40
	}
	got, err := m.LogProbs(changed, at, 1)
	if err != nil {
		t.Fatal(err)
	}
	differs := false
	for i, k := range at {
		if k < cut && got[i] != base[i] {
			t.Fatalf("position %d (before the change at %d): %v, was %v", k, cut, got[i], base[i])
		}
		if k >= cut && got[i] != base[i] {
			differs = true
		}
	}
	if !differs {
		t.Fatal("changing the last tokens changed none of their log-probabilities")
	}
	// and the screenshots are read: other pixels, other log-probabilities
	other := Input{IDs: in.IDs, Images: [][][]float32{in.Images[0], testImage(r, m.cfg.ImageTokens(), m.cfg.PatchDim())}}
	got, err = m.LogProbs(other, at, 1)
	if err != nil {
		t.Fatal(err)
	}
	if slicesEqual(got, base) {
		t.Fatal("the second screenshot's pixels do not reach the log-probabilities")
	}
}

func slicesEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestDecoderMatchesFullForward feeds a stream in pieces (whole messages
// with screenshots, then single tokens) and checks that every next-token
// distribution the decoder returns gives the full forward pass's
// log-probability of the token that follows, within 1e-5.
func TestDecoderMatchesFullForward(t *testing.T) {
	m := testModel(t, 2)
	r := rand.New(rand.NewPCG(5, 6))
	in := testStream(m, r)
	for _, temp := range []float64{1, 0.8} {
		at := scorable(m, in.IDs)
		full, err := m.LogProbs(in, at, temp)
		if err != nil {
			t.Fatal(err)
		}
		want := map[int]float32{}
		for i, k := range at {
			want[k] = full[i]
		}
		d := m.NewDecoder()
		// chunks: each message from <|im_start|> to <|im_end|> whole (it
		// holds a screenshot), the words between messages one by one
		var chunks [][2]int
		for k := 0; k < len(in.IDs); {
			e := k + 1
			if in.IDs[k] == m.special.ImStart {
				for e < len(in.IDs) && in.IDs[e-1] != m.special.ImEnd {
					e++
				}
			}
			chunks = append(chunks, [2]int{k, e})
			k = e
		}
		img, checked := 0, 0
		for _, ch := range chunks {
			ids := in.IDs[ch[0]:ch[1]]
			var imgs [][][]float32
			for _, id := range ids {
				if id == m.special.VisionStart {
					imgs = append(imgs, in.Images[img])
					img++
				}
			}
			lp, err := d.Feed(ids, imgs, temp)
			if err != nil {
				t.Fatalf("feed %v: %v", ch, err)
			}
			if next := ch[1]; next < len(in.IDs) {
				if w, ok := want[next]; ok {
					got := lp[m.ids.Compact(in.IDs[next])]
					if math.Abs(float64(got-w)) > 1e-5 {
						t.Fatalf("T=%v token %d: decoder %v, full forward %v", temp, next, got, w)
					}
					checked++
				}
			}
		}
		d.Close()
		if checked < 6 {
			t.Fatalf("only %d positions compared", checked)
		}
	}
}

// TestDecoderTruncate redraws after a context: a decoder that fed the
// context and one continuation, truncated back to the context and fed
// another, gives the same next-token log-probabilities (within 1e-6) as a
// fresh decoder fed the context and the second continuation only.
func TestDecoderTruncate(t *testing.T) {
	m := testModel(t, 3)
	in := testStream(m, rand.New(rand.NewPCG(8, 9)))
	a, b := []int32{5, 6, 7}, []int32{9, 10}
	d := m.NewDecoder()
	defer d.Close()
	if _, err := d.Feed(in.IDs, in.Images, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Feed(a, nil, 1); err != nil {
		t.Fatal(err)
	}
	if err := d.Truncate(len(in.IDs) + len(a) + 1); err == nil {
		t.Fatal("truncating past the stream's end: no error")
	}
	if err := d.Truncate(len(in.IDs)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Tokens(), in.IDs) {
		t.Fatalf("after truncate the decoder holds %d tokens, want the context's %d", len(d.Tokens()), len(in.IDs))
	}
	got, err := d.Feed(b, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	f := m.NewDecoder()
	defer f.Close()
	if _, err := f.Feed(in.IDs, in.Images, 1); err != nil {
		t.Fatal(err)
	}
	want, err := f.Feed(b, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-6 {
			t.Fatalf("id %d: truncated decoder %v, fresh %v", i, got[i], want[i])
		}
	}
	if err := d.Truncate(0); err != nil || len(d.Tokens()) != 0 {
		t.Fatalf("truncate to 0: %v, %d tokens left", err, len(d.Tokens()))
	}
}

func TestCheckpointRoundTripAndReproducible(t *testing.T) {
	a, b := testModel(t, 7), testModel(t, 7)
	ba, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	bb, _ := b.MarshalBinary()
	if !bytes.Equal(ba, bb) {
		t.Fatal("same seed, different checkpoint bytes")
	}
	c := testModel(t, 8)
	if bc, _ := c.MarshalBinary(); bytes.Equal(ba, bc) {
		t.Fatal("different seeds, same bytes")
	}
	l, err := Load(ba, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Tokenizer() != a.Tokenizer() || l.Special() != a.Special() || l.Config() != a.Config() {
		t.Fatalf("header lost: %+v", l.Config())
	}
	bl, _ := l.MarshalBinary()
	if !bytes.Equal(ba, bl) {
		t.Fatal("load then save changes the bytes")
	}
	in := testStream(a, rand.New(rand.NewPCG(1, 1)))
	at := scorable(a, in.IDs)
	x, _ := a.LogProbs(in, at, 1)
	y, err := l.LogProbs(in, at, 1)
	if err != nil || !slicesEqual(x, y) {
		t.Fatalf("loaded model scores differently: %v", err)
	}
	for _, bad := range [][]byte{nil, []byte("cualake-policy\x00xxxxxxxx"), ba[:len(ba)-3], append(append([]byte{}, ba...), 0)} {
		if _, err := Load(bad, gotch.CPU); err == nil {
			t.Fatalf("loaded a bad checkpoint of %d bytes", len(bad))
		}
	}
}

func TestPrepareRejectsMalformedStreams(t *testing.T) {
	m := testModel(t, 1)
	sp := m.special
	img := testImage(rand.New(rand.NewPCG(1, 2)), 2, m.cfg.PatchDim())
	cases := []struct {
		name string
		in   Input
		want string
	}{
		{"pad outside", Input{IDs: []int32{1, sp.ImagePad, 2}}, "outside a vision block"},
		{"too few pads", Input{IDs: []int32{1, sp.VisionStart, sp.ImagePad, sp.VisionEnd}, Images: [][][]float32{img}}, "holds 1 image pads"},
		{"no screenshot", Input{IDs: []int32{1, sp.VisionStart, sp.ImagePad, sp.ImagePad, sp.VisionEnd}}, "has no screenshot"},
		{"open block", Input{IDs: []int32{1, sp.VisionStart, sp.ImagePad}, Images: [][][]float32{img}}, "not closed"},
		{"extra image", Input{IDs: []int32{1, 2}, Images: [][][]float32{img}}, "1 screenshots for 0"},
		{"nan patch", Input{IDs: []int32{1, sp.VisionStart, sp.ImagePad, sp.ImagePad, sp.VisionEnd},
			Images: [][][]float32{{img[0], make([]float32, m.cfg.PatchDim()-1)}}}, "has 11 values"},
	}
	for _, c := range cases {
		_, err := m.LogProbs(c.in, []int{1}, 1)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := m.LogProbs(Input{IDs: []int32{1, 777}}, []int{1}, 1); err == nil || !strings.Contains(err.Error(), "not in the model's id map") {
		t.Errorf("scoring an unmapped token: %v", err)
	}
	if _, err := m.LogProbs(Input{IDs: []int32{1, sp.ImStart}}, []int{1}, 1); err == nil || !strings.Contains(err.Error(), "never writes") {
		t.Errorf("scoring a template token: %v", err)
	}
	// the decoder gives them no probability
	d := m.NewDecoder()
	defer d.Close()
	lp, err := d.Feed([]int32{1, 2, 3}, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int32{sp.ImStart, sp.VisionStart, sp.VisionEnd, sp.ImagePad} {
		if p := lp[m.ids.Compact(id)]; p > -1e6 {
			t.Errorf("template token %d has log-probability %v", id, p)
		}
	}
	if p := lp[m.ids.Compact(sp.ImEnd)]; p < -100 {
		t.Errorf("<|im_end|> cannot be written: %v", p)
	}
}

// TestImagePatchesBitExact: the row-wise thumbnail equals, bit for bit, a
// per-pixel reference that adds each pixel's color.RGBA() to its thumbnail
// pixel in row-major order, for every image format it reads directly, for
// the generic path, at sizes that do not divide evenly and at an offset.
func TestImagePatchesBitExact(t *testing.T) {
	c := testConfig(10)
	reference := func(img image.Image) [][]float32 {
		b := img.Bounds()
		tw, th := c.ImageCols*c.PatchSize, c.ImageRows*c.PatchSize
		thumb := make([]float32, tw*th*3)
		count := make([]float32, tw*th)
		for y := 0; y < b.Dy(); y++ {
			for x := 0; x < b.Dx(); x++ {
				r, g, bl, _ := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
				o := (y*th/b.Dy())*tw + x*tw/b.Dx()
				thumb[3*o] += float32(r)
				thumb[3*o+1] += float32(g)
				thumb[3*o+2] += float32(bl)
				count[o]++
			}
		}
		for o, n := range count {
			for k := 0; k < 3; k++ {
				thumb[3*o+k] /= n * 0xffff
			}
		}
		var out [][]float32
		ps := c.PatchSize
		for py := 0; py < c.ImageRows; py++ {
			for px := 0; px < c.ImageCols; px++ {
				var v []float32
				for y := py * ps; y < (py+1)*ps; y++ {
					o := (y*tw + px*ps) * 3
					v = append(v, thumb[o:o+3*ps]...)
				}
				out = append(out, v)
			}
		}
		return out
	}
	rng := rand.New(rand.NewPCG(3, 9))
	tw, th := c.ImageCols*c.PatchSize, c.ImageRows*c.PatchSize
	// one source pixel per thumbnail pixel, and one more column and row
	for _, r := range []image.Rectangle{image.Rect(0, 0, tw, th), image.Rect(0, 0, tw+1, th+1)} {
		img := image.NewNRGBA(r)
		for i := range img.Pix {
			img.Pix[i] = uint8(rng.IntN(256))
		}
		got, err := c.ImagePatches(img)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, reference(img)) {
			t.Fatalf("%v: patches differ from the per-pixel reference", r)
		}
	}
	bad := image.NewPaletted(image.Rect(0, 0, 8, 4), color.Palette{color.Black, color.White})
	bad.Pix[13] = 7
	if _, err := c.ImagePatches(bad); err == nil || !strings.Contains(err.Error(), "palette index 7 outside the palette of 2 colours") {
		t.Fatalf("an index past the palette: err %v", err)
	}
	rect := image.Rect(0, 0, 1283, 803)
	pal := color.Palette{}
	for i := 0; i < 300; i++ { // more than 256 colours is a valid palette
		pal = append(pal, color.RGBA{uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), 255})
	}
	imgs := map[string]image.Image{
		"rgba": image.NewRGBA(rect), "nrgba": image.NewNRGBA(rect), "paletted": image.NewPaletted(rect, pal), "gray": image.NewGray(rect),
	}
	for name, img := range imgs {
		set := img.(interface{ Set(x, y int, c color.Color) })
		for y := 0; y < rect.Dy(); y++ {
			for x := 0; x < rect.Dx(); x++ {
				if name == "paletted" {
					set.Set(x, y, pal[rng.IntN(len(pal))])
					continue
				}
				set.Set(x, y, color.NRGBA{uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256))})
			}
		}
		sub := img.(interface {
			SubImage(image.Rectangle) image.Image
		}).SubImage(image.Rect(5, 3, 5+1271, 3+797))
		for _, im := range []image.Image{img, sub} {
			got, err := c.ImagePatches(im)
			if err != nil {
				t.Fatal(err)
			}
			if want := reference(im); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s at %v: patches differ from the per-pixel reference", name, im.Bounds())
			}
		}
	}
}

func TestPatches(t *testing.T) {
	c := testConfig(10) // 2x1 patches of 2x2 pixels: a 4x2 thumbnail
	img := image.NewRGBA(image.Rect(0, 0, 8, 4))
	for y := 0; y < 4; y++ {
		for x := 0; x < 8; x++ {
			v := uint8(0)
			if x >= 4 {
				v = 255 // right half white
			}
			if x == 0 && y == 0 {
				v = 200
			}
			img.Set(x, y, color.RGBA{v, v / 2, 0, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	p, err := c.Patches(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 2 || len(p[0]) != 12 {
		t.Fatalf("patches %d x %d, want 2 x 12", len(p), len(p[0]))
	}
	// thumbnail pixel (0,0) averages source (0..1, 0..1): one 200, three 0
	if got, want := p[0][0], float32(200.0/4/255); math.Abs(float64(got-want)) > 1e-6 {
		t.Fatalf("red of the first thumbnail pixel %v, want %v", got, want)
	}
	for i, v := range p[1] {
		want := float32(1)
		switch i % 3 {
		case 1:
			want = 127.0 / 255
		case 2:
			want = 0
		}
		if math.Abs(float64(v-want)) > 1e-6 {
			t.Fatalf("right patch value %d is %v, want %v", i, v, want)
		}
	}
	if _, err := c.Patches([]byte("not a png")); err == nil {
		t.Fatal("decoded garbage")
	}
}

// copyItems makes n SFT items whose response repeats a word after the
// stream's second screenshot, from m's id map (a fixed seed, so the same
// items for TestSFTLearnsToCopy and the device test).
func copyItems(m *Model, n int) []Item {
	r := rand.New(rand.NewPCG(9, 9))
	var items []Item
	for i := 0; i < n; i++ {
		in := testStream(m, r)
		ids := append(in.IDs, m.special.ImStart)
		key := in.IDs[len(in.IDs)-8] // a word after the second screenshot
		ids = append(ids, key, m.special.ImEnd)
		mask := make([]int8, len(ids))
		mask[len(ids)-2], mask[len(ids)-1] = 1, 1
		items = append(items, Item{ID: "it", IDs: ids, Mask: mask, Logp: make([]float32, len(ids)), Images: in.Images})
	}
	return items
}

// TestSFTLearnsToCopy: the response must repeat the word right after the
// stream's first screenshot; a few dozen steps of SFT learn it, with and
// without dropout (whose thinned steps take longer), judged by the plain
// network's loss of the trained tokens.
func TestSFTLearnsToCopy(t *testing.T) {
	for _, c := range []struct {
		dropout float64
		steps   int
	}{{0, 80}, {0.1, 120}} {
		t.Run(fmt.Sprintf("dropout %v", c.dropout), func(t *testing.T) {
			m := testModel(t, 3)
			items := copyItems(m, 16)
			opt, err := trainer.NewOptimizerOver(m.Parameters(), 1e-2)
			if err != nil {
				t.Fatal(err)
			}
			defer opt.Close()
			first, err := SFTStep(m, opt, items, SFTOptions{MaxGradNorm: 1})
			if err != nil {
				t.Fatal(err)
			}
			for step := 0; step < c.steps; step++ {
				if _, err = SFTStep(m, opt, items, SFTOptions{MaxGradNorm: 1, Dropout: c.dropout, DropoutSeed: uint64(step)}); err != nil {
					t.Fatal(err)
				}
			}
			var nll float64
			n := 0
			for _, it := range items {
				lp, err := m.LogProbs(it.Input(), it.Trainable(), 1)
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range lp {
					nll -= float64(v)
					n++
				}
			}
			if nll /= float64(n); !(nll < first.Loss/4) {
				t.Fatalf("sft: loss %.3f -> %.3f", first.Loss, nll)
			}
		})
	}
}

// TestGRPOStepMovesTowardPositiveAdvantage: on-policy items with a
// positive advantage become likelier, with a negative one less likely.
func TestGRPOStepMovesTowardPositiveAdvantage(t *testing.T) {
	for _, sign := range []float32{1, -1} {
		m := testModel(t, 4)
		ref, err := m.Clone()
		if err != nil {
			t.Fatal(err)
		}
		in := testStream(m, rand.New(rand.NewPCG(2, 2)))
		mask := make([]int8, len(in.IDs))
		at := scorable(m, in.IDs)
		for _, k := range at[len(at)-3:] {
			mask[k] = 1
		}
		it := Item{ID: "g", IDs: in.IDs, Mask: mask, Logp: make([]float32, len(in.IDs)), HasLogp: true, Advantage: sign, Images: in.Images}
		before, _ := m.LogProbs(in, it.Trainable(), 0.8)
		for i, k := range it.Trainable() {
			it.Logp[k] = before[i]
		}
		opt, _ := trainer.NewOptimizerOver(m.Parameters(), 1e-2)
		opts := trainer.DefaultGRPOOptions()
		gm, err := GRPOStep(m, ref, opt, []Item{it}, opts)
		opt.Close()
		ref.Close()
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(gm.RatioMean-1) > 1e-5 || gm.Tokens != 3 {
			t.Fatalf("on-policy ratio %v over %d tokens", gm.RatioMean, gm.Tokens)
		}
		after, _ := m.LogProbs(in, it.Trainable(), 0.8)
		var d float64
		for i := range after {
			d += float64(after[i] - before[i])
		}
		if float64(sign)*d <= 0 {
			t.Fatalf("advantage %v: log-probabilities moved by %v", sign, d)
		}
	}
}

func TestDefaultConfigWeights(t *testing.T) {
	cfg := DefaultConfig(1000)
	n := 0
	for _, sp := range cfg.specs() {
		k := 1
		for _, d := range sp.shape {
			k *= int(d)
		}
		n += k
	}
	if want := 112960 + 129*1000; n != want {
		t.Fatalf("default config has %d weights at 1,000 ids, the doc says %d", n, want)
	}
}

// longStream is a stream of about n tokens: words, and a screenshot every
// 150 tokens.
func longStream(m *Model, r *rand.Rand, n int) Input {
	sp := m.special
	var in Input
	for len(in.IDs) < n {
		if len(in.IDs)%150 == 0 {
			in.IDs = append(in.IDs, sp.ImStart, sp.VisionStart)
			for k := 0; k < m.cfg.ImageTokens(); k++ {
				in.IDs = append(in.IDs, sp.ImagePad)
			}
			in.IDs = append(in.IDs, sp.VisionEnd)
			in.Images = append(in.Images, testImage(r, m.cfg.ImageTokens(), m.cfg.PatchDim()))
		}
		in.IDs = append(in.IDs, int32(1+r.IntN(40)))
	}
	return in
}

// TestAttentionBlocks: streams longer than one attention block score as
// with one block over the whole stream, in the full forward pass and in the
// decoder fed in chunks that start inside a block (within 1e-5), and stay
// causal across block boundaries.
func TestAttentionBlocks(t *testing.T) {
	m := testModel(t, 5)
	in := longStream(m, rand.New(rand.NewPCG(11, 12)), 700)
	at := scorable(m, in.IDs)
	blocked, err := m.LogProbs(in, at, 1)
	if err != nil {
		t.Fatal(err)
	}
	saved := queryBlock
	queryBlock = 1 << 30
	whole, err := m.LogProbs(in, at, 1)
	queryBlock = saved
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]float32{}
	for i, k := range at {
		if math.Abs(float64(blocked[i]-whole[i])) > 1e-5 {
			t.Fatalf("token %d: %v in blocks, %v in one block", k, blocked[i], whole[i])
		}
		want[k] = whole[i]
	}
	// causal across blocks: tokens after 600 change nothing before them
	changed := Input{IDs: append([]int32(nil), in.IDs...), Images: in.Images}
	for k := 600; k < len(changed.IDs); k++ {
		if changed.IDs[k] <= 40 {
			changed.IDs[k] = 1 + changed.IDs[k]%40
		}
	}
	got, err := m.LogProbs(changed, at, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range at {
		if k < 600 && got[i] != blocked[i] {
			t.Fatalf("token %d changed when tokens after 600 did", k)
		}
	}
	// the decoder: 40 tokens, one, then 500 (several blocks at an offset)
	d := m.NewDecoder()
	defer d.Close()
	img := 0
	for _, ch := range [][2]int{{0, 40}, {40, 41}, {41, 541}, {541, len(in.IDs) - 1}} {
		ids := in.IDs[ch[0]:ch[1]]
		var imgs [][][]float32
		for _, id := range ids {
			if id == m.special.VisionStart {
				imgs = append(imgs, in.Images[img])
				img++
			}
		}
		lp, err := d.Feed(ids, imgs, 1)
		if err != nil {
			t.Fatalf("feed %v: %v", ch, err)
		}
		next := ch[1]
		w, ok := want[next]
		if !ok {
			t.Fatalf("chunk %v ends before an unscorable token; pick other bounds", ch)
		}
		if g := lp[m.ids.Compact(in.IDs[next])]; math.Abs(float64(g-w)) > 1e-5 {
			t.Fatalf("decoder after %v: %v, full pass %v", ch, g, w)
		}
	}
}

// markerItems are streams whose answer is the word after the marker 40 in a
// run of random words; the answers are drawn from keys.
func markerItems(m *Model, r *rand.Rand, n int, keys []int32) []Item {
	sp := m.special
	var items []Item
	for i := 0; i < n; i++ {
		ids := []int32{sp.ImStart}
		key := keys[r.IntN(len(keys))]
		at := 2 + r.IntN(8)
		for k := 0; k < 12; k++ {
			switch {
			case k == at:
				ids = append(ids, 40)
			case k == at+1:
				ids = append(ids, key)
			default:
				ids = append(ids, int32(1+r.IntN(39)))
			}
		}
		ids = append(ids, sp.ImEnd, sp.ImStart, key, sp.ImEnd)
		mask := make([]int8, len(ids))
		mask[len(ids)-2], mask[len(ids)-1] = 1, 1
		items = append(items, Item{ID: "copy", IDs: ids, Mask: mask, Logp: make([]float32, len(ids))})
	}
	return items
}

// TestContextLossTrainsTheContext: with a context weight the context
// tokens' log-likelihood rises; without one the context is not a target.
func TestContextLossTrainsTheContext(t *testing.T) {
	ctxLL := func(w float64) float64 {
		m := testModel(t, 8)
		r := rand.New(rand.NewPCG(31, 32))
		items := markerItems(m, r, 8, []int32{1, 2, 3})
		// a context pattern to learn: 5 6 7 at every fourth position
		for i := range items {
			ids := items[i].IDs
			for k := 1; k+3 < len(ids)-4; k += 4 {
				ids[k], ids[k+1], ids[k+2] = 5, 6, 7
			}
		}
		opt, err := trainer.NewOptimizerOver(m.Parameters(), 1e-2)
		if err != nil {
			t.Fatal(err)
		}
		defer opt.Close()
		for step := 0; step < 40; step++ {
			if _, err := SFTStep(m, opt, items, SFTOptions{MaxGradNorm: 1, ContextWeight: w}); err != nil {
				t.Fatal(err)
			}
		}
		var ll float64
		for i := range items {
			at := m.contextTargets(&items[i])
			lp, err := m.LogProbs(items[i].Input(), at, 1)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range lp {
				ll += float64(v) / float64(len(at))
			}
		}
		return ll / float64(len(items))
	}
	without, with := ctxLL(0), ctxLL(1)
	if !(with > without+0.5) {
		t.Fatalf("mean context log-likelihood %.3f with weight 1, %.3f without: want the context learned", with, without)
	}
	m := testModel(t, 8)
	opt, _ := trainer.NewOptimizerOver(m.Parameters(), 1e-2)
	defer opt.Close()
	if _, err := SFTStep(m, opt, markerItems(m, rand.New(rand.NewPCG(1, 1)), 2, []int32{1}), SFTOptions{ContextWeight: -1}); err == nil {
		t.Fatal("a negative context weight was accepted")
	}
}

// TestFillRefLogpTrainsAsRecomputed: GRPO steps on items whose reference
// log-probabilities were filled once give bit-identical weights to steps
// that run the reference each time; altered filled values change them
// (GRPOStep reads the cache), and a cache at another temperature is an
// error naming the segment.
func TestFillRefLogpTrainsAsRecomputed(t *testing.T) {
	start := testModel(t, 5)
	defer start.Close()
	ref, err := start.Clone()
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	opts := trainer.DefaultGRPOOptions()
	opts.LossConfig.KLCoef = 0.5 // large enough that the reference term moves the weights
	items := func() []Item {
		var out []Item
		for s := uint64(0); s < 2; s++ {
			in := testStream(start, rand.New(rand.NewPCG(7, s)))
			mask := make([]int8, len(in.IDs))
			at := scorable(start, in.IDs)
			for _, k := range at[len(at)-4:] {
				mask[k] = 1
			}
			out = append(out, Item{ID: fmt.Sprintf("seg%d", s), Group: "g", IDs: in.IDs, Mask: mask,
				Logp: make([]float32, len(in.IDs)), Advantage: float32(2*int(s) - 1), Images: in.Images})
		}
		return out
	}
	train := func(batch []Item) map[string][]float32 {
		m, err := start.Clone()
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		opt, err := trainer.NewOptimizerOver(m.Parameters(), 1e-2)
		if err != nil {
			t.Fatal(err)
		}
		defer opt.Close()
		for step := 0; step < 3; step++ {
			if _, err := GRPOStep(m, ref, opt, batch, opts); err != nil {
				t.Fatal(err)
			}
		}
		w, err := m.Weights()
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	plain := train(items())
	cached := items()
	if err := ref.FillRefLogp(context.Background(), cached, opts.Temperature); err != nil {
		t.Fatal(err)
	}
	if len(cached[0].RefLogp) != 4 {
		t.Fatalf("filled %d reference log-probabilities, want 4", len(cached[0].RefLogp))
	}
	if !reflect.DeepEqual(plain, train(cached)) {
		t.Fatal("weights after steps with filled reference log-probabilities differ from recomputed ones")
	}
	for i := range cached {
		for k := range cached[i].RefLogp {
			cached[i].RefLogp[k] -= 2
		}
	}
	if reflect.DeepEqual(plain, train(cached)) {
		t.Fatal("altered reference log-probabilities left the weights unchanged: GRPOStep ignores RefLogp")
	}
	cached[1].RefTemp = opts.Temperature / 2
	m, _ := start.Clone()
	defer m.Close()
	opt, _ := trainer.NewOptimizerOver(m.Parameters(), 1e-2)
	defer opt.Close()
	if _, err := GRPOStep(m, ref, opt, cached, opts); err == nil || !strings.Contains(err.Error(), `segment "seg1"`) {
		t.Fatalf("reference log-probabilities at another temperature: err %v", err)
	}
}

// TestLastLayerAtKeptRows: computing the last layer only at the rows a loss
// reads gives the log-probabilities and the gradients (with the warm
// start's context loss, which reads most rows out of position order) of
// computing it at every row, within float rounding, over several attention
// blocks; rows asked in another order come back in that order; and the
// decoder's next-token distribution agrees too.
func TestLastLayerAtKeptRows(t *testing.T) {
	for _, layers := range []int{2, 1} { // one layer: the last is the only one
		t.Run(fmt.Sprintf("layers=%d", layers), func(t *testing.T) { lastLayerAtKeptRows(t, testModelLayers(t, 7, layers)) })
	}
}

func lastLayerAtKeptRows(t *testing.T, m *Model) {
	in := longStream(m, rand.New(rand.NewPCG(21, 22)), 700)
	at := scorable(m, in.IDs)
	saved := queryBlock
	queryBlock = 64 // kept rows span several blocks
	defer func() { queryBlock = saved }()
	mask := make([]int8, len(in.IDs))
	for i, k := range at {
		if i%3 == 0 {
			mask[k] = 1
		}
	}
	it := Item{ID: "kept", IDs: in.IDs, Mask: mask, Logp: make([]float32, len(in.IDs)), Images: in.Images}
	savedDense := denseKeep
	denseKeep = 2 // through lastLayer however many rows are kept
	defer func() { denseKeep = savedDense }()
	run := func(all bool) ([]float32, [][]float32) {
		allRowsLastLayer = all
		defer func() { allRowsLastLayer = false }()
		lp, err := m.LogProbs(in, at, 0.8)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range m.Parameters() {
			p.ZeroGrad()
		}
		// with the context loss too: most rows, out of position order
		if _, _, err := m.sftItem(&it, 1, m.contextTargets(&it), 0.3); err != nil {
			t.Fatal(err)
		}
		var grads [][]float32
		for _, p := range m.Parameters() {
			g, err := p.Grad(false)
			if err != nil {
				t.Fatal(err)
			}
			v, err := tx.ReadFloat32(g)
			_ = g.Drop()
			if err != nil {
				t.Fatal(err)
			}
			grads = append(grads, v)
		}
		return lp, grads
	}
	lpKept, gKept := run(false)
	lpAll, gAll := run(true)
	// rows asked for out of order come back in the order asked
	rev := slices.Clone(at)
	slices.Reverse(rev)
	lpRev, err := m.LogProbs(in, rev, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rev {
		if math.Abs(float64(lpRev[i]-lpKept[len(at)-1-i])) > 1e-5 {
			t.Fatalf("token %d: %v asked in reverse order, %v in order", rev[i], lpRev[i], lpKept[len(at)-1-i])
		}
	}
	for i, k := range at {
		if d := math.Abs(float64(lpKept[i] - lpAll[i])); d > 1e-5 {
			t.Fatalf("token %d: log-probability %v at kept rows, %v at every row", k, lpKept[i], lpAll[i])
		}
	}
	nonzero := 0
	for p := range gAll {
		for j := range gAll[p] {
			a, b := float64(gKept[p][j]), float64(gAll[p][j])
			if math.Abs(a-b) > 1e-5+1e-4*math.Abs(b) {
				t.Fatalf("parameter %d, weight %d: gradient %v at kept rows, %v at every row", p, j, a, b)
			}
			if b != 0 {
				nonzero++
			}
		}
	}
	if nonzero == 0 {
		t.Fatal("every gradient is zero: the comparison tests nothing")
	}
	// the decoder: the next-token distribution after the whole stream but its
	// last token, fed in two chunks
	next := func(all bool) []float32 {
		allRowsLastLayer = all
		defer func() { allRowsLastLayer = false }()
		d := m.NewDecoder()
		defer d.Close()
		cut := 300
		for in.IDs[cut] == m.special.ImagePad || in.IDs[cut] == m.special.VisionEnd {
			cut++
		}
		var out []float32
		img := 0
		for _, ch := range [][2]int{{0, cut}, {cut, len(in.IDs) - 1}} {
			var imgs [][][]float32
			for _, id := range in.IDs[ch[0]:ch[1]] {
				if id == m.special.VisionStart {
					imgs = append(imgs, in.Images[img])
					img++
				}
			}
			var err error
			if out, err = d.Feed(in.IDs[ch[0]:ch[1]], imgs, 1); err != nil {
				t.Fatalf("feed %v: %v", ch, err)
			}
		}
		return out
	}
	dk, da := next(false), next(true)
	for j := range da {
		if math.Abs(float64(dk[j]-da[j])) > 1e-5 {
			t.Fatalf("decoder, id %d: %v at the last row alone, %v at every row", j, dk[j], da[j])
		}
	}
}
