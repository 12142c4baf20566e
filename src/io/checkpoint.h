// Checkpoints in out_dir:
//   model.safetensors             the weights of the best evaluation so far (of the latest one with
//                                 always_save_checkpoint): what sampling, evaluation and export
//                                 read. Float32, under nanoGPT's names, with metadata "config" (the
//                                 model config as JSON), "vocab" (JSON array of the characters in id
//                                 order), "dtype" (the matrix products' format it was trained with,
//                                 which sampling and evaluation use unless told otherwise) and, from a
//                                 training run, "iter_num" and "val_loss" (the evaluation's);
//   resume.safetensors            the last saved iteration's weights, the same metadata without
//                                 "val_loss", and "train_state" (a file name): what init_from
//                                 "resume" continues, bit for bit;
//   train_state-<tag>.safetensors  the optimizer's state buffers by name ("<buffer>.<parameter>",
//                                 e.g. "exp_avg.transformer.wte.weight"), the optimizer's name and
//                                 step, and the loop state (iteration, best val loss) in metadata.
// Random streams are keyed by (seed, iteration, ...), so no generator state needs saving. A
// train state written before optimizers had names (AdamW only, with "adam_step") still loads, and
// so does a folder from before resume.safetensors, whose model.safetensors named its train state.
// resume.safetensors is the manifest and is renamed into place last: the state file it names was
// already complete on disk, so a crash at any instant leaves one consistent resume point.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <vector>

#include "core/param_store.h"
#include "data/vocab.h"
#include "model/gpt.h"

namespace gpt {

struct TrainingState {
  int64_t iter_num = 0;    // the next iteration to run
  bool eval_done = false;  // whether iter_num's evaluation already ran (and was logged)
  double best_val_loss = 1e9;
  int64_t best_iter = -1;        // the iteration of best_val_loss (-1: none, or not recorded)
  int64_t evals_since_best = 0;  // evaluations in a row without a new best val loss (patience)
  int64_t planned_iters = 0;     // max_time: the run's length in iterations, fixed once measured (0: none)
  double elapsed_seconds = 0;    // max_time: time the run had spent when this state was saved
  nlohmann::json train_config;   // the effective training config, for reference
};

// An optimizer as a checkpoint sees it: a name, a step count and named buffers in the parameter
// store's layout (see train/optimizer.h).
struct OptimizerState {
  std::string name;
  int64_t step = 0;
  std::vector<NamedBuffer> buffers;
  // When set, a save asks here for buffer b's floats over parameter slot s instead of reading
  // buffers[b].data (which may then be null): a state sharded over processes is gathered one
  // tensor at a time, in the file's order (slot by slot, each slot's buffers in order).
  std::function<const float*(std::size_t buffer, int slot)> fetch = nullptr;
};

// A training run's model as its checkpoint files record it: the weights, the vocabulary and the
// bfloat16 arithmetic the run computes with (recorded for a bfloat16 model).
struct SavedModel {
  Gpt& model;
  const Vocab& vocab;
  Bf16Arithmetic arithmetic;
};

// Writes the weights as the run's model (model.safetensors), evaluated at `iter_num` with
// `val_loss`, atomically.
void save_best_model(const std::string& out_dir, const SavedModel& saved, int64_t iter_num, double val_loss);

// Writes the resume point (resume.safetensors and the train state it names) atomically, then
// removes the train states no manifest names any more.
void save_resume_point(const std::string& out_dir, const SavedModel& saved, const TrainingState& state,
                       const OptimizerState& optimizer);

// Writes the model's weights alone (no training state), with the metadata sampling needs, to the
// file `path`, atomically. dtype bfloat16 stores the matrices that enter nothing but matrix
// products (the blocks' Linear weights) as BF16, rounded as those products round them: half the
// bytes, and a file that samples with bfloat16 products (its recorded dtype) exactly as the
// float32 checkpoint does with --dtype bfloat16. Embeddings (wte is also the tied head, and is
// looked up in float32), layernorms and biases stay F32. `arithmetic`: the bfloat16 arithmetic
// the model was trained with, recorded as the checkpoint's (LoadedModel::bf16_arithmetic;
// automatic, unknown, records none), whatever this process computes with.
void export_model(Gpt& model, const Vocab& vocab, Dtype dtype, Bf16Arithmetic arithmetic, const std::string& path);

struct LoadedModel {
  std::unique_ptr<Gpt> model;
  Vocab vocab;
  std::string path;
  // The bfloat16 arithmetic a bfloat16 model was trained with (automatic when not recorded).
  Bf16Arithmetic bf16_arithmetic = Bf16Arithmetic::automatic;
};

// Loads model.safetensors from a file path or from out_dir/model.safetensors; validates shapes,
// config and vocabulary. UserError (exit 1) naming the file on any problem; exit 2 when absent.
// The model's matmul dtype is the checkpoint's (float32 when it does not say).
LoadedModel load_model(const std::string& path_or_dir);

// The manifest init_from "resume" continues from: out_dir/resume.safetensors, or, in a folder
// written before resume points had a file of their own, out_dir/model.safetensors.
std::string resume_path(const std::string& out_dir);

// Restores the optimizer's buffers (into optimizer.buffers, by name) and step, and the loop state
// of the resume point in out_dir, for init_from = "resume". UserError when the checkpoint holds
// another optimizer's state than optimizer.name.
TrainingState load_training_state(const std::string& out_dir, Gpt& model, OptimizerState& optimizer);

std::string model_path(const std::string& out_dir);

}  // namespace gpt
