// Time as an input. Code that decides by elapsed time (the time budget, the stop saver's polling,
// throughput) reads a Clock it is given, so tests drive it with simulated time and get the same
// decisions on any machine, however fast or busy.
#pragma once

#include <chrono>

namespace gpt {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual double seconds() = 0;  // monotonic, from an arbitrary origin
};

// The machine's monotonic clock.
class SteadyClock final : public Clock {
 public:
  double seconds() override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
};

}  // namespace gpt
