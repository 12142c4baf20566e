#include "train/distributed_state.h"

#include <algorithm>

#include "core/check.h"
#include "core/copy_values.h"

namespace gpt {

namespace {

// Every process's shard as counts and offsets (gathered: each knows only its own).
void all_shards(const World& world, StoreRange mine, std::vector<int>& counts, std::vector<int>& offsets) {
  const double bounds[2] = {static_cast<double>(mine.begin), static_cast<double>(mine.end)};
  std::vector<double> all(2 * static_cast<std::size_t>(world.size()));
  world.all_gather(bounds, 2, all.data());
  counts.clear();
  offsets.clear();
  for (int r = 0; r < world.size(); ++r) {
    const auto begin = static_cast<int>(all[2 * static_cast<std::size_t>(r)]);
    offsets.push_back(begin);
    counts.push_back(static_cast<int>(all[2 * static_cast<std::size_t>(r) + 1]) - begin);
  }
}

// Whether any process holds less than the whole store's state (ZeRO-1); every process takes part.
bool sharded(const World& world, const Optimizer& optimizer, std::size_t floats) {
  const StoreRange shard = optimizer.shard();
  return world.max(shard.begin != 0 || static_cast<std::size_t>(shard.end) != floats) != 0;
}

}  // namespace

std::vector<AlignedBuffer<float>> whole_state_buffers(Optimizer& optimizer, std::size_t floats) {
  std::vector<AlignedBuffer<float>> whole;
  for (std::size_t i = 0; i < optimizer.state().size(); ++i) whole.emplace_back(floats);
  return whole;
}

SavedOptimizerState::SavedOptimizerState(const World& world, Optimizer& optimizer, const ParamStore& params)
    : world_(world),
      params_(params),
      state_{optimizer.name(), optimizer.step_count(), optimizer.state(), nullptr},
      mine_(optimizer.shard()) {
  if (!sharded(world, optimizer, params.padded_floats())) return;  // every process holds the whole state
  std::vector<int> counts, offsets;
  all_shards(world, mine_, counts, offsets);
  for (std::size_t r = 0; r < counts.size(); ++r) shards_.push_back({offsets[r], offsets[r] + counts[r]});
  counts_.resize(shards_.size());
  offsets_.resize(shards_.size());
  int64_t largest = 0;
  for (int i = 0; i < params.size(); ++i) largest = std::max(largest, params.slot(i).shape.numel());
  if (world.is_root()) tensor_ = AlignedBuffer<float>(static_cast<std::size_t>(largest));
  tensors_ = params.size() * static_cast<int64_t>(state_.buffers.size());
  state_.fetch = [this](std::size_t buffer, int slot) { return gather(buffer, slot); };
}

const float* SavedOptimizerState::gather(std::size_t buffer, int slot) {
  const auto buffers = static_cast<int64_t>(state_.buffers.size());
  GPT_CHECK(gathered_ == slot * buffers + static_cast<int64_t>(buffer),
            "a sharded optimizer state is gathered in the file's order");
  ++gathered_;
  const auto begin = static_cast<int64_t>(params_.slot(slot).offset);
  const int64_t end = begin + params_.slot(slot).shape.numel();
  const auto overlap = [&](StoreRange shard) {
    return StoreRange{std::clamp(shard.begin, begin, end), std::clamp(shard.end, begin, end)};
  };
  for (std::size_t r = 0; r < shards_.size(); ++r) {
    const StoreRange part = overlap(shards_[r]);
    counts_[r] = static_cast<int>(std::max<int64_t>(part.size(), 0));
    offsets_[r] = static_cast<int>(part.begin - begin);
  }
  const StoreRange part = overlap(mine_);
  const float* mine = state_.buffers[buffer].data + (part.size() > 0 ? part.begin - mine_.begin : 0);
  world_.gather_v(mine, tensor_.data(), counts_, offsets_);
  return tensor_.data();
}

void SavedOptimizerState::finish() {
  const auto buffers = static_cast<int64_t>(state_.buffers.size());
  while (gathered_ < tensors_)
    gather(static_cast<std::size_t>(gathered_ % buffers), static_cast<int>(gathered_ / buffers));
}

void share_resumed_state(const World& world, ParamStore& params, TrainingState& state, Optimizer& optimizer,
                         std::vector<AlignedBuffer<float>>& whole, int64_t optimizer_step) {
  world.broadcast(params.data(), params.padded_floats() * sizeof(float));
  struct Loop {
    int64_t iter_num, eval_done, optimizer_step, best_iter, evals_since_best, planned_iters;
    double best_val_loss, elapsed_seconds;
  } loop{state.iter_num,         state.eval_done ? 1 : 0, optimizer_step,      state.best_iter,
         state.evals_since_best, state.planned_iters,     state.best_val_loss, state.elapsed_seconds};
  world.broadcast(&loop, sizeof loop);
  state.iter_num = loop.iter_num;
  state.eval_done = loop.eval_done != 0;
  state.best_val_loss = loop.best_val_loss;
  state.best_iter = loop.best_iter;
  state.evals_since_best = loop.evals_since_best;
  state.planned_iters = loop.planned_iters;
  state.elapsed_seconds = loop.elapsed_seconds;
  optimizer.set_step_count(loop.optimizer_step);
  const std::size_t floats = params.padded_floats();
  const std::vector<NamedBuffer> mine = optimizer.state();
  if (!sharded(world, optimizer, floats)) {  // every process holds the whole state: the root's copy, then one broadcast
    for (std::size_t i = 0; i < mine.size(); ++i) {
      if (world.is_root()) copy_values(mine[i].data, whole[i].data(), static_cast<int64_t>(floats));
      world.broadcast(mine[i].data, floats * sizeof(float));
    }
    return;
  }
  std::vector<int> counts, offsets;
  all_shards(world, optimizer.shard(), counts, offsets);
  for (std::size_t i = 0; i < mine.size(); ++i) world.scatter_v(whole[i].data(), mine[i].data, counts, offsets);
}

}  // namespace gpt
