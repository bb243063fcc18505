package tx

// at_set_num_threads and at_get_num_threads are defined in gotch's libtch
// (torch_api.cpp) but gotch v0.8.0 does not expose them to Go; the symbols
// resolve when libtch is linked into the same binary. at_grad_set_enabled is
// called directly because gotch's wrapper reads its 4-byte int result as an
// 8-byte Go int, so the "previous state" it reports is garbage.

// void at_set_num_threads(int n);
// int at_get_num_threads();
// int at_grad_set_enabled(int b);
import "C"

import (
	"fmt"

	"github.com/sugarme/gotch/ts"
)

// SetThreads sets libtorch's intra-op thread count (process-wide).
func SetThreads(n int) error {
	if n < 1 {
		return fmt.Errorf("threads must be >= 1, got %d", n)
	}
	defer Lock()()
	C.at_set_num_threads(C.int(n))
	if err := ts.TorchErr(); err != nil {
		return fmt.Errorf("set threads: %w", clean(err))
	}
	return nil
}

// Threads returns libtorch's intra-op thread count.
func Threads() int {
	defer Lock()()
	return int(C.at_get_num_threads())
}

// setGrad sets libtorch's (thread-local) grad mode and returns the previous
// mode.
func setGrad(on bool) (bool, error) {
	b := C.int(0)
	if on {
		b = 1
	}
	prev := C.at_grad_set_enabled(b)
	if err := ts.TorchErr(); err != nil {
		return false, clean(err)
	}
	if prev != 0 && prev != 1 {
		return false, fmt.Errorf("grad mode: unexpected result %d", int(prev))
	}
	return prev == 1, nil
}
