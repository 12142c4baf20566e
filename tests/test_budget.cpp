// Training to a budget: durations, the plan that fixes a run's length from its measured costs, a
// max_time run that ends within its budget evaluated and saved (and keeps its length when
// resumed), and early stopping by patience.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>

#include "io/checkpoint.h"
#include "simulated_clock.h"
#include "train/time_budget.h"
#include "train/trainer.h"
#include "training_fixtures.h"

namespace gpt {
namespace {

using namespace gpt::testing;

TEST(Duration, ParsesSecondsAndUnits) {
  EXPECT_EQ(parse_duration(""), 0.0);
  EXPECT_EQ(parse_duration("600"), 600.0);
  EXPECT_EQ(parse_duration("90s"), 90.0);
  EXPECT_EQ(parse_duration("10m"), 600.0);
  EXPECT_EQ(parse_duration("1h30m"), 5400.0);
  EXPECT_EQ(parse_duration("1.5h"), 5400.0);
  EXPECT_EQ(parse_duration("2m30s"), 150.0);
  for (const char* bad : {"ten", "10x", "-5", "1h30", "inf", "m", "5 m"}) EXPECT_FALSE(parse_duration(bad)) << bad;
}

// Each number is finite but their product is not: the text still reads (max_time's range then
// refuses it), and a duration's text never converts a value beyond int64 to hours.
TEST(Duration, AnOverflowingProductIsOutOfRangeNotUndefined) {
  EXPECT_EQ(parse_duration("1e308h"), HUGE_VAL);
  EXPECT_EQ(Setting<Duration>::text({HUGE_VAL}), "infs");
  EXPECT_EQ(Setting<Duration>::text({1e300}), "1e+300s");
  EXPECT_EQ(Setting<Duration>::text({5400.5}), "1h30m0.5s");
}

TEST(TimeBudget, PlansTheMostIterationsWhoseIterationsEvaluationsAndCheckpointsFit) {
  const RunCosts costs{0.1, 1.0, 0.5};  // 0.1 s per iteration; evaluation + checkpoint 1.5 s
  // From 0 with 100 s and evaluations every 100: n iterations cost 0.1 n + 1.5 (n / 100 + 1 if n % 100).
  // n = 880: 88 + 1.5 * 9 = 101.5 > 100; n = 865: 86.5 + 1.5 * 9 = 100 fits exactly.
  EXPECT_EQ(plan_iterations(100, 0, 0, 1 << 30, 100, costs), 865);
  // With 50 s spent: 425 costs 42.5 + 1.5 * 5 = 50 exactly; 426 does not fit.
  EXPECT_EQ(plan_iterations(100, 50, 0, 1 << 30, 100, costs), 425);
  EXPECT_EQ(plan_iterations(100, 0, 0, 300, 100, costs), 300);    // capped
  EXPECT_EQ(plan_iterations(1, 0, 10, 1 << 30, 100, costs), 10);  // nothing fits: stop where it is
}

class Budget : public CorpusTest {};

// Trains `c` on simulated time: every clock reading costs `seconds_per_reading`.
TrainResult train_on_simulated_clock(const TrainConfig& c, SimulatedClock& clock,
                                     const std::atomic<int>* stop = nullptr) {
  const World one_process;
  return run_training(c, RunContext{one_process, stop, clock});
}

// The run fixes its schedule's length after measuring its first iterations, and its final
// evaluation and checkpoint are done inside the budget. On simulated time, so exactly.
TEST_F(Budget, AMaxTimeRunEndsWithinItsBudgetEvaluatedAndSaved) {
  TrainConfig c = tiny_config(dir, corpus);
  c.max_time = {4};
  c.eval_interval = 50;
  SimulatedClock clock(0.01);
  const TrainResult r = train_on_simulated_clock(c, clock);
  EXPECT_LE(r.wall_seconds, 4.0);
  EXPECT_GE(r.wall_seconds, 0.95 * 4.0) << "the budget was not used";
  ASSERT_GT(r.planned_iters, 0) << "the schedule's length was never fixed";
  EXPECT_GE(r.final_iter, r.planned_iters - 1);
  const LoggedRun run = read_metrics(c.out_dir);
  ASSERT_FALSE(run.val.empty());
  EXPECT_EQ(run.val.back().first, r.final_iter);  // the final evaluation
  EXPECT_EQ(load_model(c.out_dir).model->config().n_layer, c.model.n_layer);
  // The decay ends at min_lr on the planned run's last iteration; later iterations (the run was
  // faster than planned) stay there.
  std::ifstream metrics(c.out_dir + "/metrics.jsonl");
  int64_t at_min_lr = 0;
  for (std::string line; std::getline(metrics, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j["type"] != "train" || j["iter"].get<int64_t>() < r.planned_iters - 1) continue;
    EXPECT_NEAR(j["lr"].get<double>(), c.min_lr, 1e-12) << "iteration " << j["iter"];
    ++at_min_lr;
  }
  EXPECT_EQ(at_min_lr, r.final_iter - r.planned_iters + 1);
}

// Stopped once the length is fixed (at 2 of its 6 simulated seconds), the run resumes with the
// length it fixed, on a clock of another speed.
TEST_F(Budget, AResumedMaxTimeRunKeepsTheLengthItFixed) {
  TrainConfig c = tiny_config(dir, corpus);
  c.max_time = {6};
  c.eval_interval = 100;
  std::atomic<int> stop{0};
  SimulatedClock clock(0.01);
  clock.on_reading = [&](double now) {
    if (now >= 2.0) stop.store(15);
  };
  const TrainResult first = train_on_simulated_clock(c, clock, &stop);
  ASSERT_EQ(first.stop_signal, 15);
  ASSERT_GT(first.planned_iters, 0);
  ASSERT_GT(first.planned_iters, first.final_iter);
  c.init_from = {InitKind::resume, ""};
  SimulatedClock slower(0.03);
  const TrainResult resumed = train_on_simulated_clock(c, slower);
  EXPECT_EQ(resumed.planned_iters, first.planned_iters);
  EXPECT_GT(resumed.final_iter, first.final_iter);
}

TEST(BudgetPlanner, PlansOnceMeasuredAndEndsWhenOnlyTheFinalEvaluationAndCheckpointFit) {
  BudgetPlanner planner(100, {10, 5, 1, 0});
  for (int i = 0; i < 9; ++i) planner.record_iteration(1.0);
  EXPECT_FALSE(planner.measured()) << "9 iterations";
  planner.record_iteration(1.0);
  EXPECT_TRUE(planner.measured());
  planner.record_evaluation(2.0);
  planner.record_save(0.5);
  // The plan is plan_iterations' (tested above) over 99% of the budget with the measured costs.
  const int64_t planned = planner.plan(12, 10);
  EXPECT_EQ(planned, plan_iterations(99, 12, 10, BudgetPlanner::kUnplanned, 10, planner.costs()));
  EXPECT_GT(planned, 10);
  EXPECT_FALSE(planner.out_of_time(90));
  EXPECT_TRUE(planner.out_of_time(97));  // 97 + 2 + 0.5 >= 99
}

// A shared machine's step times are skewed by occasional slow steps: the plan uses their mean
// (what the run's length adds up), after the first, warm-up iteration.
TEST(BudgetPlanner, PlansWithTheMeanStepTimeAfterTheWarmUpIteration) {
  BudgetPlanner planner(100, {10, 5, 1, 0});
  planner.record_iteration(10.0);
  for (int i = 0; i < 8; ++i) planner.record_iteration(1.0);
  planner.record_iteration(2.0);
  planner.record_iteration(2.0);
  ASSERT_TRUE(planner.measured());
  planner.plan(20, 11);
  EXPECT_DOUBLE_EQ(planner.costs().iteration, 1.2);  // the median would be 1.0
}

// The planner is asked every iteration (out_of_time reads the mean step time): that costs the
// same at the millionth iteration as at the tenth. It re-added every step time on each call, 10^12
// additions here. The 60 s bound is thousands of times what a constant cost needs on any machine.
TEST(BudgetPlanner, AskingEveryIterationCostsNoMoreAsTheRunGrows) {
  BudgetPlanner planner(1e7, {10, 5, 1, 0});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int64_t asked = 0;
  for (int64_t i = 0; i < 1'500'000; ++i) {
    planner.record_iteration(i == 0 ? 1.0 : 0.5);
    asked += planner.out_of_time(1.0) ? 0 : 1;
    if (i % 4096 == 0) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "after " << i << " iterations";
    }
  }
  EXPECT_EQ(asked, 1'500'000);
  planner.plan(1e6, 1'500'000);
  EXPECT_EQ(planner.costs().iteration, 0.5);
}

// No learning (a negligible learning rate): the evaluations only vary with their batches, so a
// new best soon fails to come; the run stops there and keeps the best checkpoint.
TEST_F(Budget, PatienceStopsEarlyAndKeepsTheBestCheckpoint) {
  TrainConfig c = tiny_config(dir, corpus);
  c.learning_rate = 1e-9;
  c.min_lr = 1e-10;
  c.max_iters = 200;
  c.lr_decay_iters = 200;
  c.eval_interval = 5;
  c.patience = 2;
  const TrainResult r = run_training(c, nullptr);
  EXPECT_TRUE(r.stopped_early);
  EXPECT_LT(r.final_iter, 200);
  const LoggedRun run = read_metrics(c.out_dir);
  ASSERT_GE(run.val.size(), 3u);
  // The last two evaluations are no better than the best before them.
  const std::size_t n = run.val.size();
  double best_before = run.val[0].second;
  for (std::size_t i = 1; i + 2 < n; ++i) best_before = std::min(best_before, run.val[i].second);
  EXPECT_GE(run.val[n - 1].second, best_before);
  EXPECT_GE(run.val[n - 2].second, best_before);
  EXPECT_EQ(r.best_val_loss, best_before);

  TrainConfig patient = c;
  patient.out_dir = dir.file("patient");
  patient.patience = 0;
  EXPECT_EQ(run_training(patient, nullptr).final_iter, 200);
}

}  // namespace
}  // namespace gpt

namespace gpt {
namespace {

using namespace gpt::testing;

class FineTune : public CorpusTest {};

// A model trained on one text, fine-tuned on another written with some of its characters: it
// starts from the checkpoint (far below a new model's loss) and the loss on the new text falls;
// the fine-tuned run resumes; a character the model lacks is named.
TEST_F(FineTune, StartsFromTheCheckpointAndLowersTheLossOnTheNewText) {
  TrainConfig base = tiny_config(dir, corpus);
  base.model.dropout = 0;
  base.max_iters = 150;
  base.lr_decay_iters = 150;
  base.eval_interval = 50;
  run_training(base, nullptr);

  std::string text;
  for (int i = 0; i < 600; ++i) text += i % 3 == 0 ? "the queen and the king\n" : "my lord the king\n";
  TrainConfig tune = base;
  tune.data_path = dir.write("new.txt", text);
  tune.init_from = {InitKind::checkpoint, base.out_dir};
  tune.out_dir = dir.file("tuned");
  tune.max_iters = 40;
  tune.lr_decay_iters = 40;
  tune.model.n_layer = 3;  // the checkpoint's architecture wins
  run_training(tune, nullptr);
  const LoggedRun tuned = read_metrics(tune.out_dir);

  // A new model starts near ln(V); the checkpoint already knows these words.
  const double uniform = std::log(static_cast<double>(load_model(base.out_dir).vocab.size()));
  ASSERT_GE(tuned.val.size(), 2u);
  EXPECT_LT(tuned.val.front().second, 0.7 * uniform) << "did not start from the checkpoint";
  EXPECT_LT(tuned.val.back().second, tuned.val.front().second - 0.1);
  LoadedModel model = load_model(tune.out_dir);
  EXPECT_EQ(model.model->config().n_layer, base.model.n_layer);
  EXPECT_EQ(model.vocab, load_model(base.out_dir).vocab);

  tune.init_from = {InitKind::resume, ""};
  tune.max_iters = 45;
  tune.lr_decay_iters = 45;
  tune.model.n_layer = base.model.n_layer;
  EXPECT_EQ(run_training(tune, nullptr).final_iter, 45);

  TrainConfig outside = base;
  outside.data_path = dir.write("outside.txt", text + "Zebra\n" + text);
  outside.init_from = {InitKind::checkpoint, base.out_dir};
  outside.out_dir = dir.file("outside");
  try {
    run_training(outside, nullptr);
    FAIL() << "trained on a character the model lacks";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("'Z' at position " + std::to_string(text.size())), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace gpt
