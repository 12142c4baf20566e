#include "core/team_barrier.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace gpt {

namespace {

// About 10-100 microseconds of pauses, depending on the CPU's pause: longer than the threads of a
// balanced step take to meet, far shorter than a scheduler's time slice.
constexpr int kSpins = 2000;

inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

}  // namespace

void TeamBarrier::arrive_and_wait(int team) {
  if (team <= 1) return;
  const uint32_t round = round_.load(std::memory_order_acquire);
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == team) {
    // The last to arrive: nobody touches arrived_ again until round_ moves on.
    arrived_.store(0, std::memory_order_relaxed);
    round_.fetch_add(1, std::memory_order_release);
    round_.notify_all();
    return;
  }
  for (int spin = 0; spin < kSpins; ++spin) {
    if (round_.load(std::memory_order_acquire) != round) return;
    spin_pause();
  }
  while (round_.load(std::memory_order_acquire) == round) round_.wait(round, std::memory_order_acquire);
}

}  // namespace gpt
