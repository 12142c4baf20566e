// Moving a run's state between its processes for checkpoints: rank 0 alone reads and writes
// files, so a resumed run's weights, loop state and optimizer state go out from rank 0, and a
// checkpoint's optimizer state (sharded across processes under ZeRO-1) is gathered to rank 0, a
// tensor at a time. Files hold whole tensors in the parameter store's layout, so a checkpoint
// written with any number of processes loads with any other. In a world of one, these are copies.
#pragma once

#include <vector>

#include "core/aligned_buffer.h"
#include "distributed/world.h"
#include "io/checkpoint.h"
#include "train/optimizer.h"

namespace gpt {

// Whole-store buffers of `floats` each, one per state buffer of `optimizer`.
std::vector<AlignedBuffer<float>> whole_state_buffers(Optimizer& optimizer, std::size_t floats);

// The optimizer's state as a save writes it, made on every process (the constructor is
// collective). Replicated, it is the optimizer's own buffers. Sharded (ZeRO-1), each tensor is
// gathered to the root when the file reaches it, into one buffer the size of the largest
// parameter: no process ever holds the whole state.
class SavedOptimizerState {
 public:
  SavedOptimizerState(const World& world, Optimizer& optimizer, const ParamStore& params);
  // state().fetch points back at this object: it stays where it was made.
  SavedOptimizerState(const SavedOptimizerState&) = delete;
  SavedOptimizerState& operator=(const SavedOptimizerState&) = delete;
  // What the root's save_resume_point writes.
  const OptimizerState& state() const { return state_; }
  // Makes, in the save's order, the gathers the save did not: all of them on the other processes.
  // Every process calls it after the root's save.
  void finish();

 private:
  const float* gather(std::size_t buffer, int slot);

  const World& world_;
  const ParamStore& params_;
  OptimizerState state_;
  StoreRange mine_;
  std::vector<StoreRange> shards_;  // every process's
  std::vector<int> counts_, offsets_;
  AlignedBuffer<float> tensor_;  // on the root: the tensor being written
  int64_t gathered_ = 0, tensors_ = 0;
};

// Weights, loop state and optimizer state from the root (which loaded them, the optimizer state
// into `whole`, needed on the root only) to every process, each receiving only its shard of the
// optimizer state.
void share_resumed_state(const World& world, ParamStore& params, TrainingState& state, Optimizer& optimizer,
                         std::vector<AlignedBuffer<float>>& whole, int64_t optimizer_step);

}  // namespace gpt
