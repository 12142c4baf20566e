// Checkpoints in out_dir:
//   model.safetensors             the weights under nanoGPT's names, with metadata "config" (the
//                                 model config as JSON), "vocab" (JSON array of the characters in
//                                 id order) and, for a training run, "train_state" (a file name);
//   train_state-<tag>.safetensors  AdamW moments ("exp_avg.<name>", "exp_avg_sq.<name>") and the
//                                 loop state (iteration, best val loss, RNG, Adam step) in metadata.
// model.safetensors is the manifest and is renamed into place last: the state file it names was
// already complete on disk, so a crash at any instant leaves one consistent checkpoint.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/rng.h"
#include "data/vocab.h"
#include "model/gpt.h"

namespace gpt {

struct TrainingState {
  int64_t iter_num = 0;         // the next iteration to run
  bool eval_done = false;       // whether iter_num's evaluation already ran (and was logged)
  double best_val_loss = 1e9;
  int64_t adam_step = 0;
  Rng::State rng{};
  nlohmann::json train_config;  // the effective training config, for reference
};

struct OptimizerMoments {
  const float* exp_avg;  // ParamStore layout
  const float* exp_avg_sq;
};

// Writes the model (and, when state is given, the optimizer and loop state) atomically.
void save_checkpoint(const std::string& out_dir, Gpt& model, const Vocab& vocab, const TrainingState* state,
                     const OptimizerMoments* moments);

struct LoadedModel {
  std::unique_ptr<Gpt> model;
  Vocab vocab;
  std::string path;
};

// Loads model.safetensors from a file path or from out_dir/model.safetensors; validates shapes,
// config and vocabulary. UserError (exit 1) naming the file on any problem; exit 2 when absent.
LoadedModel load_model(const std::string& path_or_dir);

// Restores AdamW moments (into the given buffers, ParamStore layout) and the loop state of the
// checkpoint in out_dir, for init_from = "resume".
TrainingState load_training_state(const std::string& out_dir, Gpt& model, float* exp_avg, float* exp_avg_sq);

std::string model_path(const std::string& out_dir);

}  // namespace gpt
