package trainer

import (
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/sugarme/gotch"

	"github.com/cualake/cualake/trainer/internal/tx"
	"github.com/cualake/cualake/trainer/policy"
)

// Fixed benchmark batch, mirrored by bench/policy_torch.py: 32 items, 64
// context tokens and 8 action tokens each, ids drawn from a PCG(1, 2) stream
// over a 400-token vocabulary, default policy config.
const (
	benchBatch   = 32
	benchContext = 64
	benchAction  = 8
	benchVocab   = 400
)

func benchPolicy(b *testing.B) (*policy.Policy, []Item) {
	toks := append([]string{}, policy.SpecialTokens...)
	for i := len(toks); i < benchVocab; i++ {
		toks = append(toks, "w"+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	v, err := policy.UnmarshalVocab(vocabJSON(toks))
	if err != nil {
		b.Fatal(err)
	}
	p, err := policy.New(policy.DefaultConfig(v.VocabSize()), v, gotch.CPU, 1)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	items := make([]Item, benchBatch)
	for i := range items {
		ctx := make([]int32, benchContext)
		for j := range ctx {
			ctx[j] = int32(9 + rng.IntN(benchVocab-9))
		}
		act := make([]int32, benchAction)
		for j := range act {
			act[j] = int32(9 + rng.IntN(benchVocab-9))
		}
		items[i] = Item{Context: ctx, Action: act}
	}
	return p, items
}

// BenchmarkPolicyForwardBackward measures one teacher-forced forward pass,
// the cross-entropy loss and the backward pass (no optimiser step) on the
// fixed batch; tokens/s counts context plus action tokens.
func BenchmarkPolicyForwardBackward(b *testing.B) {
	p, items := benchPolicy(b)
	defer p.Close()
	bp := split(items)
	opt, err := NewOptimizer(p, DefaultSFTLR) // only to zero the gradients
	if err != nil {
		b.Fatal(err)
	}
	defer opt.Close()
	run := func() {
		logits, err := p.Logits(bp.inputs, bp.actions)
		if err != nil {
			b.Fatal(err)
		}
		defer tx.Lock()()
		s := tx.NewScope()
		defer s.Close()
		s.Track("logits", logits, nil)
		mask := s.Float32s(bp.mask, []int64{benchBatch, benchAction}, gotch.CPU)
		loss := crossEntropy(s, s.PickActions(s.LogSoftmax(logits, -1), bp.actions, gotch.CPU), mask)
		s.Backward(loss)
		if err := s.Err(); err != nil {
			b.Fatal(err)
		}
		if err := opt.opt.ZeroGrad(); err != nil {
			b.Fatal(err)
		}
	}
	run() // warm-up
	cpu0 := cpuSeconds()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run()
	}
	b.StopTimer()
	// CPU time as well as wall time: on a shared machine the wall clock
	// mostly measures the neighbours
	cpu := cpuSeconds() - cpu0
	b.ReportMetric(float64(b.N*benchBatch*(benchContext+benchAction))/b.Elapsed().Seconds(), "tokens/s")
	b.ReportMetric(float64(b.N*benchBatch*(benchContext+benchAction))/cpu, "tokens/cpu-s")
	b.ReportMetric(float64(tx.Threads()), "threads")
}

// cpuSeconds returns the process's user+system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
