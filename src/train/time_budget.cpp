#include "train/time_budget.h"

namespace gpt {

namespace {

// Evaluations after `done` up to and including the one at the run's end `n`.
int64_t evaluations_until(int64_t done, int64_t n, int64_t eval_interval) {
  const int64_t multiples = n / eval_interval - done / eval_interval;  // multiples k with done < k <= n
  return multiples + (n % eval_interval != 0 ? 1 : 0);
}

}  // namespace

int64_t plan_iterations(double budget, double elapsed, int64_t done, int64_t cap, int64_t eval_interval,
                        const RunCosts& costs) {
  auto fits = [&](int64_t n) {
    const double rest =
        static_cast<double>(n - done) * costs.iteration +
        static_cast<double>(evaluations_until(done, n, eval_interval)) * (costs.evaluation + costs.save);
    return elapsed + rest <= budget;
  };
  if (cap <= done || !fits(done + 1)) return done;
  int64_t low = done + 1, high = cap;  // fits(low); find the largest n that fits
  while (low < high) {
    const int64_t mid = low + (high - low + 1) / 2;
    if (fits(mid))
      low = mid;
    else
      high = mid - 1;
  }
  return low;
}

}  // namespace gpt
