// Which trained model a command reads, and with how many threads: the options of every command
// that loads a checkpoint (sample, eval, heads, export), bound and applied in one place.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "io/checkpoint.h"

namespace gpt {

struct CheckpointOptions {
  std::string out_dir = "out";
  std::string checkpoint;  // a model.safetensors file, instead of out_dir
  int threads = 0;         // 0: all cores

  // Sets the thread count, then loads the checkpoint (UserError naming the path when absent).
  LoadedModel load() const;
};

// --out_dir and --checkpoint (`out_dir_help` says what out_dir must hold), and --threads unless
// the command computes nothing worth threads.
void add_checkpoint_options(CLI::App* command, CheckpointOptions& options, const char* out_dir_help,
                            bool with_threads = true);

// The worker threads of this process: `threads` (> 0), else all cores.
void set_thread_count(int64_t threads);

}  // namespace gpt
