// Generator: incremental inference with a KV cache. Each layer keeps the keys and values of the
// tokens seen so far; append() runs only the new tokens through the model (a batched forward for
// a prompt, one token's matrix-vector products afterwards) and returns the last position's
// logits. No autograd tape, no gradient buffers; per-step memory comes from an arena that is
// reset every call, so steady-state generation allocates nothing. The weights are read, never
// written: the Generator keeps packed copies for batched appends (see generator.cpp), so
// the model must not change while a Generator uses it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/arena.h"
#include "core/graph.h"
#include "kernels/gemm.h"
#include "model/gpt.h"

namespace gpt {

class Generator {
 public:
  explicit Generator(Gpt& model);

  // Feeds tokens at positions length() .. length()+n-1 (length()+n <= block_size) and returns the
  // logits [V] after the last one, valid until the next call. With `all_logits`, also copies the
  // logits of every new position into it ([n, V]) for tests and likelihood measurements.
  const float* append(const int32_t* tokens, int64_t n, std::vector<float>* all_logits = nullptr);
  void reset() { length_ = 0; }
  int64_t length() const { return length_; }
  int64_t capacity() const { return model_.config().block_size; }
  int64_t vocab_size() const { return model_.config().vocab_size; }

  // Attention probabilities of the last append, [n_layer][n_head][n][length] when capture is on
  // (for gpt heads); positions after each query are zero.
  void set_capture_attention(bool capture) { capture_ = capture; }
  const std::vector<float>& captured_attention() const { return captured_; }

 private:
  Gpt& model_;
  Arena arena_;
  Graph graph_;
  std::vector<AlignedBuffer<float>> keys_, values_;  // per layer, [block_size, C]
  struct PackedWeights {
    PackedMatrix c_attn, attn_proj, c_fc, mlp_proj;  // W^T in the GEMM's packed layout
  };
  std::vector<PackedWeights> packed_;  // per layer, for batched appends
  std::vector<float> last_logits_;
  int64_t length_ = 0;
  bool capture_ = false;
  std::vector<float> captured_;
};

}  // namespace gpt
