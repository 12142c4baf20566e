#include "core/memory.h"

#if defined(__linux__)
#include <sys/mman.h>
#include <sys/sysinfo.h>
#elif defined(__APPLE__)
#include <sys/sysctl.h>
#endif

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>

namespace gpt {

namespace {
constexpr std::size_t kAlignment = 64;  // AlignedBuffer's
// Buffers of at least this size (the arena, parameters, optimizer state, packed operands) start on
// a 2 MiB boundary and ask Linux for transparent huge pages, which it gives only when asked on
// most distributions (`madvise` mode): a 10.7M-recipe step streams gigabytes through them, and
// 4 KiB pages cost it TLB misses and, at start-up, a page fault per 4 KiB.
constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

std::size_t round_up(std::size_t n, std::size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// Advice only: where the system refuses it, the buffer keeps small pages.
void advise_huge_pages([[maybe_unused]] void* p, [[maybe_unused]] std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  ::madvise(p, bytes, MADV_HUGEPAGE);
#endif
}
}  // namespace

std::string byte_size(double bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  std::size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < std::size(units)) bytes /= 1024, ++unit;
  char text[48];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, units[unit]);
  return text;
}

// 0 where unknown.
std::size_t system_memory_bytes() {
#if defined(__linux__)
  struct sysinfo info {};
  if (::sysinfo(&info) != 0) return 0;
  return (static_cast<std::size_t>(info.totalram) + static_cast<std::size_t>(info.totalswap)) * info.mem_unit;
#elif defined(__APPLE__)
  uint64_t bytes = 0;
  std::size_t size = sizeof bytes;
  if (::sysctlbyname("hw.memsize", &bytes, &size, nullptr, 0) != 0) return 0;
  return static_cast<std::size_t>(bytes);  // RAM only: macOS swaps to files it grows on demand
#else
  return 0;
#endif
}

AllocationFailure::AllocationFailure(double bytes, const std::string& purpose)
    : UserError(
          "out of memory: cannot allocate " + byte_size(bytes) + (purpose.empty() ? "" : " for " + purpose) +
              (system_memory_bytes() > 0
                   ? " (this machine has " + byte_size(static_cast<double>(system_memory_bytes())) + " of RAM and swap)"
                   : ""),
          ExitCode::runtime),
      bytes_(bytes) {}

void* allocate_aligned(std::size_t bytes) {
  const std::size_t limit = system_memory_bytes();
  if (bytes > SIZE_MAX - kHugePageBytes || (limit > 0 && bytes > limit))
    throw AllocationFailure(static_cast<double>(bytes));
  const std::size_t alignment = bytes >= kHugePageBytes ? kHugePageBytes : kAlignment;
  const std::size_t size = round_up(bytes, alignment);
  void* p = std::aligned_alloc(alignment, size);
  if (!p) throw AllocationFailure(static_cast<double>(bytes));
  if (alignment == kHugePageBytes) advise_huge_pages(p, size);
  return p;
}

}  // namespace gpt
