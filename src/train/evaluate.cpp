#include "train/evaluate.h"

#include <algorithm>
#include <numbers>
#include <vector>

namespace gpt {

double estimate_loss(Gpt& model, Graph& graph, TokenView split, Split which, const EvalBatches& e, Batch& batch,
                     const World& world) {
  NoGradGuard no_grad(graph);
  const int64_t B = e.batch_size, T = e.block_size;
  const int64_t per_process = (e.count + world.size() - 1) / world.size(), first = per_process * world.rank();
  std::vector<double> mine(static_cast<std::size_t>(per_process), 0.0);
  std::vector<double> all(static_cast<std::size_t>(per_process * world.size()));
  for (int64_t i = first; i < std::min(e.count, first + per_process); ++i) {
    Rng rows = eval_batch_stream(e.seed, e.iter, which, i);
    Dataset::sample_batch(split, B, T, rows, batch);
    mine[static_cast<std::size_t>(i - first)] =
        model.forward(graph, batch.inputs.data(), B, T, batch.targets.data(), false, rows).loss.item();
    graph.reset();
  }
  world.all_gather(mine.data(), static_cast<int>(per_process), all.data());  // batch i at all[i]
  double total = 0.0;
  for (int64_t i = 0; i < e.count; ++i) total += all[static_cast<std::size_t>(i)];
  return total / static_cast<double>(e.count);
}

WindowEval evaluate_windows(Gpt& model, Graph& graph, TokenView ids, int64_t T, int64_t batch) {
  NoGradGuard no_grad(graph);
  const int64_t n = ids.size();
  WindowEval result;
  result.windows = n > T ? (n - 1) / T : 0;  // largest k with kT + T < n, plus one
  Rng unused(0);                             // dropout is off; forward still takes an Rng
  std::vector<int32_t> inputs, targets;
  double total = 0.0;
  for (int64_t k0 = 0; k0 < result.windows; k0 += batch) {
    const int64_t b = std::min(batch, result.windows - k0);
    inputs.resize(static_cast<std::size_t>(b * T));
    targets.resize(static_cast<std::size_t>(b * T));
    ids.copy(k0 * T, b * T, inputs.data());
    ids.copy(k0 * T + 1, b * T, targets.data());
    // The op returns the mean over b*T positions; weight it back to a sum.
    total += static_cast<double>(model.forward(graph, inputs.data(), b, T, targets.data(), false, unused).loss.item()) *
             static_cast<double>(b * T);
    graph.reset();
  }
  result.tokens = result.windows * T;
  if (result.tokens > 0) {
    result.loss_nats = total / static_cast<double>(result.tokens);
    result.bits_per_char = result.loss_nats / std::numbers::ln2;
  }
  return result;
}

}  // namespace gpt
