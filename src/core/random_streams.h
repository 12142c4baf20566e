// Keyed random streams: every random draw of a run comes from a stream named by its purpose and
// position (JAX's fold_in), never from one generator shared in sequence. Any stream can be made
// on its own, in any order, in any process: "micro-batch 3 of iteration 1200" needs no replay of
// what came before, and changing how often evaluation runs does not move training's batches.
// A key is a 64-bit hash; rng() turns it into a sequential Rng for the draws of that one stream.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/rng.h"

namespace gpt {

class RandomKey {
 public:
  explicit RandomKey(uint64_t seed) : value_(splitmix64_mix(seed + kSplitmixIncrement)) {}

  // A child key for `data`. Mixing the parent first keeps fold_in(a).fold_in(b) and
  // fold_in(b).fold_in(a) apart.
  RandomKey fold_in(uint64_t data) const {
    return from_value(splitmix64_mix(splitmix64_mix(value_) ^ (data * kSplitmixIncrement + 0x632BE59BD9B4E019ull)));
  }
  RandomKey fold_in(std::string_view name) const { return fold_in(fnv1a64(name)); }

  Rng rng() const { return Rng(value_); }
  uint64_t value() const { return value_; }

 private:
  static RandomKey from_value(uint64_t v) {
    RandomKey k(0);
    k.value_ = v;
    return k;
  }
  static uint64_t fnv1a64(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    return h;
  }
  uint64_t value_;
};

// The streams of a training run, one function per purpose: the single place that says which
// numbers key which draws.
enum class StreamPurpose : uint64_t { init = 1, train_batch = 2, dropout = 3, eval_batch = 4, train_epoch = 5 };
enum class Split : uint64_t { train = 0, val = 1 };

inline RandomKey purpose_key(uint64_t seed, StreamPurpose purpose) {
  return RandomKey(seed).fold_in(static_cast<uint64_t>(purpose));
}
// Initial values of one parameter, by its name.
inline Rng init_stream(uint64_t seed, std::string_view parameter) {
  return purpose_key(seed, StreamPurpose::init).fold_in(parameter).rng();
}
// The rows (window offsets) of micro-batch `micro` of iteration `iter`.
inline Rng train_batch_stream(uint64_t seed, int64_t iter, int64_t micro) {
  return purpose_key(seed, StreamPurpose::train_batch)
      .fold_in(static_cast<uint64_t>(iter))
      .fold_in(static_cast<uint64_t>(micro))
      .rng();
}
// data_order "epochs": the offset of epoch `epoch`'s grid of windows, and the key of their order.
inline RandomKey train_epoch_key(uint64_t seed, int64_t epoch) {
  return purpose_key(seed, StreamPurpose::train_epoch).fold_in(static_cast<uint64_t>(epoch));
}
inline Rng train_epoch_grid_stream(uint64_t seed, int64_t epoch) { return train_epoch_key(seed, epoch).rng(); }
inline uint64_t train_epoch_order_key(uint64_t seed, int64_t epoch) {
  return train_epoch_key(seed, epoch).fold_in("order").value();
}
// The dropout masks of that micro-batch's forward: its k-th dropout op draws the stream's k-th number.
inline Rng dropout_stream(uint64_t seed, int64_t iter, int64_t micro) {
  return purpose_key(seed, StreamPurpose::dropout)
      .fold_in(static_cast<uint64_t>(iter))
      .fold_in(static_cast<uint64_t>(micro))
      .rng();
}
// Batch `batch` of the evaluation at iteration `iter` on `split`.
inline Rng eval_batch_stream(uint64_t seed, int64_t iter, Split split, int64_t batch) {
  return purpose_key(seed, StreamPurpose::eval_batch)
      .fold_in(static_cast<uint64_t>(iter))
      .fold_in(static_cast<uint64_t>(split))
      .fold_in(static_cast<uint64_t>(batch))
      .rng();
}
// Sample `sample` of a `gpt sample --seed` run. Sample 0 is Rng(seed) itself, so a lone sample
// draws what it always has; the others are splitmix64 steps away from the seed.
inline Rng sample_stream(uint64_t seed, int64_t sample) {
  if (sample == 0) return Rng(seed);
  return Rng(splitmix64_mix(seed + static_cast<uint64_t>(sample) * kSplitmixIncrement));
}

}  // namespace gpt
