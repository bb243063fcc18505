package causal

import (
	"math"
	"strings"
	"testing"

	"github.com/cualake/cualake/trainer"
)

// TestDropoutMask: a mask zeroes about p of its values, scales the rest by
// exactly 1/(1-p), and is a function of (seed, item).
func TestDropoutMask(t *testing.T) {
	if newDropout(0, 1, 0) != nil {
		t.Fatal("dropout 0 made a mask source")
	}
	const n, p = 200000, 0.2
	a := newDropout(p, 7, 3).mask(n)
	zeros := 0
	for i, v := range a {
		switch v {
		case 0:
			zeros++
		case float32(1 / (1 - p)):
		default:
			t.Fatalf("mask[%d] = %v, want 0 or %v", i, v, 1/(1-p))
		}
	}
	if f := float64(zeros) / n; math.Abs(f-p) > 0.005 {
		t.Fatalf("zeroed %.4f of the values, want %.2f", f, p)
	}
	same, other := newDropout(p, 7, 3).mask(n), newDropout(p, 7, 4).mask(n)
	differ := 0
	for i := range a {
		if a[i] != same[i] {
			t.Fatalf("the same (seed, item) gave another mask at %d", i)
		}
		if a[i] != other[i] {
			differ++
		}
	}
	if differ == 0 {
		t.Fatal("another item drew the same mask")
	}
}

// TestDropoutStep: an SFT step with dropout trains on a thinned network
// (its loss and update differ from the plain step's), gives the same bits
// whether its items run one, two or three at a time and for the same seed,
// other bits for another seed, and leaves the model itself without
// dropout, so sampling and scoring after it are the plain network's.
func TestDropoutStep(t *testing.T) {
	defer func(n int) { itemWorkers = n }(itemWorkers)
	start := testModel(t, 21)
	batch := copyItems(start, 6)
	step := func(workers int, opts SFTOptions) (*Model, trainer.StepMetrics) {
		t.Helper()
		m, err := start.Clone()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		opt, err := trainer.NewOptimizerOver(m.Parameters(), 1e-2)
		if err != nil {
			t.Fatal(err)
		}
		defer opt.Close()
		itemWorkers = workers
		sm, err := SFTStep(m, opt, batch, opts)
		if err != nil {
			t.Fatal(err)
		}
		if m.drop != nil {
			t.Fatal("the step left dropout on the model")
		}
		return m, sm
	}
	plain, plainM := step(1, SFTOptions{MaxGradNorm: 1})
	opts := SFTOptions{MaxGradNorm: 1, Dropout: 0.3, DropoutSeed: 99}
	want, wantM := step(1, opts)
	if sameBits(t, plain, want) == "" || plainM.Loss == wantM.Loss {
		t.Fatalf("dropout 0.3 changed neither the update nor the loss (%v)", wantM.Loss)
	}
	for _, w := range []int{1, 2, 3} {
		got, gotM := step(w, opts)
		if d := sameBits(t, want, got); d != "" || gotM.Loss != wantM.Loss {
			t.Fatalf("%d workers: %s, loss %v against %v", w, d, gotM.Loss, wantM.Loss)
		}
	}
	opts.DropoutSeed = 100
	if other, _ := step(2, opts); sameBits(t, want, other) == "" {
		t.Fatal("another dropout seed gave the same update")
	}
	// Scoring after the step is deterministic: no mask reaches inference.
	in := batch[0].Input()
	at := batch[0].Trainable()
	x, err := want.LogProbs(in, at, 1)
	if err != nil {
		t.Fatal(err)
	}
	y, err := want.LogProbs(in, at, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
			t.Fatalf("log-prob %d: %v then %v", i, x[i], y[i])
		}
	}
	for _, bad := range []float64{-0.1, 1, math.NaN()} {
		m, err := start.Clone()
		if err != nil {
			t.Fatal(err)
		}
		opt, err := trainer.NewOptimizerOver(m.Parameters(), 1e-2)
		if err != nil {
			t.Fatal(err)
		}
		_, err = SFTStep(m, opt, batch, SFTOptions{Dropout: bad})
		opt.Close()
		m.Close()
		if err == nil || !strings.Contains(err.Error(), "dropout") {
			t.Fatalf("dropout %v: %v", bad, err)
		}
	}
}
