#include "train/distributed_state.h"

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

OptimizerState gather_optimizer_state(const World& world, Optimizer& optimizer, std::size_t floats,
                                      std::vector<AlignedBuffer<float>>& whole) {
  OptimizerState state{optimizer.name(), optimizer.step_count(), optimizer.state()};
  if (!sharded(world, optimizer, floats)) return state;  // every process holds the whole state
  std::vector<int> counts, offsets;
  all_shards(world, optimizer.shard(), counts, offsets);
  whole = whole_state_buffers(optimizer, world.is_root() ? floats : 0);
  for (std::size_t i = 0; i < state.buffers.size(); ++i) {
    world.gather_v(state.buffers[i].data, whole[i].data(), counts, offsets);
    state.buffers[i].data = whole[i].data();
  }
  return state;
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
