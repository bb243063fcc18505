package causal

import (
	"image"
	"image/color"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/sugarme/gotch/ts"

	"github.com/cualake/cualake/trainer"
	"github.com/cualake/cualake/trainer/internal/tx"
)

// The fixed benchmark item, mirrored by trainer/bench/causal_torch.py: the
// default config over a 2,000-id vocabulary, one stream of 2,048 tokens
// holding 8 screenshots (8 patches each), every 16th token trained; ids and
// pixels from PCG(1, 2).
const (
	benchVocab  = 2000
	benchTokens = 2048
	benchImages = 8
	benchEvery  = 16
)

// benchItem builds the item: compact ids are tokenizer ids 1..vocab-1 here
// (id 0 is <unk>, never used), the template tokens at the top.
func benchItem(b testing.TB) (*Model, Item) {
	sp := Special{ImStart: benchVocab - 5, ImEnd: benchVocab - 4, VisionStart: benchVocab - 3, VisionEnd: benchVocab - 2, ImagePad: benchVocab - 1}
	ids := make([]int32, benchVocab-1)
	for i := range ids {
		ids[i] = int32(i + 1)
	}
	im, err := NewIDMap(ids)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig(im.Size())
	_, dev := testDevice(b)
	m, err := New(cfg, im, sp, "bench", dev, 1)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	n := cfg.ImageTokens()
	var toks []int32
	var imgs [][][]float32
	gap := benchTokens/benchImages - n - 2
	for img := 0; img < benchImages; img++ {
		toks = append(toks, sp.VisionStart)
		for k := 0; k < n; k++ {
			toks = append(toks, sp.ImagePad)
		}
		toks = append(toks, sp.VisionEnd)
		imgs = append(imgs, testImage(r, n, cfg.PatchDim()))
		for k := 0; k < gap; k++ {
			toks = append(toks, int32(1+r.IntN(benchVocab-6)))
		}
	}
	mask := make([]int8, len(toks))
	for k := benchEvery - 1; k < len(toks); k += benchEvery {
		if toks[k] < sp.ImStart {
			mask[k] = 1
		}
	}
	return m, Item{ID: "bench", IDs: toks, Mask: mask, Logp: make([]float32, len(toks)), Images: imgs}
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// BenchmarkCausalForwardBackward measures one item's forward pass, its
// token cross-entropy on the trained positions and the backward pass (no
// optimiser step), as SFTStep runs it; tokens count the whole stream. Each
// of the b.N repetitions is timed alone and the medians are reported (run
// with -benchtime 7x), as trainer/bench/causal_torch.py does. On a GPU
// (CUALAKE_TEST_DEVICE=cuda) each repetition ends with a device
// synchronisation, and tokens/cpu-s counts the host thread's time only.
func BenchmarkCausalForwardBackward(b *testing.B) {
	m, it := benchItem(b)
	defer m.Close()
	dev := m.Device()
	opt, err := trainer.NewOptimizerOver(m.Parameters(), 1e-3) // to zero the gradients
	if err != nil {
		b.Fatal(err)
	}
	defer opt.Close()
	if _, _, err := m.sftItem(&it, 1, nil, 0); err != nil { // warm-up
		b.Fatal(err)
	}
	walls, cpus := make([]float64, 0, b.N), make([]float64, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0, c0 := time.Now(), cpuSeconds()
		if err := opt.ZeroGrad(); err != nil {
			b.Fatal(err)
		}
		if _, _, err := m.sftItem(&it, 1, nil, 0); err != nil {
			b.Fatal(err)
		}
		if dev.IsCuda() { // the backward pass's kernels run asynchronously
			if err := ts.CudaSynchronize(int(dev.CInt())); err != nil {
				b.Fatal(err)
			}
		}
		walls, cpus = append(walls, time.Since(t0).Seconds()), append(cpus, cpuSeconds()-c0)
	}
	b.StopTimer()
	toks := float64(len(it.IDs))
	b.ReportMetric(toks/median(walls), "tokens/s")
	b.ReportMetric(toks/median(cpus), "tokens/cpu-s")
	b.ReportMetric(float64(tx.Threads()), "threads")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// BenchmarkImagePatches shrinks one 1280x800 paletted screenshot (the
// format simdesk's PNGs decode to) to the default config's patches.
func BenchmarkImagePatches(b *testing.B) {
	c := DefaultConfig(10)
	pal := color.Palette{}
	for i := 0; i < 64; i++ {
		pal = append(pal, color.RGBA{uint8(4 * i), uint8(255 - 4*i), uint8(i), 255})
	}
	img := image.NewPaletted(image.Rect(0, 0, 1280, 800), pal)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = uint8(rng.IntN(len(pal)))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.ImagePatches(img); err != nil {
			b.Fatal(err)
		}
	}
}
