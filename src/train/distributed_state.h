// Moving a run's state between its processes for checkpoints: rank 0 alone reads and writes
// files, so a resumed run's weights, loop state and optimizer state go out from rank 0, and a
// checkpoint's optimizer state (sharded across processes under ZeRO-1) is gathered to rank 0.
// Both use whole buffers in the parameter store's layout, so a checkpoint written with any number
// of processes loads with any other. In a world of one, these are copies.
#pragma once

#include <vector>

#include "core/aligned_buffer.h"
#include "distributed/world.h"
#include "io/checkpoint.h"
#include "train/optimizer.h"

namespace gpt {

// Whole-store buffers of `floats` each, one per state buffer of `optimizer`.
std::vector<AlignedBuffer<float>> whole_state_buffers(Optimizer& optimizer, std::size_t floats);

// The optimizer's state with whole buffers of `floats` (the store's), valid on the root. Sharded
// (ZeRO-1), the root alone gathers the shards, into `whole`, which it allocates; otherwise every
// process's own buffers are whole and nothing is copied.
OptimizerState gather_optimizer_state(const World& world, Optimizer& optimizer, std::size_t floats,
                                      std::vector<AlignedBuffer<float>>& whole);

// Weights, loop state and optimizer state from the root (which loaded them, the optimizer state
// into `whole`, needed on the root only) to every process, each receiving only its shard of the
// optimizer state.
void share_resumed_state(const World& world, ParamStore& params, TrainingState& state, Optimizer& optimizer,
                         std::vector<AlignedBuffer<float>>& whole, int64_t optimizer_step);

}  // namespace gpt
