// Helpers for training tests: a generated corpus with learnable structure, a scratch folder,
// a tiny config, and the losses a run logged to metrics.jsonl.
#pragma once

#include <omp.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/rng.h"
#include "data/dataset.h"
#include "io/checkpoint.h"
#include "thread_count.h"
#include "train/train_config.h"
#include "train/trainer.h"

namespace gpt::testing {

// Sentences of a few words: a model learns the spelling quickly, far below ln(V).
inline std::string generated_corpus(std::size_t characters, uint64_t seed = 42) {
  static const char* words[] = {"the", "king", "and", "queen", "shall", "speak",
                                "of",  "love", "to",  "thee",  "my",    "lord"};
  Rng rng(seed);
  std::string text;
  while (text.size() < characters) {
    const int n = 3 + static_cast<int>(rng.below(5));
    for (int i = 0; i < n; ++i) {
      std::string w = words[rng.below(12)];
      if (i == 0) w[0] = static_cast<char>(w[0] - 'a' + 'A');
      text += w + (i + 1 < n ? " " : ".\n");
    }
  }
  return text;
}

class ScratchDir {
 public:
  ScratchDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("gpt-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& content) const {
    std::ofstream(file(name), std::ios::binary) << content;
    return file(name);
  }

 private:
  static int& counter() {
    static int c = 0;
    return c;
  }
  std::filesystem::path path_;
};

// A test with its own scratch folder holding a generated corpus; training logs only warnings.
class CorpusTest : public ::testing::Test {
 protected:
  void SetUp() override { spdlog::set_level(spdlog::level::warn); }
  ScratchDir dir;
  std::string corpus = dir.write("corpus.txt", generated_corpus(20000));
};

// A text file's dataset as training opens it (default split and vocabulary, the test cache).
inline Dataset open_text(const std::string& path) {
  CorpusSpec spec;
  spec.data_path = path;
  return Dataset::open(spec, "");
}

inline TrainConfig tiny_config(const ScratchDir& dir, const std::string& corpus_path) {
  TrainConfig c;
  c.data_path = corpus_path;
  c.out_dir = dir.file("out");
  c.model.n_layer = 2;
  c.model.n_head = 2;
  c.model.n_embd = 32;
  c.model.block_size = 16;
  c.batch_size = 8;
  c.model.dropout = 0.1;
  c.model.bias = true;
  c.max_iters = 20;
  c.eval_interval = 5;
  c.eval_iters = 2;
  c.log_interval = 1;
  c.warmup_iters = 5;
  c.lr_decay_iters = 20;
  c.learning_rate = 3e-3;
  return c;
}

// Bit for bit, padding included.
inline bool same_weights(const LoadedModel& a, const LoadedModel& b) {
  const ParamStore &p = a.model->params(), &q = b.model->params();
  return p.padded_floats() == q.padded_floats() &&
         std::memcmp(p.data(), q.data(), p.padded_floats() * sizeof(float)) == 0;
}

struct LoggedRun {
  std::vector<std::pair<int64_t, double>> train;  // (iter, loss)
  std::vector<std::pair<int64_t, double>> val;    // (iter, val loss)
};

inline LoggedRun read_metrics(const std::string& out_dir) {
  LoggedRun run;
  std::ifstream in(out_dir + "/metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] == "train")
      run.train.emplace_back(j["iter"].get<int64_t>(), j["loss"].get<double>());
    else if (j["type"] == "eval")
      run.val.emplace_back(j["iter"].get<int64_t>(), j["val_loss"].get<double>());
  }
  return run;
}

// Trains `c` on 1 and on 3 threads: the logged losses must be the same bits.
inline void expect_thread_count_does_not_change_the_run(const TrainConfig& c) {
  const testing::ThreadCount restore;
  std::vector<LoggedRun> runs;
  for (int threads : {1, 3}) {
    omp_set_num_threads(threads);
    run_training(c, nullptr);
    runs.push_back(read_metrics(c.out_dir));
  }
  EXPECT_EQ(runs[0].train, runs[1].train);
  EXPECT_EQ(runs[0].val, runs[1].val);
}

// Training with `c` must stop with a UserError that names `key` (a resume whose config disagrees
// with its checkpoint's).
inline void expect_error_naming(const TrainConfig& c, const std::string& key) {
  try {
    run_training(c, nullptr);
    ADD_FAILURE() << "expected an error naming " << key;
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
  }
}

// Trains `c` uninterrupted, then again in two halves (max_iters 10, then resumed in another
// out_dir); the resumed run's logged losses must be the uninterrupted run's.
inline void expect_resumed_run_reproduces(const TrainConfig& c, const std::string& split_out_dir) {
  run_training(c, nullptr);
  const LoggedRun full = read_metrics(c.out_dir);
  TrainConfig first_half = c;
  first_half.out_dir = split_out_dir;
  first_half.max_iters = 10;
  run_training(first_half, nullptr);
  TrainConfig second_half = c;
  second_half.out_dir = split_out_dir;
  second_half.init_from = {InitKind::resume, ""};
  const TrainResult r = run_training(second_half, nullptr);
  EXPECT_EQ(r.iterations, c.max_iters - 10);
  EXPECT_EQ(read_metrics(split_out_dir).train, full.train);
  EXPECT_EQ(read_metrics(split_out_dir).val, full.val);
}

}  // namespace gpt::testing
