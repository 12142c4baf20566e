// Nothing lost, nothing crashes: a run killed at random moments always leaves a loadable,
// consistent checkpoint; SIGINT saves and resumes exactly; a failed write or a diverging run
// keeps the previous checkpoint; malformed checkpoints give one clear error.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cli/stop_signal.h"
#include "cli_runner.h"
#include "core/atomic_file.h"
#include "core/check.h"
#include "io/checkpoint.h"
#include "io/run_folder.h"
#include "io/safetensors.h"
#include "process_runner.h"
#include "training_fixtures.h"

namespace gpt {
namespace {

using namespace gpt::testing;

class Robustness : public ::testing::Test {
 protected:
  ScratchDir dir;
  std::string corpus = dir.write("corpus.txt", generated_corpus(20000));
  std::vector<std::string> train_args(const std::string& out, int max_iters, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"train",
                                     "--data_path",
                                     corpus,
                                     "--out_dir",
                                     out,
                                     "--n_layer",
                                     "2",
                                     "--n_head",
                                     "2",
                                     "--n_embd",
                                     "32",
                                     "--block_size",
                                     "16",
                                     "--batch_size",
                                     "8",
                                     "--dropout",
                                     "0.1",
                                     "--max_iters",
                                     std::to_string(max_iters),
                                     "--eval_interval",
                                     "5",
                                     "--eval_iters",
                                     "2",
                                     "--log_interval",
                                     "1",
                                     "--warmup_iters",
                                     "5",
                                     "--lr_decay_iters",
                                     "40"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  static bool log_contains(const std::string& path, const std::string& text) {
    std::ifstream in(path);
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return all.find(text) != std::string::npos;
  }
  // Waits up to 120 s (sanitizer builds on a busy machine start slowly); a log that never says
  // `text` fails the test there, with the log.
  static void wait_for_log(const std::string& path, const std::string& text) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!log_contains(path, text)) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "\"" << text << "\" not in " << path << " after 120 s:\n"
                                                            << read_whole_file(path);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
};

TEST_F(Robustness, KilledAtRandomMomentsTheCheckpointAlwaysLoadsWhole) {
  const std::string out = dir.file("killed");
  Rng rng(2024);
  int checked = 0;
  for (int attempt = 0; attempt < 25; ++attempt) {
    // Saving after every evaluation, every iteration: most of the run is checkpoint writing.
    ChildProcess child(train_args(out, 100000,
                                  {"--eval_interval", "1", "--always_save_checkpoint", "true", "--init_from",
                                   std::filesystem::exists(run_file(out, kResumeFile)) ? "resume" : "scratch"}),
                       dir.file("killed.log"));
    // Once it has written its first resume point (so it is in the save-every-iteration loop; the
    // model alone at iteration 0 is not one), kill it at a random moment.
    ASSERT_NO_FATAL_FAILURE(wait_for_log(dir.file("killed.log"), "model.safetensors and "));
    std::this_thread::sleep_for(std::chrono::microseconds(rng.below(80000)));
    child.signal(SIGKILL);
    EXPECT_EQ(child.wait(), 128 + SIGKILL) << read_whole_file(dir.file("killed.log"));
    if (!std::filesystem::exists(run_file(out, kResumeFile))) continue;  // killed before the first save
    LoadedModel loaded = load_model(out);                                // throws on a torn file
    std::vector<float> m(loaded.model->params().padded_floats()), v(m.size());
    OptimizerState adamw{"adamw", 0, {{"exp_avg", m.data()}, {"exp_avg_sq", v.data()}}};
    const TrainingState state = load_training_state(out, *loaded.model, adamw);
    EXPECT_EQ(SafetensorsReader::open(resume_path(out)).metadata("iter_num"), std::to_string(state.iter_num));
    ++checked;
  }
  EXPECT_GT(checked, 15);
}

TEST_F(Robustness, SigintSavesAndResumeEqualsTheUninterruptedRun) {
  const std::string full = dir.file("full"), split = dir.file("split");
  ChildProcess uninterrupted(train_args(full, 30), dir.file("full.log"));
  ASSERT_EQ(uninterrupted.wait(), 0);

  ChildProcess interrupted(train_args(split, 30), dir.file("split.log"));
  ASSERT_NO_FATAL_FAILURE(wait_for_log(dir.file("split.log"), "iter 12:"));
  interrupted.signal(SIGINT);
  ASSERT_EQ(interrupted.wait(), 130);
  EXPECT_TRUE(log_contains(dir.file("split.log"), "interrupted after iteration"));
  ChildProcess resumed(train_args(split, 30, {"--init_from", "resume"}), dir.file("resume.log"));
  ASSERT_EQ(resumed.wait(), 0);
  EXPECT_EQ(read_metrics(split).train, read_metrics(full).train);
  EXPECT_EQ(read_metrics(split).val, read_metrics(full).val);
}

TEST_F(Robustness, SigtermExits143WithACheckpoint) {
  const std::string out = dir.file("term");
  ChildProcess child(train_args(out, 100000), dir.file("term.log"));
  ASSERT_NO_FATAL_FAILURE(wait_for_log(dir.file("term.log"), "iter 3:"));
  child.signal(SIGTERM);
  EXPECT_EQ(child.wait(), 143);
  EXPECT_NO_THROW(load_model(out));
}

// An absurd budget (each number finite, the product not) is refused before anything starts,
// naming the key: it used to start a run on an endless budget (setting int64s from +inf).
TEST_F(Robustness, AnAbsurdDurationIsAnInputErrorAtOnce) {
  ChildProcess child(train_args(dir.file("absurd"), 1, {"--max_time", "1e308h", "--threads", "1"}),
                     dir.file("absurd.log"));
  const std::optional<int> code = child.wait_for(std::chrono::seconds(60));
  ASSERT_TRUE(code.has_value()) << "still running after 60 s:\n" << read_whole_file(dir.file("absurd.log"));
  EXPECT_EQ(*code, 2);
  const std::string log = read_whole_file(dir.file("absurd.log"));
  EXPECT_NE(log.find("key \"max_time\": expected a duration in [0, 8760h], got \"1e308h\""), std::string::npos) << log;
}

// SIGTERM before the first iteration, here in an evaluation of a million batches (hours long),
// ends the run within a batch, with nothing saved; it used to be read only after an iteration.
// The first evaluation starts right after "threads:" is logged.
TEST_F(Robustness, SigtermBeforeTheFirstIterationExitsPromptly) {
  const std::string out = dir.file("early");
  ChildProcess child(train_args(out, 100, {"--eval_iters", "1000000", "--batch_size", "64", "--threads", "1"}),
                     dir.file("early.log"));
  ASSERT_NO_FATAL_FAILURE(wait_for_log(dir.file("early.log"), "threads:"));
  child.signal(SIGTERM);
  const std::optional<int> code = child.wait_for(std::chrono::seconds(60));
  ASSERT_TRUE(code.has_value()) << "SIGTERM unanswered after 60 s:\n" << read_whole_file(dir.file("early.log"));
  EXPECT_EQ(*code, 143);
  EXPECT_TRUE(log_contains(dir.file("early.log"), "interrupted before the first iteration"))
      << read_whole_file(dir.file("early.log"));
  EXPECT_FALSE(std::filesystem::exists(model_path(out)));
}

TEST_F(Robustness, FileSizeLimitKeepsThePreviousCheckpoint) {
  const std::string out = dir.file("limited");
  ChildProcess first(train_args(out, 10), dir.file("first.log"));
  ASSERT_EQ(first.wait(), 0);
  const std::string before = read_whole_file(model_path(out));
  const auto limit = static_cast<long>(before.size() / 2);  // too small for a new checkpoint
  ChildProcess second(train_args(out, 20, {"--init_from", "resume"}), dir.file("second.log"), limit);
  EXPECT_EQ(second.wait(), 1);
  EXPECT_TRUE(log_contains(dir.file("second.log"), "cannot write")) << read_whole_file(dir.file("second.log"));
  EXPECT_TRUE(log_contains(dir.file("second.log"), "File too large"));
  EXPECT_EQ(read_whole_file(model_path(out)), before);
  LoadedModel loaded = load_model(out);
  std::vector<float> m(loaded.model->params().padded_floats()), v(m.size());
  OptimizerState adamw{"adamw", 0, {{"exp_avg", m.data()}, {"exp_avg_sq", v.data()}}};
  EXPECT_EQ(load_training_state(out, *loaded.model, adamw).iter_num, 10);
}

TEST_F(Robustness, DivergenceStopsWithoutOverwritingTheLastGoodCheckpoint) {
  const std::string out = dir.file("diverge");
  ChildProcess first(train_args(out, 10), dir.file("first.log"));
  ASSERT_EQ(first.wait(), 0);
  const std::string before = read_whole_file(model_path(out));
  ChildProcess second(train_args(out, 30, {"--init_from", "resume", "--learning_rate", "1e30", "--grad_clip", "0"}),
                      dir.file("second.log"));
  EXPECT_EQ(second.wait(), 1);
  const std::string log = read_whole_file(dir.file("second.log"));
  EXPECT_NE(log.find("training diverged at iteration"), std::string::npos) << log;
  EXPECT_NE(log.find("learning rate"), std::string::npos);
  EXPECT_EQ(read_whole_file(model_path(out)), before);
}

TEST_F(Robustness, MalformedCheckpointsGiveOneClearError) {
  const std::string out = dir.file("good");
  ChildProcess first(train_args(out, 5), dir.file("first.log"));
  ASSERT_EQ(first.wait(), 0);
  const std::string good = read_whole_file(model_path(out));
  SafetensorsReader reader(good, "good");
  auto check = [&](const std::string& bytes, const std::string& expected) {
    const std::string path = dir.write("bad.safetensors", bytes);
    const CommandResult r = run_gpt("sample --checkpoint " + path + " --max_new_tokens 5");
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find(expected), std::string::npos) << "expected \"" << expected << "\" in: " << r.output;
    EXPECT_NE(r.output.find("bad.safetensors"), std::string::npos) << r.output;
  };
  check(good.substr(0, good.size() / 2), "runs past the data");
  check(good.substr(0, 5), "truncated");
  uint64_t header_len;
  std::memcpy(&header_len, good.data(), 8);
  std::string header = good.substr(8, header_len);
  auto with_header = [&](std::string h) {
    h.resize(header_len, ' ');
    return good.substr(0, 8) + h + good.substr(8 + header_len);
  };
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string h = header;
    const auto at = h.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return with_header(h.replace(at, from.size(), to));
  };
  check(with_header("not json at all"), "not valid JSON");
  check(replaced("\"F32\"", "\"F16\""), "expected F32");
  check(replaced("transformer.ln_f.weight", "transformer.ln_f.weigxx"), "\"transformer.ln_f.weight\" is missing");
  check(replaced("\"n_layer\\\":2", "\"n_layer\\\":3"), "missing");  // config says 3 blocks, file has 2
  check(replaced("\"n_embd\\\":32", "\"n_embd\\\":30"), "shape");
  check(replaced("\"vocab_size\\\":", "\"vocab_sizX\\\":"), "vocab_size");
  const CommandResult r = run_gpt("sample --checkpoint " + dir.file("nothing.safetensors"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

// A second Ctrl-C exits at once, mid-write: the temporary files of that process are left. The next
// run in the folder removes them, and only them: not those of a process that still runs (it may
// be writing), nor files that merely look alike.
TEST_F(Robustness, TheNextRunRemovesTemporaryFilesOfProcessesThatEnded) {
  const std::string out = dir.file("leftovers");
  std::filesystem::create_directories(out);
  const pid_t ended = ::fork();
  if (ended == 0) ::_exit(0);
  ASSERT_GT(ended, 0);
  ::waitpid(ended, nullptr, 0);
  const std::string stale = dir.write("leftovers/model.safetensors.tmp" + std::to_string(ended), "torn");
  const std::string running = dir.write("leftovers/config.json.tmp" + std::to_string(::getpid()), "in progress");
  const std::string lookalike = dir.write("leftovers/notes.tmp12ab", "mine");
  ChildProcess run(train_args(out, 2), dir.file("leftovers.log"));
  ASSERT_EQ(run.wait(), 0) << read_whole_file(dir.file("leftovers.log"));
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(running));
  EXPECT_TRUE(std::filesystem::exists(lookalike));
}

void ignore_signal(int) {}

// The scope gives back the handlers it found (a host program's, or an outer scope's), not SIG_DFL.
TEST(StopSignalScope, RestoresTheHandlersItReplaced) {
  struct sigaction original_int {
  }, original_term{};
  ::sigaction(SIGINT, nullptr, &original_int);
  ::sigaction(SIGTERM, nullptr, &original_term);
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, ignore_signal);
  { const StopSignalScope scope; }
  struct sigaction after_int {
  }, after_term{};
  ::sigaction(SIGINT, nullptr, &after_int);
  ::sigaction(SIGTERM, nullptr, &after_term);
  ::sigaction(SIGINT, &original_int, nullptr);
  ::sigaction(SIGTERM, &original_term, nullptr);
  EXPECT_EQ(after_int.sa_handler, SIG_IGN);
  EXPECT_EQ(after_term.sa_handler, &ignore_signal);
}

// A prepared dataset's token file changed after preparation (all of train.bin, so that the first
// batch reads it): exit code 2 and a message naming the file, not an internal error.
TEST_F(Robustness, ADamagedTokenFileIsAnInputError) {
  const std::string prepared = dir.file("prepared");
  ASSERT_EQ(run_gpt("prepare --quiet --data " + corpus + " --out " + prepared).exit_code, 0);
  const std::string train_bin = prepared + "/train.bin";
  dir.write("prepared/train.bin", std::string(std::filesystem::file_size(train_bin), '\xFA'));
  std::vector<std::string> args = train_args(dir.file("out"), 2);
  args[2] = prepared;
  std::string command;
  for (const std::string& arg : args) command += " " + arg;
  const CommandResult r = run_gpt(command);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(train_bin), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("id 250"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace gpt
