package trainer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sugarme/gotch"
)

// ErrNoCUDA reports that CUDA was requested but libtorch has no CUDA device.
var ErrNoCUDA = errors.New("cuda requested but libtorch reports no CUDA device (CPU-only libtorch build, or no GPU); see docs/gpu.md")

// Device maps "cpu" or "cuda" (case-insensitive; "" means cpu) to a gotch
// device. "cuda" is the first GPU and fails with ErrNoCUDA when libtorch
// cannot see one, rather than silently falling back to the CPU.
func Device(name string) (gotch.Device, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "", "cpu":
		return gotch.CPU, nil
	case "cuda", "gpu":
		d := gotch.CudaIfAvailable()
		if !d.IsCuda() {
			return gotch.CPU, ErrNoCUDA
		}
		return d, nil
	}
	return gotch.CPU, fmt.Errorf("unknown device %q (want cpu or cuda)", name)
}
