package causal

import (
	"math"
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
	name := os.Getenv("CUALAKE_TEST_DEVICE")
	if name == "" {
		name = "cpu"
	}
	dev, err := trainer.Device(name)
	if err != nil {
		t.Fatal(err)
	}
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
