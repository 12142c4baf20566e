#include "cli/checkpoint_options.h"

#include <omp.h>

namespace gpt {

void set_thread_count(int64_t threads) {
  if (threads > 0) omp_set_num_threads(static_cast<int>(threads));
}

LoadedModel CheckpointOptions::load() const {
  set_thread_count(threads);
  return load_model(checkpoint.empty() ? out_dir : checkpoint);
}

void add_checkpoint_options(CLI::App* command, CheckpointOptions& options, const char* out_dir_help,
                            bool with_threads) {
  command->add_option("--out_dir", options.out_dir, out_dir_help)->capture_default_str();
  command->add_option("--checkpoint", options.checkpoint, "a model.safetensors file (instead of --out_dir)");
  if (with_threads)
    command->add_option("--threads", options.threads, "worker threads (0 = all cores)")->check(CLI::NonNegativeNumber);
}

}  // namespace gpt
