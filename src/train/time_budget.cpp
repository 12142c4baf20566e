#include "train/time_budget.h"

#include <algorithm>

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

namespace {

constexpr int64_t kPlanAfterIterations = 10;
constexpr double kPlanAfterBudgetShare = 0.03;
constexpr double kBudgetUse = 0.99;  // a margin for the variation of the step time

}  // namespace

BudgetPlanner::BudgetPlanner(double budget_seconds, Run run) : budget_(budget_seconds), run_(run) {}

void BudgetPlanner::record_iteration(double seconds) {
  if (iterations_ == 0)
    first_iteration_seconds_ = seconds;
  else
    later_iterations_seconds_ += seconds;
  ++iterations_;
  train_seconds_ += seconds;
}

bool BudgetPlanner::measured() const {
  return iterations_ >= kPlanAfterIterations && train_seconds_ >= kPlanAfterBudgetShare * budget_;
}

int64_t BudgetPlanner::plan(double elapsed, int64_t done) {
  costs_.iteration = mean_iteration_seconds();
  costs_.save = expected_save_seconds();
  costs_.evaluation = expected_evaluation_seconds();
  return std::max(plan_iterations(budget_ * kBudgetUse, elapsed, done, kUnplanned, run_.eval_interval, costs_),
                  done + 1);
}

bool BudgetPlanner::out_of_time(double elapsed) const {
  return elapsed + expected_evaluation_seconds() + expected_save_seconds() >= budget_ * kBudgetUse;
}

// The first iteration warms caches and allocators: the mean of the others. The mean, not the
// median: the run's length is a sum of step times, and a shared machine's occasional slow steps
// (a skewed distribution, the median well below the mean) would otherwise plan a decay longer
// than the budget and cut it short. Asked every iteration, it keeps a running sum (the same bits
// as adding the times in order afresh, which made a long run quadratic).
double BudgetPlanner::mean_iteration_seconds() const {
  if (iterations_ == 0) return 0;
  if (iterations_ == 1) return first_iteration_seconds_;
  return later_iterations_seconds_ / static_cast<double>(iterations_ - 1);
}

// The last evaluation's time, but the only one so far may be the first, slowed by warm-up: at
// most twice what its forward passes cost at the step time (a step is about three forwards).
double BudgetPlanner::expected_evaluation_seconds() const {
  const double step = mean_iteration_seconds();
  if (step == 0) return costs_.evaluation;
  return std::min(costs_.evaluation, 2.0 * 2.0 * static_cast<double>(run_.eval_iters) * step /
                                         (3.0 * static_cast<double>(run_.accumulation_steps)));
}

// Before the first checkpoint: the weights and optimizer state at 100 MB/s.
double BudgetPlanner::expected_save_seconds() const {
  return costs_.save > 0 ? costs_.save : 0.05 + run_.checkpoint_bytes / 100e6;
}

}  // namespace gpt
