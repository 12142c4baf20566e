// A barrier for the threads of one parallel region that spins briefly, then sleeps in the kernel
// (C++20 atomic wait: a futex). libgomp's barrier spins for milliseconds first (GOMP_SPINCOUNT,
// read once at load): beside other busy processes, a thread spinning for a descheduled peer burns
// its time slice at every barrier, and a sampler step has dozens of barriers.
#pragma once

#include <atomic>
#include <cstdint>

namespace gpt {

class TeamBarrier {
 public:
  // Every thread of a team of `team` threads calls it; returns once all have. The same object
  // serves any number of rounds; every caller must pass the same team size.
  void arrive_and_wait(int team);

 private:
  std::atomic<int> arrived_{0};
  std::atomic<uint32_t> round_{0};
};

}  // namespace gpt
