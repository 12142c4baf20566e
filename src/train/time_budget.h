// max_time: a run's length in iterations, fixed from its measured costs so that it ends within
// its budget with the last evaluation and checkpoint done. Fixing the length (rather than
// stopping when the time is up) lets the learning-rate schedule end at min_lr at the run's end.
#pragma once

#include <cstdint>

namespace gpt {

struct RunCosts {
  double iteration;   // seconds per training iteration
  double evaluation;  // seconds per evaluation (both splits)
  double save;        // seconds per checkpoint
};

// The most iterations n in [done, cap] for which the rest of the run fits in `budget` seconds,
// `elapsed` having been spent: (n - done) iterations, an evaluation (and a checkpoint) at every
// multiple of eval_interval after `done` and at n itself. Returns `done` when not even that fits.
int64_t plan_iterations(double budget, double elapsed, int64_t done, int64_t cap, int64_t eval_interval,
                        const RunCosts& costs);

}  // namespace gpt
