// Loss estimates without gradients, dropout off: nanoGPT's estimate_loss (mean over random
// batches) for training-time evals, and the deterministic full-file evaluation of `gpt eval`.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/graph.h"
#include "core/random_streams.h"
#include "data/dataset.h"
#include "distributed/world.h"
#include "model/gpt.h"

namespace gpt {

// Which batches an evaluation at iteration `iter` draws: batch i of `split` comes from
// eval_batch_stream(seed, iter, split, i), so it does not depend on training or earlier evals.
struct EvalBatches {
  uint64_t seed;
  int64_t iter;
  int64_t count, batch_size, block_size;
};

// Mean cross-entropy over the batches of `which` (drawn from `split`'s ids). The batches are
// shared among the world's processes and their losses added in batch order: the same bits for
// any number of processes. nullopt when *stop_signal became non-zero on any process: every
// process polls before each batch and all stop at the same one, so an evaluation of any length
// (eval_iters up to 1e6) answers Ctrl-C within a batch.
std::optional<double> estimate_loss(Gpt& model, Graph& graph, TokenView split, Split which, const EvalBatches& batches,
                                    Batch& scratch_batch, const World& world,
                                    const std::atomic<int>* stop_signal = nullptr);

struct WindowEval {
  double loss_nats = 0;  // mean cross-entropy per predicted character
  double bits_per_char = 0;
  int64_t tokens = 0;  // predicted characters
  int64_t windows = 0;
};

// Every full non-overlapping window k: inputs ids[kT .. kT+T-1], targets ids[kT+1 .. kT+T], for
// each k with kT + T < n. Windows are batched `batch` at a time; sums in window order.
WindowEval evaluate_windows(Gpt& model, Graph& graph, TokenView ids, int64_t T, int64_t batch = 16);

// Each predicted token of the same windows as evaluate_windows, with its loss and the model's
// five likeliest tokens: what the surprisal view shows. Only windows within the first
// `max_tokens` tokens are scored.
struct TokenSurprise {
  int32_t target;
  double loss_nats;                              // -ln p(target), from the logits in double precision
  std::array<std::pair<int32_t, float>, 5> top;  // (token, probability), likeliest first
};
std::vector<TokenSurprise> surprisal_windows(Gpt& model, Graph& graph, TokenView ids, int64_t T, int64_t max_tokens);

}  // namespace gpt
