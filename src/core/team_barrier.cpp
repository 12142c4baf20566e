#include "core/team_barrier.h"

#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace gpt {

namespace {

// Longer than the threads of a balanced step take to meet, far shorter than a scheduler's time
// slice. Timed, since a pause lasts from a few cycles (aarch64's yield) to over a hundred.
constexpr auto kSpinTime = std::chrono::microseconds(50);
constexpr int kPausesPerClockRead = 64;

inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("isb");
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
  const auto spin_end = std::chrono::steady_clock::now() + kSpinTime;
  do {
    for (int pause = 0; pause < kPausesPerClockRead; ++pause) {
      if (round_.load(std::memory_order_acquire) != round) return;
      spin_pause();
    }
  } while (std::chrono::steady_clock::now() < spin_end);
  while (round_.load(std::memory_order_acquire) == round) round_.wait(round, std::memory_order_acquire);
}

}  // namespace gpt
