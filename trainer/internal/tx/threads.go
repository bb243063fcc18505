package tx

// at_set_num_threads and at_get_num_threads are defined in gotch's libtch
// (torch_api.cpp) but gotch v0.8.0 does not expose them to Go; the symbols
// resolve when libtch is linked into the same binary.

// #include <stdint.h>
// void at_set_num_threads(int n);
// int at_get_num_threads();
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
