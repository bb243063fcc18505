package causal

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/cualake/cualake/trainer"
)

// oneAtATimeSFT is SFTStep as it was before items ran at once: each item's
// backward pass accumulates straight into m's gradients, in item order.
func oneAtATimeSFT(t *testing.T, m *Model, opt *trainer.Optimizer, batch []Item, opts SFTOptions) {
	t.Helper()
	total, err := checkBatch(batch)
	if err != nil {
		t.Fatal(err)
	}
	ctxAt, ctxTotal := make([][]int, len(batch)), 0
	if opts.ContextWeight > 0 {
		for i := range batch {
			ctxAt[i] = m.contextTargets(&batch[i])
			ctxTotal += len(ctxAt[i])
		}
	}
	if err := opt.ZeroGrad(); err != nil {
		t.Fatal(err)
	}
	for i := range batch {
		if _, _, err := m.sftItem(&batch[i], float64(total), ctxAt[i], opts.ContextWeight/float64(max(ctxTotal, 1))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := opt.Apply(opts.MaxGradNorm); err != nil {
		t.Fatal(err)
	}
}

// oneAtATimeGRPO is GRPOStep's token-mean update the same way.
func oneAtATimeGRPO(t *testing.T, m, ref *Model, opt *trainer.Optimizer, batch []Item, opts trainer.GRPOOptions) {
	t.Helper()
	total, err := checkBatch(batch)
	if err != nil {
		t.Fatal(err)
	}
	if err := opt.ZeroGrad(); err != nil {
		t.Fatal(err)
	}
	per := opts.LossConfig
	per.Agg = trainer.TokenMean
	for i := range batch {
		scale := float64(len(batch[i].Trainable())) / float64(total)
		if _, err := m.grpoItem(ref, &batch[i], per, opts.Temperature, scale); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := opt.Apply(opts.MaxGradNorm); err != nil {
		t.Fatal(err)
	}
}

// sameBits reports the first weight whose bits differ, or "".
func sameBits(t *testing.T, a, b *Model) string {
	t.Helper()
	wa, err := a.Weights()
	if err != nil {
		t.Fatal(err)
	}
	wb, err := b.Weights()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range a.params {
		x, y := wa[p.name], wb[p.name]
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				return fmt.Sprintf("%s[%d]: %v != %v", p.name, i, x[i], y[i])
			}
		}
	}
	return ""
}

// TestParallelItemsMatchOneAtATime: SFT and GRPO steps whose items run on
// 1, 2 and 3 threads at once give the bits of steps that run the items one
// at a time on the model itself. The first SFT batch has no screenshots,
// so the vision weights have no gradient at the first step (Adam leaves
// them alone) and get one later: the gradients' presence must follow too.
func TestParallelItemsMatchOneAtATime(t *testing.T) {
	defer func(n int) { itemWorkers = n }(itemWorkers)
	start := testModel(t, 11)
	r := rand.New(rand.NewPCG(5, 5))
	textOnly := markerItems(start, r, 5, []int32{1, 2, 3})
	withImages := copyItems(start, 5)
	var grpo []Item
	for s := uint64(0); s < 5; s++ {
		in := testStream(start, rand.New(rand.NewPCG(8, s)))
		mask := make([]int8, len(in.IDs))
		at := scorable(start, in.IDs)
		for _, k := range at[len(at)-3-int(s):] {
			mask[k] = 1
		}
		logp := make([]float32, len(in.IDs))
		for _, k := range at {
			logp[k] = -0.5 - 0.1*float32(s)
		}
		grpo = append(grpo, Item{ID: fmt.Sprintf("g%d", s), Group: "g", IDs: in.IDs, Mask: mask, Logp: logp,
			HasLogp: s != 2, Advantage: float32(s) - 2, Images: in.Images})
	}
	sftOpts := SFTOptions{MaxGradNorm: 1, ContextWeight: 0.3}
	gopts := trainer.DefaultGRPOOptions()
	gopts.LossConfig.KLCoef = 0.1

	run := func(workers int) *Model {
		m, err := start.Clone()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		ref, err := start.Clone()
		if err != nil {
			t.Fatal(err)
		}
		defer ref.Close()
		opt, err := trainer.NewOptimizerOver(m.Parameters(), 1e-2)
		if err != nil {
			t.Fatal(err)
		}
		defer opt.Close()
		itemWorkers = workers
		for step, batch := range [][]Item{textOnly, withImages, textOnly, withImages} {
			if workers == 0 {
				oneAtATimeSFT(t, m, opt, batch, sftOpts)
				continue
			}
			if _, err := SFTStep(m, opt, batch, sftOpts); err != nil {
				t.Fatalf("sft step %d: %v", step, err)
			}
		}
		for step := 0; step < 3; step++ {
			if workers == 0 {
				oneAtATimeGRPO(t, m, ref, opt, grpo, gopts)
				continue
			}
			if _, err := GRPOStep(m, ref, opt, grpo, gopts); err != nil {
				t.Fatalf("grpo step %d: %v", step, err)
			}
		}
		return m
	}
	want := run(0)
	if d := sameBits(t, start, want); d == "" {
		t.Fatal("the steps left the weights unchanged")
	}
	for _, w := range []int{1, 2, 3} {
		if d := sameBits(t, want, run(w)); d != "" {
			t.Errorf("%d item workers: %s differs from one item at a time", w, d)
		}
	}
}

// TestInOrder: results reach use in index order whatever order the work
// finishes in; the first error in index order is returned, no item after
// it is used, and every result computed but not used is dropped.
func TestInOrder(t *testing.T) {
	for _, workers := range []int{1, 2, 4} {
		var used []int
		err := inOrder(20, workers, func(i int) (int, error) {
			if i%3 == 0 {
				for k := 0; k < 20000; k++ { // make early items finish late
					_ = math.Sqrt(float64(k))
				}
			}
			return i * i, nil
		}, func(i, r int) error {
			if r != i*i {
				return fmt.Errorf("item %d got %d", i, r)
			}
			used = append(used, i)
			return nil
		}, func(int) { t.Error("dropped a result with no error") })
		if err != nil {
			t.Fatal(err)
		}
		want := make([]int, 20)
		for i := range want {
			want[i] = i
		}
		if !slices.Equal(used, want) {
			t.Fatalf("%d workers: used %v", workers, used)
		}

		var dropped atomic.Int32
		used = nil
		started := map[int]bool{}
		fail := errors.New("item 7 failed")
		var mu = make(chan struct{}, 1)
		err = inOrder(20, workers, func(i int) (int, error) {
			mu <- struct{}{}
			started[i] = true
			<-mu
			switch i {
			case 7:
				return 0, fail
			case 9:
				return 0, errors.New("item 9 failed")
			}
			return i, nil
		}, func(i, r int) error {
			used = append(used, i)
			return nil
		}, func(int) { dropped.Add(1) })
		if !errors.Is(err, fail) {
			t.Fatalf("%d workers: err %v, want item 7's", workers, err)
		}
		if !slices.Equal(used, want[:7]) {
			t.Fatalf("%d workers: used %v after a failure at 7", workers, used)
		}
		ran := 0
		for i := 8; i < 20; i++ {
			if started[i] {
				ran++
			}
		}
		if ran > workers {
			t.Errorf("%d workers: %d items after the failed one started", workers, ran)
		}
		if want := ran; started[9] && int(dropped.Load()) != want-1 || !started[9] && int(dropped.Load()) != want {
			t.Errorf("%d workers: %d results dropped of the %d computed after the failure", workers, dropped.Load(), ran)
		}
	}
}

// TestDecoderReusesBuffers: a decoder whose buffers grew on one stream,
// was reset, and is fed another gives the bits of a fresh decoder; so does
// one truncated to a short prefix and then grown past its capacity again
// (growth copies only the positions kept).
func TestDecoderReusesBuffers(t *testing.T) {
	m := testModel(t, 6)
	r := rand.New(rand.NewPCG(3, 3))
	a, b := longStream(m, r, 1000), longStream(m, r, 300)
	feed := func(d *Decoder, in Input, chunk int) []float32 {
		t.Helper()
		var last []float32
		img := 0
		for k := 0; k < len(in.IDs); {
			e := min(k+chunk, len(in.IDs))
			for e < len(in.IDs) && in.IDs[e-1] != m.special.VisionEnd && slices.Contains(in.IDs[k:e], m.special.VisionStart) {
				e++ // keep vision blocks whole
			}
			var imgs [][][]float32
			for _, id := range in.IDs[k:e] {
				if id == m.special.VisionStart {
					imgs = append(imgs, in.Images[img])
					img++
				}
			}
			lp, err := d.Feed(in.IDs[k:e], imgs, 1)
			if err != nil {
				t.Fatal(err)
			}
			last, k = lp, e
		}
		return last
	}
	fresh := func(in Input) []float32 {
		d := m.NewDecoder()
		defer d.Close()
		return feed(d, in, 97)
	}
	d := m.NewDecoder()
	defer d.Close()
	feed(d, a, 97) // grows past its first capacity
	d.Reset()
	if got, want := feed(d, b, 97), fresh(b); !slices.Equal(got, want) { // the same pieces
		t.Fatal("a reset decoder's distribution differs from a fresh decoder's")
	}
	g := m.NewDecoder()
	defer g.Close()
	head := Input{IDs: b.IDs[:20], Images: b.Images[:1]}
	feed(g, head, 20)
	feed(g, Input{IDs: b.IDs[20:40]}, 20)
	if err := g.Truncate(20); err != nil {
		t.Fatal(err)
	}
	words := Input{IDs: make([]int32, 900)} // text only: no screenshot needed
	for i := range words.IDs {
		words.IDs[i] = int32(1 + r.IntN(40))
	}
	got := feed(g, words, 300)
	f := m.NewDecoder() // the same pieces but the truncated one
	defer f.Close()
	feed(f, head, 20)
	if want := feed(f, words, 300); !slices.Equal(got, want) {
		t.Fatal("a truncated decoder grown past its capacity differs from a fresh one")
	}
	// and both read the stream the full forward pass reads
	whole := Input{IDs: append(append(slices.Clone(head.IDs), words.IDs...), 7), Images: head.Images}
	lp, err := m.LogProbs(whole, []int{len(whole.IDs) - 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if d := math.Abs(float64(got[m.ids.Compact(7)] - lp[0])); d > 1e-5 {
		t.Fatalf("after truncation and growth the decoder's next token is %v off the full forward pass", d)
	}
}
