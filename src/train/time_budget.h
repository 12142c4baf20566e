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

// max_time's decisions from measured times (given, never read from a clock here, so tests give
// simulated ones): when the first iterations are measured well enough to fix the run's length,
// that length, and when the time left covers only the final evaluation and checkpoint.
class BudgetPlanner {
 public:
  struct Run {
    int64_t eval_interval, eval_iters, accumulation_steps;
    double checkpoint_bytes;  // weights and optimizer state, for a save's cost before one is measured
  };
  BudgetPlanner(double budget_seconds, Run run);

  void record_iteration(double seconds);
  void record_evaluation(double seconds) { costs_.evaluation = seconds; }
  void record_save(double seconds) { costs_.save = seconds; }

  // After at least 10 iterations and 3% of the budget in training: a steady step time.
  bool measured() const;
  // The most iterations whose training, evaluations and checkpoints fit what is left of the
  // budget after `elapsed` seconds, `done` iterations in; at least done + 1.
  int64_t plan(double elapsed, int64_t done);
  // Whether only the final evaluation and checkpoint fit in what is left after `elapsed`.
  bool out_of_time(double elapsed) const;

  double budget_seconds() const { return budget_; }
  const RunCosts& costs() const { return costs_; }
  static constexpr int64_t kUnplanned = int64_t{1} << 40;  // the run's length until planned

 private:
  double mean_iteration_seconds() const;
  double expected_evaluation_seconds() const;
  double expected_save_seconds() const;

  double budget_;
  Run run_;
  RunCosts costs_{0, 0, 0};
  int64_t iterations_ = 0;
  double first_iteration_seconds_ = 0;
  double later_iterations_seconds_ = 0;  // the sum after the first, added in order as it comes
  double train_seconds_ = 0;
};

}  // namespace gpt
