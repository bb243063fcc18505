package causal

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/sugarme/gotch"

	"github.com/cualake/cualake/trainer"
)

// TestSFTOnDevice runs a short SFT and a checkpoint round trip on the
// device named by CUALAKE_TEST_DEVICE (default "cpu"; "cuda" on a GPU
// machine, docs/gpu.md): the loss falls, and the checkpoint loaded on the
// CPU scores the trained tokens as the device model does, within 1e-3. On
// the CPU it still checks the device-generic path (New on a named device,
// MarshalBinary, Load onto gotch.CPU), so the default run never skips it.
func TestSFTOnDevice(t *testing.T) {
	name, dev := testDevice(t)
	host := testModel(t, 3) // for its id map and the streams
	m, err := New(host.Config(), host.IDs(), host.Special(), host.Tokenizer(), dev, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	items := copyItems(host, 16)
	opt, err := trainer.NewOptimizerOver(m.Parameters(), 1e-2)
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Close()
	var first, last trainer.StepMetrics
	for step := 0; step < 40; step++ {
		if last, err = SFTStep(m, opt, items, SFTOptions{MaxGradNorm: 1}); err != nil {
			t.Fatal(err)
		}
		if step == 0 {
			first = last
		}
	}
	if !(last.Loss < first.Loss/2) {
		t.Errorf("loss %v -> %v on %s", first.Loss, last.Loss, name)
	}
	data, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	cpu, err := Load(data, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	it := items[0]
	at := it.Trainable()
	a, err := m.LogProbs(it.Input(), at, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cpu.LogProbs(it.Input(), at, 1)
	if err != nil {
		t.Fatal(err)
	}
	for k := range a {
		if math.Abs(float64(a[k]-b[k])) > 1e-3 {
			t.Errorf("token %d: %s logp %v, cpu %v", at[k], name, a[k], b[k])
		}
	}
}

// testDevice is the device CUALAKE_TEST_DEVICE names (default "cpu"; "cuda"
// on a GPU machine, docs/gpu.md), for the device tests and the benchmark.
func testDevice(t testing.TB) (string, gotch.Device) {
	name := os.Getenv("CUALAKE_TEST_DEVICE")
	if name == "" {
		name = "cpu"
	}
	dev, err := trainer.Device(name)
	if err != nil {
		t.Fatal(err)
	}
	return name, dev
}

// TestGRPOOnDevice runs GRPO steps on the device CUALAKE_TEST_DEVICE names:
// the model built there from the CPU model's weights scores the stream as
// the CPU model does (within 1e-3), the first step is on-policy (ratio 1
// from the recorded log-probabilities), and the trained tokens become
// likelier under a positive advantage, with the frozen reference (the KL
// term) on the same device.
func TestGRPOOnDevice(t *testing.T) {
	name, dev := testDevice(t)
	host := testModel(t, 4)
	w, err := host.Weights()
	if err != nil {
		t.Fatal(err)
	}
	m, err := build(host.cfg, host.ids, host.special, host.tokenizer, dev, w)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ref, err := m.Clone()
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	in := testStream(m, rand.New(rand.NewPCG(2, 2)))
	mask := make([]int8, len(in.IDs))
	at := scorable(m, in.IDs)
	for _, k := range at[len(at)-3:] {
		mask[k] = 1
	}
	it := Item{ID: "g", IDs: in.IDs, Mask: mask, Logp: make([]float32, len(in.IDs)), HasLogp: true, Advantage: 1, Images: in.Images}
	before, err := m.LogProbs(in, it.Trainable(), 0.8)
	if err != nil {
		t.Fatal(err)
	}
	onHost, err := host.LogProbs(in, it.Trainable(), 0.8)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range it.Trainable() {
		if math.Abs(float64(before[i]-onHost[i])) > 1e-3 {
			t.Errorf("token %d: %s logp %v, cpu %v", k, name, before[i], onHost[i])
		}
		it.Logp[k] = before[i]
	}
	opt, err := trainer.NewOptimizerOver(m.Parameters(), 1e-2)
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Close()
	for step := 0; step < 3; step++ {
		gm, err := GRPOStep(m, ref, opt, []Item{it}, trainer.DefaultGRPOOptions())
		if err != nil {
			t.Fatal(err)
		}
		if step == 0 && (math.Abs(gm.RatioMean-1) > 1e-4 || gm.Tokens != 3) {
			t.Fatalf("%s: on-policy ratio %v over %d tokens", name, gm.RatioMean, gm.Tokens)
		}
	}
	after, err := m.LogProbs(in, it.Trainable(), 0.8)
	if err != nil {
		t.Fatal(err)
	}
	var d float64
	for i := range after {
		d += float64(after[i] - before[i])
	}
	if d <= 0 {
		t.Fatalf("%s: a positive advantage moved the log-probabilities by %v", name, d)
	}
}
