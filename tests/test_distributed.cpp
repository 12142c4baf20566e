// Data-parallel training under mpirun: the same losses and weights on 1, 2 and 4 processes (with
// dropout, with and without sharded optimizer state, on shared memory and on TCP over loopback),
// resume with another process count, what happens when a process fails, and what a failed MPI
// call says. Each run is a tiny
// model for a second or two.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "process_runner.h"
#include "train/train_config.h"
#include "training_fixtures.h"

namespace gpt {
namespace {

using namespace gpt::testing;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class Distributed : public CorpusTest {
 protected:
  void SetUp() override {
    CorpusTest::SetUp();
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    TrainConfig c = tiny_config(dir, corpus);  // dropout 0.1, biases, 20 iterations, evals every 5
    c.batch_size = 4;
    c.gradient_accumulation_steps = 4;
    c.threads = 1;
    std::ofstream(config) << to_json(c).dump(2);
  }

  // gpt train in one process, without a launcher.
  int train_alone(const std::string& out, std::vector<std::string> flags = {}) {
    std::vector<std::string> args = {"train", "--config", config, "--out_dir", dir.file(out)};
    args.insert(args.end(), flags.begin(), flags.end());
    return ChildProcess(args, dir.file(out + ".log")).wait();
  }

  std::vector<std::string> mpirun_args(int processes, const std::string& out, const std::vector<std::string>& flags,
                                       bool tcp = false) {
    std::vector<std::string> args = {"--oversubscribe", "-np", std::to_string(processes)};
    if (tcp) args.insert(args.end(), {"--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"});
    args.insert(args.end(), {GPT_BINARY, "train", "--config", config, "--out_dir", dir.file(out)});
    args.insert(args.end(), flags.begin(), flags.end());
    return args;
  }

  int train_on(int processes, const std::string& out, std::vector<std::string> flags = {}, bool tcp = false) {
    flags.insert(flags.end(), {"--check_replicas", "true"});
    return ChildProcess(GPT_MPIEXEC, mpirun_args(processes, out, flags, tcp), dir.file(out + ".log")).wait();
  }

  std::string log(const std::string& out) { return read_file(dir.file(out + ".log")); }

  // mpirun A : B, one process each, both training into `out`, each with its own extra flags.
  std::vector<std::string> two_contexts(const std::string& out, const std::vector<std::string>& first_flags,
                                        const std::vector<std::string>& second_flags) {
    std::vector<std::string> args = {"--oversubscribe"};
    for (const auto* flags : {&first_flags, &second_flags}) {
      if (flags == &second_flags) args.push_back(":");
      args.insert(args.end(), {"-np", "1", GPT_BINARY, "train", "--config", config, "--out_dir", dir.file(out)});
      args.insert(args.end(), flags->begin(), flags->end());
    }
    return args;
  }

  // Whether `text` appears in the run's log within 5 minutes (a loaded machine is slow, not
  // wrong), looking every 2 ms so that the test acts right after the event.
  bool wait_for_log(const std::string& out, const std::string& text) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
    while (count_of(log(out), text) == 0) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
  }

  // The run's logged losses and its final weights must be the reference's.
  void expect_same_run(const std::string& out, const std::string& reference, std::size_t iterations = 20) {
    const LoggedRun a = read_metrics(dir.file(out)), b = read_metrics(dir.file(reference));
    ASSERT_EQ(a.train.size(), iterations) << log(out);
    EXPECT_EQ(a.train, b.train);
    EXPECT_EQ(a.val, b.val);
    EXPECT_TRUE(same_weights(load_model(dir.file(out)), load_model(dir.file(reference)))) << "model of " << out;
    EXPECT_TRUE(same_weights(load_model(resume_path(dir.file(out))), load_model(resume_path(dir.file(reference)))))
        << "resume point of " << out;
  }

  std::string config = dir.file("tiny.json");
};

TEST_F(Distributed, SameBitsOnOneTwoAndFourProcesses) {
  ASSERT_EQ(train_alone("alone"), 0) << log("alone");
  ASSERT_EQ(train_on(1, "one"), 0) << log("one");
  ASSERT_EQ(train_on(2, "two"), 0) << log("two");
  ASSERT_EQ(train_on(4, "four"), 0) << log("four");
  ASSERT_EQ(train_on(4, "four_zero1", {"--zero_stage", "1"}), 0) << log("four_zero1");
  for (const char* run : {"one", "two", "four", "four_zero1"}) {
    SCOPED_TRACE(run);
    expect_same_run(run, "alone");
  }
  EXPECT_NE(log("four").find("world: 4 processes"), std::string::npos) << log("four");
}

TEST_F(Distributed, SameBitsOverTcpOnLoopback) {
  ASSERT_EQ(train_alone("alone"), 0) << log("alone");
  ASSERT_EQ(train_on(2, "tcp", {}, true), 0) << log("tcp");
  ASSERT_EQ(train_on(2, "tcp_zero1", {"--zero_stage", "1"}, true), 0) << log("tcp_zero1");
  expect_same_run("tcp", "alone");
  expect_same_run("tcp_zero1", "alone");
}

// Muon steps every whole matrix in every process, from the same gathered gradient.
TEST_F(Distributed, MuonSameBitsOnOneAndTwoProcesses) {
  ASSERT_EQ(train_alone("alone", {"--optimizer", "muon"}), 0) << log("alone");
  ASSERT_EQ(train_on(2, "two", {"--optimizer", "muon"}), 0) << log("two");
  expect_same_run("two", "alone");
}

// The embedding tables' gradients are scatter-adds, summed across processes like any other; Muon
// leaves the tables to AdamW on every process alike.
TEST_F(Distributed, EmbeddingKeysSameBitsOnOneAndTwoProcesses) {
  const std::vector<std::string> keys = {"--optimizer",        "muon", "--bigram_embedding", "true",
                                         "--value_embeddings", "true"};
  ASSERT_EQ(train_alone("alone", keys), 0) << log("alone");
  ASSERT_EQ(train_on(2, "two", keys), 0) << log("two");
  expect_same_run("two", "alone");
}

// ema_decay's average is one more state buffer: sharded under ZeRO-1, gathered for each evaluation.
TEST_F(Distributed, WeightAverageSameBitsOnOneAndTwoProcessesShardedOrNot) {
  const std::vector<std::string> ema = {"--ema_decay", "0.8", "--always_save_checkpoint", "true"};
  ASSERT_EQ(train_alone("alone", ema), 0) << log("alone");
  ASSERT_EQ(train_on(2, "two", ema), 0) << log("two");
  std::vector<std::string> sharded = ema;
  sharded.insert(sharded.end(), {"--zero_stage", "1"});
  ASSERT_EQ(train_on(2, "two_zero1", sharded), 0) << log("two_zero1");
  expect_same_run("two", "alone");
  expect_same_run("two_zero1", "alone");
  EXPECT_FALSE(same_weights(load_model(dir.file("alone")), load_model(resume_path(dir.file("alone")))));
}

// data_order "epochs" finds each micro-batch's rows from its index alone, on any process.
TEST_F(Distributed, EpochOrderSameBitsOnOneAndTwoProcesses) {
  ASSERT_EQ(train_alone("alone", {"--data_order", "epochs"}), 0) << log("alone");
  ASSERT_EQ(train_on(2, "two", {"--data_order", "epochs"}), 0) << log("two");
  expect_same_run("two", "alone");
}

TEST_F(Distributed, ResumedWithAnotherProcessCountContinuesExactly) {
  ASSERT_EQ(train_alone("alone"), 0) << log("alone");
  ASSERT_EQ(train_on(2, "split", {"--max_iters", "10"}), 0) << log("split");
  ASSERT_EQ(train_on(4, "split", {"--init_from", "resume", "--zero_stage", "1"}), 0) << log("split");
  expect_same_run("split", "alone");
  // Replicated (ZeRO-0) state, resumed on as many processes: each receives the whole state.
  ASSERT_EQ(train_on(2, "replicated", {"--max_iters", "10"}), 0) << log("replicated");
  ASSERT_EQ(train_on(2, "replicated", {"--init_from", "resume"}), 0) << log("replicated");
  expect_same_run("replicated", "alone");
  // And a sharded checkpoint goes on in one process.
  ASSERT_EQ(train_on(2, "sharded", {"--max_iters", "10", "--zero_stage", "1"}), 0) << log("sharded");
  ASSERT_EQ(train_alone("sharded", {"--init_from", "resume"}), 0) << log("sharded");
  expect_same_run("sharded", "alone");
}

// A stop signal reaching any one process (here the newest rank, whichever it is) stops them all
// after the same iteration, and rank 0 saves there.
TEST_F(Distributed, StopSignalStopsEveryProcessAfterTheSameIterationAndRankZeroSaves) {
  const std::vector<std::string> long_run = {"--max_iters", "600", "--eval_interval", "100", "--log_interval", "1"};
  ASSERT_EQ(train_alone("alone", long_run), 0) << log("alone");
  ChildProcess run(GPT_MPIEXEC, mpirun_args(2, "stopped", long_run), dir.file("stopped.log"));
  ASSERT_TRUE(wait_for_log("stopped", "iter 3:")) << log("stopped");
  ASSERT_EQ(std::system(("pkill -TERM -n -f '[-]-out_dir " + dir.file("stopped") + " '").c_str()), 0);
  EXPECT_EQ(run.wait(), 143);
  const std::string text = log("stopped");
  ASSERT_EQ(count_of(text, "interrupted after iteration"), 1) << "the run ended before the signal reached it:\n"
                                                              << text;
  std::vector<std::string> resume = long_run;
  resume.insert(resume.end(), {"--init_from", "resume"});
  ASSERT_EQ(train_alone("stopped", resume), 0) << log("stopped");
  expect_same_run("stopped", "alone", 600);
}

// Ctrl-C on mpirun: Open MPI 4.1 sends the processes SIGCONT, then SIGTERM and SIGKILL a second
// apart. Iterations here take longer than that, so the processes never reach the agreed stop;
// rank 0 saves the last completed iteration the moment SIGTERM arrives, and that checkpoint
// continues exactly as an uninterrupted run. The test plays Open MPI's part: SIGTERM to every
// rank mid-iteration, then SIGKILL as soon as the save is logged, so no machine is too slow or
// too busy for it (racing Open MPI's own second was). Should the iteration under way finish
// first and the agreed stop save again, the checkpoint is that one: the test resumes from the
// iteration the checkpoint records, whichever save wrote it.
TEST_F(Distributed, StopSignalMidIterationSavesTheLastCompletedIterationBeforeTheKill) {
  // About 1.2 s per iteration on each process here (one micro-batch of 8 x 256 tokens, 3.6M
  // parameters). Under AddressSanitizer, which makes everything slower, a model a tenth the size
  // already takes longer than Open MPI's second.
#if defined(__SANITIZE_ADDRESS__)
  const std::vector<std::string> size = {"--n_embd", "128", "--n_head", "4", "--block_size", "128"};
#else
  const std::vector<std::string> size = {"--n_embd", "384", "--n_head", "6", "--block_size", "256"};
#endif
  std::vector<std::string> slow = {"--n_layer",
                                   "2",
                                   "--batch_size",
                                   "8",
                                   "--gradient_accumulation_steps",
                                   "2",
                                   "--dropout",
                                   "0",
                                   "--eval_interval",
                                   "1000000",
                                   "--eval_iters",
                                   "1",
                                   "--log_interval",
                                   "1"};
  slow.insert(slow.end(), size.begin(), size.end());
  slow.insert(slow.end(), {"--max_iters", "1000"});
  ChildProcess run(GPT_MPIEXEC, mpirun_args(2, "interrupted", slow), dir.file("interrupted.log"));
  ASSERT_TRUE(wait_for_log("interrupted", "iter 1:")) << log("interrupted");
  // Every rank, as Open MPI signals them; "[-]" keeps the pattern from matching pkill's own shell.
  ASSERT_EQ(std::system(("pkill -TERM -f '[-]-out_dir " + dir.file("interrupted") + " '").c_str()), 0);
  ASSERT_TRUE(wait_for_log("interrupted", "stop requested: saved the state after iteration ")) << log("interrupted");
  run.signal_all(SIGKILL);  // where Open MPI's would come, however long the save took
  EXPECT_NE(run.wait(), 0);
  const std::string saved = resume_path(dir.file("interrupted"));
  const int64_t next = std::stoll(SafetensorsReader::open(saved).metadata("iter_num"));  // the iteration to resume at

  slow.back() = std::to_string(next + 1);  // one more iteration, resumed and uninterrupted
  std::vector<std::string> resume = slow;
  resume.insert(resume.end(), {"--init_from", "resume"});
  ASSERT_EQ(train_alone("interrupted", resume), 0) << log("interrupted");
  ASSERT_EQ(train_alone("reference", slow), 0) << log("reference");
  const LoggedRun resumed = read_metrics(dir.file("interrupted")), reference = read_metrics(dir.file("reference"));
  ASSERT_FALSE(resumed.train.empty());
  EXPECT_EQ(resumed.train.back(), reference.train.back());
  EXPECT_EQ(resumed.train.back().first, next);
  EXPECT_TRUE(
      same_weights(load_model(resume_path(dir.file("interrupted"))), load_model(resume_path(dir.file("reference")))));
}

TEST_F(Distributed, ErrorsBeforeTrainingAreReportedOnceWithExitCodeTwo) {
  EXPECT_EQ(train_on(2, "indivisible", {"--gradient_accumulation_steps", "3"}), 2);
  EXPECT_EQ(count_of(log("indivisible"), "gpt: error"), 1) << log("indivisible");
  EXPECT_NE(log("indivisible").find("divisible by the number of processes (2)"), std::string::npos);
  EXPECT_EQ(train_on(2, "bad_key", {"--n_head", "3"}), 2);
  EXPECT_EQ(count_of(log("bad_key"), "gpt: error"), 1) << log("bad_key");
  // A data file only one process cannot read: that process is named.
  // Two app contexts of one process each (mpirun A : B); the second gets a missing data file.
  const std::vector<std::string> args = two_contexts("one_bad", {}, {"--data_path", dir.file("missing.txt")});
  EXPECT_EQ(ChildProcess(GPT_MPIEXEC, args, dir.file("one_bad.log")).wait(), 2);
  const std::string text = log("one_bad");
  EXPECT_EQ(count_of(text, "gpt: error"), 1) << text;
  EXPECT_NE(text.find("rank 1 of 2"), std::string::npos) << text;
  EXPECT_NE(text.find("missing.txt"), std::string::npos) << text;
}

// check_replicas: processes whose weights part (here each applies its own weight_decay, which the
// optimizer does locally) stop after the first iteration, which the error names; unchecked, the
// run goes on to its end.
TEST_F(Distributed, CheckReplicasStopsProcessesWhoseWeightsDiffer) {
  auto run = [&](const std::string& out, const char* check) {
    const std::vector<std::string> common = {"--max_iters", "3", "--check_replicas", check};
    std::vector<std::string> first = common, second = common;
    first.insert(first.end(), {"--weight_decay", "0.1"});
    second.insert(second.end(), {"--weight_decay", "0.5"});
    return ChildProcess(GPT_MPIEXEC, two_contexts(out, first, second), dir.file(out + ".log")).wait();
  };
  EXPECT_EQ(run("checked", "true"), 1) << log("checked");
  EXPECT_NE(log("checked").find("the processes' weights differ after iteration 0"), std::string::npos)
      << log("checked");
  EXPECT_EQ(run("unchecked", "false"), 0) << log("unchecked");
}

// zero_stage 1 shards the optimizer state over the processes (the bits stay those of stage 0:
// SameBits tests above).
TEST_F(Distributed, ZeroStageOneShardsTheOptimizerState) {
  for (const char* stage : {"0", "1"}) {
    const std::string out = std::string("stage") + stage;
    ASSERT_EQ(train_on(2, out, {"--max_iters", "2", "--zero_stage", stage}), 0) << log(out);
    const bool sharded = log(out).find("optimizer state sharded (ZeRO-1)") != std::string::npos;
    EXPECT_EQ(sharded, stage == std::string("1")) << log(out);
    EXPECT_EQ(log(out).find("optimizer state replicated") != std::string::npos, !sharded) << log(out);
  }
}

// Each process's peak resident memory over a 10.7M-parameter run that saves a resume point (AdamW's
// state: 86 MB): sharding the state over 2 processes must take about half of it off each, rank 0
// included, which writes the checkpoint (gathered a tensor at a time, written as a stream). The
// batches are small, so weights, gradients and optimizer state dominate.
TEST_F(Distributed, ZeroStageOneDividesTheOptimizerMemoryOfEveryProcessAlsoWhenSaving) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the sanitizer's allocator keeps freed memory: peaks are not the program's";
#endif
  const auto peaks = [&](const std::string& stage) {
    const std::string out = "memory" + stage;
    std::vector<std::string> args = {"--oversubscribe",
                                     "-np",
                                     "2",
                                     GPT_PEAK_MEMORY_PROBE,
                                     GPT_BINARY,
                                     "train",
                                     "--config",
                                     config,
                                     "--out_dir",
                                     dir.file(out),
                                     "--zero_stage",
                                     stage,
                                     "--n_layer",
                                     "6",
                                     "--n_head",
                                     "6",
                                     "--n_embd",
                                     "384",
                                     "--block_size",
                                     "64",
                                     "--batch_size",
                                     "2",
                                     "--gradient_accumulation_steps",
                                     "2",
                                     "--dropout",
                                     "0",
                                     "--max_iters",
                                     "2",
                                     "--eval_interval",
                                     "2",
                                     "--eval_iters",
                                     "1"};
    EXPECT_EQ(ChildProcess(GPT_MPIEXEC, args, dir.file(out + ".log")).wait(), 0) << log(out);
    std::map<int, double> mib;
    std::istringstream lines(log(out));
    for (std::string line; std::getline(lines, line);) {
      int rank = 0;
      long kib = 0;
      if (std::sscanf(line.c_str(), "rank %d peak_kib %ld", &rank, &kib) == 2) mib[rank] = kib / 1024.0;
    }
    EXPECT_EQ(mib.size(), 2u) << log(out);
    EXPECT_TRUE(std::filesystem::exists(resume_path(dir.file(out)))) << log(out);
    return mib;
  };
  const std::map<int, double> replicated = peaks("0"), sharded = peaks("1");
  const double half_state_mib = 10.7e6 * 2 * sizeof(float) / 2 / (1 << 20);
  for (int rank : {0, 1})
    EXPECT_LT(sharded.at(rank), replicated.at(rank) - 0.6 * half_state_mib)
        << "rank " << rank << ": " << sharded.at(rank) << " MiB sharded, " << replicated.at(rank) << " MiB replicated";
}

TEST_F(Distributed, AKilledProcessEndsTheRunWithinSecondsAndTheCheckpointStaysLoadable) {
  ChildProcess run(GPT_MPIEXEC,
                   mpirun_args(2, "killed", {"--max_iters", "1000000", "--always_save_checkpoint", "true"}),
                   dir.file("killed.log"));
  ASSERT_TRUE(wait_for_log("killed", "saved checkpoint")) << log("killed");
  // The newest process with this out_dir is one of the ranks (they start after mpirun); whichever
  // it is, the run must end. "[-]" keeps the pattern from matching pkill's own shell.
  ASSERT_EQ(std::system(("pkill -KILL -n -f '[-]-out_dir " + dir.file("killed") + "'").c_str()), 0);
  const auto killed_at = std::chrono::steady_clock::now();
  EXPECT_NE(run.wait(), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - killed_at, std::chrono::seconds(20));
  EXPECT_NE(log("killed").find("exited on signal 9"), std::string::npos) << log("killed");
  EXPECT_NO_THROW(load_model(dir.file("killed")));
}

// Only rank 0 writes checkpoints, so only it fails when out_dir stops being a folder: it names
// itself and ends the run (MPI_Abort) instead of leaving the others waiting.
TEST_F(Distributed, AnErrorOnOneProcessOnlyEndsTheRunAndNamesIt) {
  const std::string out = dir.file("vanishing");
  ChildProcess run(GPT_MPIEXEC,
                   mpirun_args(2, "vanishing", {"--max_iters", "1000000", "--always_save_checkpoint", "true"}),
                   dir.file("vanishing.log"));
  ASSERT_TRUE(wait_for_log("vanishing", "saved checkpoint")) << log("vanishing");
  // The run keeps writing into out (checkpoints, the report): move it away at once and put a file
  // in its place, again if the run recreated the folder in between.
  for (int attempt = 0; attempt < 100 && !std::filesystem::is_regular_file(out); ++attempt) {
    std::error_code ec;
    std::filesystem::rename(out, out + ".moved" + std::to_string(attempt), ec);
    std::ofstream(out) << "not a folder";
  }
  ASSERT_TRUE(std::filesystem::is_regular_file(out));
  const auto failed_at = std::chrono::steady_clock::now();
  EXPECT_EQ(run.wait(), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - failed_at, std::chrono::seconds(20));
  EXPECT_NE(log("vanishing").find("gpt: error (rank 0 of 2"), std::string::npos) << log("vanishing");
}

// A failed MPI call is a runtime error (exit code 1) naming the call, MPI's own error and the rank.
TEST_F(Distributed, AFailedMpiCallNamesTheCallTheErrorAndTheRank) {
  ASSERT_EQ(
      ChildProcess(GPT_MPIEXEC, {"--oversubscribe", "-np", "2", GPT_MPI_FAILURE_PROBE}, dir.file("probe.log")).wait(),
      1)
      << log("probe");
  const std::string text = log("probe");
  for (const char* rank : {"MPI_Allgather failed on rank 0 of 2", "MPI_Allgather failed on rank 1 of 2"})
    EXPECT_NE(text.find(rank), std::string::npos) << text;
  EXPECT_NE(text.find("MPI_ERR_COUNT"), std::string::npos) << text;
  EXPECT_EQ(text.find("internal error"), std::string::npos) << text;
}

}  // namespace
}  // namespace gpt
