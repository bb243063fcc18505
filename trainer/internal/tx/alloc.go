package tx

// #cgo CXXFLAGS: -std=c++17 -O2 -I/usr/include -I/usr/include/torch/csrc/api/include
// #cgo LDFLAGS: -lc10
// void cualake_install_cpu_allocator(long long max_cached_bytes);
import "C"

// libtorch allocates every intermediate tensor with posix_memalign and frees
// it when the op's output is dropped. glibc serves large aligned blocks from
// fresh pages (mmapped, or new heap: its memalign rarely reuses a freed
// block of the same size), so each step pays a page fault per 4 KiB of
// activations. On the virtual machines this project is measured on a fault
// costs ~40 µs: filling a fresh 16 MiB tensor took 150-250 ms, refilling a
// reused one 1 ms, and a 2,048-token forward and backward pass of the causal
// policy took 5.4 s. So the package installs, before any tensor exists, a
// caching CPU allocator (alloc.cpp): blocks of 64 KiB and more are rounded
// up to an eighth of their power of two and kept, when released, in a size-ordered
// pool (at most 2 GiB, the largest evicted first); a request takes the
// smallest pooled block that fits within twice its size, so the next step,
// or the next stream of another length, reuses them. Small
// blocks go to malloc as before. The process therefore keeps up to that much
// freed memory until it exits; results do not change (libtorch never reads
// memory it has not written).
func init() { C.cualake_install_cpu_allocator(-1) }
