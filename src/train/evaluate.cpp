#include "train/evaluate.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <vector>

namespace gpt {

std::optional<double> estimate_loss(Gpt& model, Graph& graph, TokenView split, Split which, const EvalBatches& e,
                                    Batch& batch, const World& world, const std::atomic<int>* stop_signal) {
  NoGradGuard no_grad(graph);
  const int64_t B = e.batch_size, T = e.block_size;
  const int64_t per_process = (e.count + world.size() - 1) / world.size(), first = per_process * world.rank();
  std::vector<double> mine(static_cast<std::size_t>(per_process), 0.0);
  std::vector<double> all(static_cast<std::size_t>(per_process * world.size()));
  // Every process takes per_process turns (the last one's past e.count idle), so all poll alike.
  for (int64_t turn = 0; turn < per_process; ++turn) {
    if (stop_signal && world.max(stop_signal->load()) != 0) return std::nullopt;
    const int64_t i = first + turn;
    if (i >= e.count) continue;
    Rng rows = eval_batch_stream(e.seed, e.iter, which, i);
    Dataset::sample_batch(split, B, T, rows, batch);
    mine[static_cast<std::size_t>(turn)] =
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

std::vector<TokenSurprise> surprisal_windows(Gpt& model, Graph& graph, TokenView ids, int64_t T, int64_t max_tokens) {
  NoGradGuard no_grad(graph);
  const int64_t n = std::min(ids.size(), max_tokens);
  const int64_t windows = n > T ? (n - 1) / T : 0;
  const int64_t V = model.config().vocab_size;
  Rng unused(0);
  std::vector<int32_t> inputs(static_cast<std::size_t>(T)), targets(static_cast<std::size_t>(T));
  std::vector<TokenSurprise> out;
  std::vector<int32_t> order(static_cast<std::size_t>(V));
  for (int64_t k = 0; k < windows; ++k) {
    ids.copy(k * T, T, inputs.data());
    ids.copy(k * T + 1, T, targets.data());
    const float* logits = model.forward(graph, inputs.data(), 1, T, nullptr, false, unused).logits.data;
    for (int64_t t = 0; t < T; ++t) {
      const float* row = logits + t * V;
      const double max = *std::max_element(row, row + V);
      double sum = 0;
      for (int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(row[v]) - max);
      const double log_sum = std::log(sum) + max;
      TokenSurprise s{targets[static_cast<std::size_t>(t)], log_sum - row[targets[static_cast<std::size_t>(t)]], {}};
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + std::min<int64_t>(5, V), order.end(),
                        [&](int32_t a, int32_t b) { return row[a] > row[b]; });
      for (int64_t i = 0; i < std::min<int64_t>(5, V); ++i)
        s.top[static_cast<std::size_t>(i)] = {
            order[static_cast<std::size_t>(i)],
            static_cast<float>(std::exp(row[order[static_cast<std::size_t>(i)]] - log_sum))};
      out.push_back(s);
    }
    graph.reset();
  }
  return out;
}

}  // namespace gpt
