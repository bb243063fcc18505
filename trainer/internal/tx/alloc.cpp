// A caching CPU allocator for libtorch: see alloc.go for why.
#include <c10/core/CPUAllocator.h>

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <new>
#include <unordered_map>

namespace {

// Blocks below kMinCached go to malloc as libtorch's default allocator does.
// Larger ones are rounded up to an eighth of their power of two and, when
// released, kept in a size-ordered pool: a request takes the smallest pooled
// block that fits and wastes at most half of it (activations change size
// with every stream's length, so exact-size lists would rarely match). The
// pool holds at most max_cached bytes; past that the largest blocks are
// given back to the system first.
constexpr size_t kMinCached = 64 << 10;
constexpr size_t kAlign = 64;
size_t max_cached = size_t(2) << 30;

std::mutex mu;
std::multimap<size_t, void*> pool;           // free blocks by size
std::unordered_map<void*, size_t> sizes;     // every cached-size block, in use or pooled
size_t cached = 0;                            // bytes in the pool

size_t round_up(size_t n) {
  if (n < kMinCached) return n;
  size_t p = 1;
  while (p * 2 <= n) p *= 2;
  size_t step = p / 8;
  return (n + step - 1) / step * step;
}

void release(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> g(mu);
  auto it = sizes.find(ptr);
  if (it == sizes.end()) {
    std::free(ptr);
    return;
  }
  pool.emplace(it->second, ptr);
  cached += it->second;
  while (cached > max_cached && !pool.empty()) {
    auto big = std::prev(pool.end());
    cached -= big->first;
    sizes.erase(big->second);
    std::free(big->second);
    pool.erase(big);
  }
}

// c10::Allocator changed between the libtorch releases cualake builds on:
// 1.13 (Debian) declares `DataPtr allocate(size_t) const`; 2.x declares it
// non-const and adds a pure `copy_data`. The class defines both forms of
// allocate and copy_data without `override`, so each overrides whatever the
// headers it is compiled against declare, and the rest are plain members.
struct CachingAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) const { return take(nbytes); }
  c10::DataPtr allocate(size_t nbytes) { return take(nbytes); }
  void copy_data(void* dest, const void* src, std::size_t count) const {
    if (count > 0) std::memcpy(dest, src, count);
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }

 private:
  static c10::DataPtr take(size_t nbytes) {
    void* p = nullptr;
    size_t n = round_up(nbytes == 0 ? 1 : nbytes);
    if (n >= kMinCached) {
      std::lock_guard<std::mutex> g(mu);
      auto it = pool.lower_bound(n);
      if (it != pool.end() && it->first <= 2 * n) {
        p = it->second;
        cached -= it->first;
        pool.erase(it);
      }
    }
    if (p == nullptr) {
      if (posix_memalign(&p, kAlign, n) != 0) throw std::bad_alloc();
      if (n >= kMinCached) {
        std::lock_guard<std::mutex> g(mu);
        sizes[p] = n;
      }
    }
    return {p, p, &release, c10::Device(c10::DeviceType::CPU)};
  }
};

}  // namespace

extern "C" void cualake_install_cpu_allocator(long long max_cached_bytes) {
  if (max_cached_bytes >= 0) max_cached = size_t(max_cached_bytes);
  static CachingAllocator alloc;
  c10::SetCPUAllocator(&alloc, /*priority=*/100);
}
