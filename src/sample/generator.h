// Generator: incremental inference with a KV cache, for a batch of sequences that advance
// together (the samples of one `gpt sample` run) or each at its own pace (the requests `gpt serve`
// runs in one step). Each layer keeps the keys and values of every
// sequence's tokens so far; append() runs only the new tokens through the model (a batched
// forward for a prompt or a re-encoded window, one token per sequence afterwards) and returns each
// sequence's logits after its last new token.
//
// One OpenMP parallel region per append, in which every thread runs the model's one definition
// (model/gpt_definition.h) through a StepExecutor: threads split products by rows or by output
// columns (and attention by (sequence, head)) and meet at a barrier only where a step needs
// another thread's output. Every output element is computed by one thread with the same
// arithmetic whatever the split, so results do not depend on the thread count (nor on which
// sequences share a step). The weights are read, never written: the Generator keeps packed copies
// of them, so the model must not change while a Generator uses it. Per-step memory comes from an
// arena reset every call: steady-state generation allocates nothing.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/arena.h"
#include "core/team_sizer.h"
#include "kernels/gemm.h"
#include "model/gpt.h"

namespace gpt {

class Generator {
 public:
  explicit Generator(Gpt& model, int64_t batch = 1);

  // Feeds n tokens to each sequence (tokens: [batch, n], row-major), each at its next positions
  // length(s) .. length(s)+n-1 (<= block_size) and returns the logits [batch, V] after each
  // sequence's last new token, valid until the next call. With `all_logits`, also copies the
  // logits of every new position into it ([batch, n, V]) for tests and likelihood measurements.
  const float* append(const int32_t* tokens, int64_t n, std::vector<float>* all_logits = nullptr);
  // The same for some of the sequences only (distinct, in any order; tokens: [k, n] in that
  // order): returns the logits [k, V] in that order. Sequences at different lengths share one
  // step; what a sequence gets is the same whichever others share it (see linear_tile).
  const float* append_to(const std::vector<int64_t>& sequences, const int32_t* tokens, int64_t n,
                         std::vector<float>* all_logits = nullptr);
  // A ragged append: sequences[i] takes counts[i] tokens (>= 1), all in one forward; tokens holds
  // them sequence after sequence. Returns the logits [k, V] after each one's last new token
  // (all_logits: every new position's, [sum of counts, V]). What each sequence gets is what an
  // append of its tokens alone gives, bit for bit (gpt serve's step: one new token for most
  // sequences, a prompt or a moved window for some).
  const float* append_ragged(const std::vector<int64_t>& sequences, const std::vector<int64_t>& counts,
                             const int32_t* tokens, std::vector<float>* all_logits = nullptr);
  void reset();
  void reset(int64_t sequence) { lengths_.at(static_cast<std::size_t>(sequence)) = 0; }
  // Makes sequence `to` a copy of sequence `from`: its cached keys and values and its length (a
  // prompt run once for several sequences). What `to` computes next is what `from` would.
  void copy_sequence(int64_t from, int64_t to);
  // Sequence 0's length: every sequence's while they advance together.
  int64_t length() const { return lengths_[0]; }
  int64_t length(int64_t sequence) const { return lengths_.at(static_cast<std::size_t>(sequence)); }
  int64_t batch() const { return batch_; }
  int64_t capacity() const { return model_.config().block_size; }
  int64_t vocab_size() const { return model_.config().vocab_size; }

  // Attention probabilities of the last append, [n_layer][n_head][n][length] when capture is on
  // (for gpt heads and gpt serve's /inspect; an append to one sequence only); positions after each
  // query are zero. Turning it off frees them.
  void set_capture_attention(bool capture);
  // With a sizer, each step's team of threads shrinks to the cores other processes leave free, so
  // that a busy machine does not stall it at every barrier (gpt sample and gpt serve, whose sizer
  // outlives the generator; core/team_sizer.h). Null (the default): every step uses OpenMP's
  // thread count. Either way, the same bits.
  void set_team_sizer(TeamSizer* sizer) { team_sizer_ = sizer; }
  const std::vector<float>& captured_attention() const { return captured_; }
  std::vector<float> take_captured_attention() { return std::move(captured_); }

 private:
  struct Buffers;      // one append's activations, from the arena
  class StepExecutor;  // one thread's part of an append, running the model definition

  Gpt& model_;
  int64_t batch_;
  Arena arena_;
  std::vector<AlignedBuffer<float>> keys_, values_;  // per layer, [batch, block_size, n_kv_head * hs]
  std::vector<PackedMatrix> packed_;                 // W^T of every linear, by LinearWeights::index
  void check_append(const std::vector<int64_t>& sequences, const std::vector<int64_t>& counts, const int32_t* tokens);

  std::vector<float> last_logits_;
  std::vector<int64_t> lengths_;         // per sequence: positions cached
  std::vector<int32_t> last_token_;      // per sequence: the token at its last cached position
  std::vector<int64_t> every_sequence_;  // 0 .. batch-1
  std::vector<int64_t> last_append_;     // per sequence: the append_count_ it last took part in
  std::vector<int64_t> uniform_counts_;  // append_to's counts, reused
  std::vector<int64_t> row_begin_;       // per sequence of an append: its first row; then the row count
  std::vector<int64_t> row_position_;    // per row of an append: its position in its sequence
  std::vector<int32_t> row_previous_;    // per row of an append: the token before it, -1 at position 0
  int64_t append_count_ = 0;
  bool capture_ = false;
  TeamSizer* team_sizer_ = nullptr;
  std::vector<float> captured_;
};

}  // namespace gpt
