// A caching CPU allocator for libtorch: see alloc.go for why.
#include <c10/core/CPUAllocator.h>

#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace {

// Blocks below kMinCached go to malloc as libtorch's default allocator does;
// larger ones are rounded up to an eighth of their power of two and kept on
// a free list of their size when released, up to kMaxCached bytes in all.
constexpr size_t kMinCached = 64 << 10;
constexpr size_t kAlign = 64;
size_t max_cached = size_t(4) << 30;

std::mutex mu;
std::unordered_map<size_t, std::vector<void*>> free_lists;
std::unordered_map<void*, size_t> sizes;
size_t cached = 0;

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
  size_t n = it->second;
  if (cached + n > max_cached) {
    sizes.erase(it);
    std::free(ptr);
    return;
  }
  free_lists[n].push_back(ptr);
  cached += n;
}

struct CachingAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) const override {
    void* p = nullptr;
    size_t n = round_up(nbytes == 0 ? 1 : nbytes);
    if (n >= kMinCached) {
      std::lock_guard<std::mutex> g(mu);
      auto it = free_lists.find(n);
      if (it != free_lists.end() && !it->second.empty()) {
        p = it->second.back();
        it->second.pop_back();
        cached -= n;
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
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
};

}  // namespace

extern "C" void cualake_install_cpu_allocator(long long max_cached_bytes) {
  if (max_cached_bytes >= 0) max_cached = size_t(max_cached_bytes);
  static CachingAllocator alloc;
  c10::SetCPUAllocator(&alloc, /*priority=*/100);
}
