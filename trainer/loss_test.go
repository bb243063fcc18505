package trainer

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"github.com/cualake/cualake/trainer/internal/tx"
)

// leaf makes a [b, l] float32 tensor that requires grad.
func leaf(t *testing.T, s *tx.Scope, vals []float64, b, l int64) *ts.Tensor {
	t.Helper()
	x := s.Float32s(f32(vals), []int64{b, l}, gotch.CPU)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if err := x.RequiresGrad_(true); err != nil {
		t.Fatal(err)
	}
	return x
}

func f32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func gradOf(t *testing.T, s *tx.Scope, loss, x *ts.Tensor) []float32 {
	t.Helper()
	s.Backward(loss)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	g, err := x.Grad(false)
	if err != nil {
		t.Fatal(err)
	}
	s.Track("grad", g, nil)
	vals, err := tx.ReadFloat32(g)
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*(1+math.Abs(b)) }

// TestSurrogateHandComputed checks the loss and its gradient on six tokens
// chosen to hit each branch (values worked out by hand in the comments).
func TestSurrogateHandComputed(t *testing.T) {
	defer tx.Lock()()
	s := tx.NewScope()
	defer s.Close()
	// token: ratio r, advantage A, mask, ref-logp offset d = ref - logp
	//  0: r=1.1  A=+1  inside the clip     obj  1.1   dobj/dlogp = r·A = 1.1
	//  1: r=1.5  A=+1  high clip active    obj  1.28  grad 0
	//  2: r=0.5  A=-1  low clip active     obj -0.8   grad 0
	//  3: r=4.0  A=-1  ratio cap c=3       obj -3     grad 0 (uncapped: -4, grad -4)
	//  4: r=0.9  A=-1  inside (tie)        obj -0.9   grad -0.9
	//  5: r=2.0  A=+1  masked out
	ratios := []float64{1.1, 1.5, 0.5, 4.0, 0.9, 2.0}
	advs := []float64{1, 1, -1, -1, -1, 1}
	mask := []float64{1, 1, 1, 1, 1, 0}
	d := []float64{0.1, -0.2, 0, 0.3, 0.05, 0.5}
	old := make([]float64, 6)
	logp := make([]float64, 6)
	ref := make([]float64, 6)
	for i := range ratios {
		old[i] = -1
		logp[i] = -1 + math.Log(ratios[i])
		ref[i] = logp[i] + d[i]
	}
	cfg := DefaultLossConfig()
	lp := leaf(t, s, logp, 1, 6)
	loss, st, err := SurrogateLoss(lp,
		s.Float32s(f32(old), []int64{1, 6}, gotch.CPU),
		s.Float32s(f32(ref), []int64{1, 6}, gotch.CPU),
		s.Float32s(f32(advs), []int64{1, 6}, gotch.CPU),
		s.Float32s(f32(mask), []int64{1, 6}, gotch.CPU), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Track("loss", loss, nil)
	// policy loss = -(1.1 + 1.28 - 0.8 - 3 - 0.9)/5 = 2.32/5 = 0.464
	// KL (k3 = e^d - d - 1, mean of 5) = 0.0150063150
	// loss = 0.464 + 1e-4 · 0.0150063150 = 0.4640015006
	checks := []struct {
		name      string
		got, want float64
	}{
		{"policy loss", st.PolicyLoss, 0.464},
		{"kl", st.KL, 0.015006315021131344},
		{"loss", st.Loss, 0.46400150063150214},
		{"clip low", st.ClipFracLow, 0.2},
		{"clip high", st.ClipFracHigh, 0.2},
		{"cap", st.CapFrac, 0.2},
		{"ratio mean", st.RatioMean, 1.6},
		{"tokens", float64(st.Tokens), 5},
	}
	for _, c := range checks {
		if !near(c.got, c.want, 1e-5) {
			t.Errorf("%s = %.9f, want %.9f", c.name, c.got, c.want)
		}
	}
	// d loss/d logp = (-dobj + 1e-4·(1 - e^d)) / 5
	want := []float64{-0.22000210341836152, 3.625384938440364e-06, 0, -6.997176151520064e-06, 0.17999897457807248, 0}
	got := gradOf(t, s, loss, lp)
	for i := range want {
		if math.Abs(float64(got[i])-want[i]) > 1e-6 {
			t.Errorf("grad[%d] = %.9g, want %.9g", i, got[i], want[i])
		}
	}
	// the pure-Go reference agrees
	refLoss, refGrad, refSt := SurrogateLossRef([][]float64{logp}, [][]float64{old}, [][]float64{ref}, [][]float64{advs}, [][]uint8{{1, 1, 1, 1, 1, 0}}, cfg)
	if !near(refLoss, 0.46400150063150214, 1e-9) || refSt.ClipFracLow != 0.2 || refSt.CapFrac != 0.2 {
		t.Errorf("reference: loss %v stats %+v", refLoss, refSt)
	}
	for i := range want {
		if math.Abs(refGrad[0][i]-want[i]) > 1e-9 {
			t.Errorf("reference grad[%d] = %v, want %v", i, refGrad[0][i], want[i])
		}
	}
}

// TestSurrogateNoCap shows what the cap changes: without it (c huge) token 3
// of the hand-computed case contributes 4 instead of 3 and has gradient.
func TestSurrogateNoCap(t *testing.T) {
	cfg := DefaultLossConfig()
	cfg.KLCoef = 0
	logp := [][]float64{{math.Log(4) - 1}}
	old := [][]float64{{-1}}
	adv := [][]float64{{-1}}
	mask := [][]uint8{{1}}
	l, g, _ := SurrogateLossRef(logp, old, nil, adv, mask, cfg)
	if !near(l, 3, 1e-12) || g[0][0] != 0 {
		t.Errorf("capped: loss %v grad %v, want 3, 0", l, g[0][0])
	}
	cfg.RatioCap = 1e9
	l, g, _ = SurrogateLossRef(logp, old, nil, adv, mask, cfg)
	if !near(l, 4, 1e-12) || !near(g[0][0], 4, 1e-12) {
		t.Errorf("uncapped: loss %v grad %v, want 4, 4", l, g[0][0])
	}
}

// TestSurrogateMatchesReference compares the tensor loss with the pure-Go
// reference on random batches, for both aggregations.
func TestSurrogateMatchesReference(t *testing.T) {
	defer tx.Lock()()
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := 0; trial < 20; trial++ {
		for _, agg := range []Aggregation{TokenMean, SeqMeanTokenMean, ItemSumTokenMean} {
			const B, L = 3, 7
			logp, old, ref, adv := make([][]float64, B), make([][]float64, B), make([][]float64, B), make([][]float64, B)
			mask := make([][]uint8, B)
			var flat [5][]float64
			for b := 0; b < B; b++ {
				a := rng.NormFloat64()
				for l := 0; l < L; l++ {
					o := -3 * rng.Float64()
					lp := o + 0.8*rng.NormFloat64() // ratios from ~0.1 to ~10
					logp[b] = append(logp[b], lp)
					old[b] = append(old[b], o)
					r := lp + 0.3*rng.NormFloat64()
					if rng.Float64() < 0.15 {
						r = lp + 25*rng.NormFloat64() // far from the reference: a bound binds
					}
					ref[b] = append(ref[b], r)
					adv[b] = append(adv[b], a)
					m := uint8(0)
					if rng.Float64() < 0.7 {
						m = 1
					}
					mask[b] = append(mask[b], m)
					flat[0] = append(flat[0], lp)
					flat[1] = append(flat[1], o)
					flat[2] = append(flat[2], ref[b][l])
					flat[3] = append(flat[3], a)
					flat[4] = append(flat[4], float64(m))
				}
			}
			// float32 rounding of logp shifts ratios slightly; recompute the
			// reference from the rounded values
			for i := 0; i < 3; i++ {
				for j, v := range flat[i] {
					flat[i][j] = float64(float32(v))
				}
			}
			for b := 0; b < B; b++ {
				for l := 0; l < L; l++ {
					logp[b][l], old[b][l], ref[b][l] = flat[0][b*L+l], flat[1][b*L+l], flat[2][b*L+l]
					adv[b][l] = float64(float32(adv[b][l]))
				}
			}
			cfg := DefaultLossConfig()
			cfg.Agg = agg
			cfg.KLCoef = 0.1 // make the KL gradient visible
			s := tx.NewScope()
			lp := leaf(t, s, flat[0], B, L)
			loss, st, err := SurrogateLoss(lp,
				s.Float32s(f32(flat[1]), []int64{B, L}, gotch.CPU),
				s.Float32s(f32(flat[2]), []int64{B, L}, gotch.CPU),
				s.Float32s(f32(flat[3]), []int64{B, L}, gotch.CPU),
				s.Float32s(f32(flat[4]), []int64{B, L}, gotch.CPU), cfg)
			if err != nil {
				t.Fatal(err)
			}
			s.Track("loss", loss, nil)
			got := gradOf(t, s, loss, lp)
			wantLoss, wantGrad, wantSt := SurrogateLossRef(logp, old, ref, adv, mask, cfg)
			if !near(st.Loss, wantLoss, 1e-4) || !near(st.KL, wantSt.KL, 1e-4) ||
				!near(st.ClipFracLow, wantSt.ClipFracLow, 1e-6) || !near(st.ClipFracHigh, wantSt.ClipFracHigh, 1e-6) ||
				!near(st.CapFrac, wantSt.CapFrac, 1e-6) || st.Tokens != wantSt.Tokens {
				t.Errorf("trial %d %v: stats %+v, reference %+v", trial, agg, st, wantSt)
			}
			for b := 0; b < B; b++ {
				for l := 0; l < L; l++ {
					if g, w := float64(got[b*L+l]), wantGrad[b][l]; math.Abs(g-w) > 1e-5*(1+math.Abs(w)) {
						t.Errorf("trial %d %v: grad[%d][%d] = %v, reference %v", trial, agg, b, l, g, w)
					}
				}
			}
			s.Close()
		}
	}
}

// TestCrossEntropyMatchesReference checks the SFT loss value and gradient.
func TestCrossEntropyMatchesReference(t *testing.T) {
	defer tx.Lock()()
	rng := rand.New(rand.NewPCG(3, 4))
	const B, L, V = 2, 3, 5
	logits := make([][][]float64, B)
	var flat []float64
	for b := range logits {
		logits[b] = make([][]float64, L)
		for l := range logits[b] {
			for v := 0; v < V; v++ {
				x := float64(float32(2 * rng.NormFloat64()))
				logits[b][l] = append(logits[b][l], x)
				flat = append(flat, x)
			}
		}
	}
	targets := [][]int32{{1, 4, 0}, {2, 3}}
	mask := [][]uint8{{1, 0, 1}, nil}
	s := tx.NewScope()
	defer s.Close()
	x := s.Float32s(f32(flat), []int64{B, L, V}, gotch.CPU)
	if err := x.RequiresGrad_(true); err != nil {
		t.Fatal(err)
	}
	loss, err := CrossEntropyLoss(x, targets, mask)
	if err != nil {
		t.Fatal(err)
	}
	s.Track("loss", loss, nil)
	gotLoss, err := tx.Scalar(loss)
	if err != nil {
		t.Fatal(err)
	}
	wantLoss, wantGrad := CrossEntropyLossRef(logits, targets, mask)
	if !near(gotLoss, wantLoss, 1e-5) {
		t.Errorf("loss %v, reference %v", gotLoss, wantLoss)
	}
	got := gradOf(t, s, loss, x)
	for b := 0; b < B; b++ {
		for l := 0; l < L; l++ {
			for v := 0; v < V; v++ {
				if g, w := float64(got[(b*L+l)*V+v]), wantGrad[b][l][v]; math.Abs(g-w) > 1e-6 {
					t.Errorf("grad[%d][%d][%d] = %v, reference %v", b, l, v, g, w)
				}
			}
		}
	}
	// hand check of the first scored position: -log softmax(logits[0][0])[1]
	row := logits[0][0]
	z := 0.0
	for _, v := range row {
		z += math.Exp(v)
	}
	first := -(row[1] - math.Log(z))
	if _, err := CrossEntropyLoss(x, [][]int32{{1}, {}}, nil); err != nil {
		t.Fatal(err)
	}
	one, err := CrossEntropyLoss(x, [][]int32{{1}, {}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Track("one", one, nil)
	if v, err := tx.Scalar(one); err != nil || !near(v, first, 1e-5) {
		t.Errorf("single-token loss %v (%v), want %v", v, err, first)
	}
}

// surrogateOf evaluates SurrogateLoss on one padded batch and returns the
// stats and d(loss)/d(logp).
func surrogateOf(t *testing.T, logp, old, ref, adv, mask []float64, B, L int, cfg LossConfig) (LossStats, []float32) {
	t.Helper()
	s := tx.NewScope()
	defer s.Close()
	lp := leaf(t, s, logp, int64(B), int64(L))
	var refT *ts.Tensor
	if ref != nil {
		refT = s.Float32s(f32(ref), []int64{int64(B), int64(L)}, gotch.CPU)
	}
	loss, st, err := SurrogateLoss(lp,
		s.Float32s(f32(old), []int64{int64(B), int64(L)}, gotch.CPU), refT,
		s.Float32s(f32(adv), []int64{int64(B), int64(L)}, gotch.CPU),
		s.Float32s(f32(mask), []int64{int64(B), int64(L)}, gotch.CPU), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Track("loss", loss, nil)
	return st, gradOf(t, s, loss, lp)
}

// TestKLBounded: a token far from the reference contributes at most
// KLTokenBound to the KL term and no gradient, in the tensor loss as in the
// reference; the unbounded k3 of such a token (d = 30) is about 1e13.
func TestKLBounded(t *testing.T) {
	defer tx.Lock()()
	cfg := DefaultLossConfig()
	cfg.KLCoef = 1
	// Three tokens: d = ref - logp of 30 (both bounds bind), 3 (k3 = 16, the
	// token bound binds), 0.5 (no bound).
	logp := []float64{-31, -4, -1.5}
	ref := []float64{-1, -1, -1}
	old := []float64{-31, -4, -1.5}
	adv := []float64{0, 0, 0}
	mask := []float64{1, 1, 1}
	st, grad := surrogateOf(t, logp, old, ref, adv, mask, 1, 3, cfg)
	k3 := math.Exp(0.5) - 0.5 - 1
	want := (KLTokenBound + KLTokenBound + k3) / 3
	if !near(st.KL, want, 1e-5) || !near(st.Loss, want, 1e-5) {
		t.Fatalf("KL %v loss %v, want %v (two tokens at the bound of %v)", st.KL, st.Loss, want, KLTokenBound)
	}
	if grad[0] != 0 || grad[1] != 0 {
		t.Errorf("clamped tokens pass gradient %v, %v; want 0", grad[0], grad[1])
	}
	if g, w := float64(grad[2]), (1-math.Exp(0.5))/3; math.Abs(g-w) > 1e-5 {
		t.Errorf("free token gradient %v, want %v", g, w)
	}
}

// TestSTEPOConservationInLoss checks EvoCUA-1.5's eq. 11 in the loss the
// trainer actually minimises (eq. 13, ItemSumTokenMean): on-policy (r = 1),
// a trajectory cut into |T| step items with A/|T| each weighs what the
// whole trajectory as one item with A weighs, in loss and in the gradient
// summed over its tokens; and a group's step items sum to sum_i A_i = 0.
func TestSTEPOConservationInLoss(t *testing.T) {
	defer tx.Lock()()
	cfg := DefaultLossConfig()
	cfg.KLCoef = 0
	cfg.Agg = ItemSumTokenMean
	const A = 1.5
	// Trajectory of 3 steps whose responses have 2, 4 and 1 tokens.
	lens := []int{2, 4, 1}
	const L = 4
	var logp, adv, mask []float64
	for _, n := range lens {
		for k := 0; k < L; k++ {
			logp = append(logp, -0.7)
			adv = append(adv, A/float64(len(lens)))
			mask = append(mask, map[bool]float64{true: 1, false: 0}[k < n])
		}
	}
	st, grad := surrogateOf(t, logp, logp, nil, adv, mask, len(lens), L, cfg)
	if !near(st.PolicyLoss, -A, 1e-6) {
		t.Errorf("3 step items with A/|T|: policy loss %v, want -A = %v", st.PolicyLoss, -A)
	}
	// Per item, the token gradients sum to -A/|T| (token mean): the step
	// items of a trajectory carry A together.
	total := 0.0
	for _, g := range grad {
		total += float64(g)
	}
	if !near(total, -A, 1e-5) {
		t.Errorf("gradient mass %v, want %v", total, -A)
	}
	// The same trajectory as one item with advantage A.
	one, _ := surrogateOf(t, []float64{-0.7, -0.7}, []float64{-0.7, -0.7}, nil, []float64{A, A}, []float64{1, 1}, 1, 2, cfg)
	if !near(one.PolicyLoss, st.PolicyLoss, 1e-6) {
		t.Errorf("one item: %v, step items: %v", one.PolicyLoss, st.PolicyLoss)
	}
	// Token-mean (the old STEPO aggregation) breaks it: longer responses
	// weigh more, so the loss is not -A.
	cfg.Agg = TokenMean
	tm, _ := surrogateOf(t, logp, logp, nil, adv, mask, len(lens), L, cfg)
	if near(tm.PolicyLoss, -A, 1e-3) {
		t.Errorf("token mean gives %v, which should differ from -A", tm.PolicyLoss)
	}
}
