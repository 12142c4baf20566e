// Simulated time for tests: every reading advances the clock by a fixed step, so whatever a run
// decides by time (its budget, its plan) is the same on any machine, however fast or busy.
#pragma once

#include <functional>

#include "core/clock.h"

namespace gpt::testing {

class SimulatedClock final : public Clock {
 public:
  explicit SimulatedClock(double seconds_per_reading) : step_(seconds_per_reading) {}
  double seconds() override {
    now_ += step_;
    if (on_reading) on_reading(now_);
    return now_;
  }
  std::function<void(double)> on_reading;  // called with the time of each reading

 private:
  double step_, now_ = 0;
};

}  // namespace gpt::testing
