#include "core/memory.h"

#if defined(__linux__)
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
  if (bytes > SIZE_MAX - kAlignment || (limit > 0 && bytes > limit))
    throw AllocationFailure(static_cast<double>(bytes));
  void* p = std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
  if (!p) throw AllocationFailure(static_cast<double>(bytes));
  return p;
}

}  // namespace gpt
