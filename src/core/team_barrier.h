// A barrier for the threads of one parallel region that spins briefly and then sleeps.
// libgomp's own barrier spins for up to GOMP_SPINCOUNT pauses (300,000 by default: milliseconds)
// before it sleeps, and reads that setting once, at load. When other processes want the cores, a
// thread spinning for a descheduled peer burns its whole time slice, once per barrier: a sampler
// step has dozens of barriers, and a busy machine ran it a hundred times slower than one thread.
// Spinning only as long as a balanced step's threads take to meet, then waiting in the kernel
// (C++20 atomic wait: a futex), hands the core to the peer instead.
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
