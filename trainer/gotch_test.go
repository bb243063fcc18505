package trainer

import (
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"github.com/cualake/cualake/trainer/internal/tx"
)

func TestMain(m *testing.M) {
	// one intra-op thread unless CUALAKE_TORCH_THREADS says otherwise (for
	// benchmarks): reproducible sums, and parallel test binaries do not
	// oversubscribe a small CI box
	n := 1
	if v := os.Getenv("CUALAKE_TORCH_THREADS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			panic("CUALAKE_TORCH_THREADS: " + err.Error())
		}
	}
	if err := SetThreads(n); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// TestGotchLinearAdam checks the libtorch build end to end: a linear model
// y = Xw + b fitted with libtorch's Adam on the CPU converges.
func TestGotchLinearAdam(t *testing.T) {
	defer tx.Lock()()
	rng := rand.New(rand.NewPCG(1, 2))
	const n, d = 256, 4
	wTrue := []float32{1.5, -2, 0.5, 3}
	const bTrue = 0.7
	xs := make([]float32, n*d)
	ys := make([]float32, n)
	for i := 0; i < n; i++ {
		y := float32(bTrue)
		for j := 0; j < d; j++ {
			x := float32(rng.NormFloat64())
			xs[i*d+j] = x
			y += x * wTrue[j]
		}
		ys[i] = y
	}
	s := tx.NewScope()
	defer s.Close()
	x := s.Float32s(xs, []int64{n, d}, gotch.CPU)
	y := s.Float32s(ys, []int64{n, 1}, gotch.CPU)
	w := s.Zeros([]int64{d, 1}, gotch.CPU)
	b := s.Zeros([]int64{1}, gotch.CPU)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*ts.Tensor{w, b} {
		if err := p.RequiresGrad_(true); err != nil {
			t.Fatal(err)
		}
	}
	opt, err := ts.Adam(0.05, 0.9, 0.999, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Drop()
	if err := opt.AddParameters([]*ts.Tensor{w, b}); err != nil {
		t.Fatal(err)
	}
	var loss float64
	for step := 0; step < 500; step++ {
		st := tx.NewScope()
		pred := st.Add(st.Matmul(x, w), b)
		l := st.Sum(st.MulScalar(st.Square(st.Sub(pred, y)), 1.0/n))
		if err := opt.ZeroGrad(); err != nil {
			t.Fatal(err)
		}
		st.Backward(l)
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		loss, err = tx.Scalar(l)
		if err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
	got, err := tx.ReadFloat32(w)
	if err != nil {
		t.Fatal(err)
	}
	gb, err := tx.Scalar(b)
	if err != nil {
		t.Fatal(err)
	}
	if loss > 1e-4 {
		t.Errorf("final MSE %g, want < 1e-4", loss)
	}
	for j := range wTrue {
		if math.Abs(float64(got[j]-wTrue[j])) > 0.01 {
			t.Errorf("w[%d] = %v, want %v", j, got[j], wTrue[j])
		}
	}
	if math.Abs(gb-bTrue) > 0.01 {
		t.Errorf("b = %v, want %v", gb, bTrue)
	}
}
