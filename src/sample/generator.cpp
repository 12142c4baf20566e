#include "sample/generator.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "kernels/gemm.h"
#include "kernels/softmax_row.h"
#include "ops/ops.h"

namespace gpt {

namespace {

// Attention of n new queries (positions start .. start+n-1) over the cached keys/values 0 .. their
// own position; the new keys and values were already written into the cache.
// qkv: [n, 3C]; keys, values: [block_size, C]; out: [n, C]; scores: [H, n, start+n] (the
// captured probabilities when the caller wants them, else scratch).
void cached_attention(const float* qkv, const float* keys, const float* values, int64_t n, int64_t start, int64_t C,
                      int64_t H, float* out, float* scores) {
  const int64_t hs = C / H, total = start + n;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  // Several queries (a prompt, a re-encoded window): per head, scores and outputs are two
  // matrix products on the fast GEMM; one query: plain loops over the cache are cheaper.
  const bool batched = n > 1;
#pragma omp parallel for schedule(static) if (n * total * C > (1 << 16))
  for (int64_t h = 0; h < H; ++h) {
    float* S = scores + h * n * total;
    if (batched) gemm(false, true, n, total, hs, qkv + h * hs, 3 * C, keys + h * hs, C, S, total, false);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t visible = start + i + 1;
      float* row = S + i * total;
      if (!batched) {
        const float* q = qkv + i * 3 * C + h * hs;
        for (int64_t j = 0; j < visible; ++j) {
          const float* k = keys + j * C + h * hs;
          float dot = 0.0f;
          for (int64_t d = 0; d < hs; ++d) dot += q[d] * k[d];
          row[j] = dot;
        }
      }
      softmax_row(row, visible, scale);
      for (int64_t j = visible; j < total; ++j) row[j] = 0.0f;
      if (!batched) {
        float* o = out + i * C + h * hs;
        for (int64_t d = 0; d < hs; ++d) o[d] = 0.0f;
        for (int64_t j = 0; j < visible; ++j) {
          const float* v = values + j * C + h * hs;
          for (int64_t d = 0; d < hs; ++d) o[d] += row[j] * v[d];
        }
      }
    }
    if (batched) gemm(false, false, n, hs, total, S, total, values + h * hs, C, out + h * hs, C, false);
  }
}

// x W^T + b for inference. One row: dot products against W's rows ([out, in], contiguous).
// Several rows: the GEMM against W^T packed once when the Generator was made (packing it per
// call would re-copy every weight for every token of a re-encoded window).
Tensor inference_linear(Graph& g, const Tensor& x, const Tensor& w, const PackedMatrix& w_packed, const Tensor& bias) {
  const int64_t rows = x.shape.rows();
  if (rows == 1) return linear(g, x, w, bias);
  const int64_t out_features = w.shape[0], in = w.shape[1];
  Tensor y = g.make(Shape{rows, out_features}, false);
  if (defined(bias))
    for (int64_t r = 0; r < rows; ++r) std::memcpy(y.data + r * out_features, bias.data, out_features * sizeof(float));
  gemm_prepacked(rows, x.data, in, w_packed, y.data, out_features, defined(bias));
  return y;
}

PackedMatrix packed_transpose(const Tensor& w) { return PackedMatrix(true, w.shape[1], w.shape[0], w.data, w.shape[1]); }

}  // namespace

Generator::Generator(Gpt& model) : model_(model), arena_(4u << 20), graph_(arena_) {
  graph_.set_grad_enabled(false);
  const GptConfig& c = model.config();
  for (int64_t l = 0; l < c.n_layer; ++l) {
    keys_.emplace_back(static_cast<std::size_t>(c.block_size * c.n_embd));
    values_.emplace_back(static_cast<std::size_t>(c.block_size * c.n_embd));
    const Gpt::BlockParams w = model.block(l);
    packed_.push_back({packed_transpose(w.c_attn_w), packed_transpose(w.attn_proj_w), packed_transpose(w.c_fc_w),
                       packed_transpose(w.mlp_proj_w)});
  }
  last_logits_.resize(static_cast<std::size_t>(c.vocab_size));
}

const float* Generator::append(const int32_t* tokens, int64_t n, std::vector<float>* all_logits) {
  const GptConfig& c = model_.config();
  GPT_CHECK(n >= 1 && length_ + n <= c.block_size, "KV cache overflow: " + std::to_string(length_ + n) + " > block_size");
  const int64_t C = c.n_embd, start = length_, total = start + n;
  graph_.reset();
  Graph& g = graph_;
  Tensor wpe = model_.wpe();
  Tensor pos{wpe.data + start * C, nullptr, Shape{n, C}};  // rows start .. start+n-1
  Tensor x = add(g, embedding(g, model_.wte(), tokens, Shape{n}), pos);
  if (capture_) captured_.assign(static_cast<std::size_t>(c.n_layer * c.n_head * n * total), 0.0f);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const Gpt::BlockParams w = model_.block(l);
    const PackedWeights& wp = packed_[static_cast<std::size_t>(l)];
    Tensor qkv = inference_linear(g, layernorm(g, x, w.ln_1_w, w.ln_1_b), w.c_attn_w, wp.c_attn, w.c_attn_b);  // [n, 3C]
    float* keys = keys_[l].data();
    float* values = values_[l].data();
    for (int64_t i = 0; i < n; ++i) {
      std::memcpy(keys + (start + i) * C, qkv.data + i * 3 * C + C, C * sizeof(float));
      std::memcpy(values + (start + i) * C, qkv.data + i * 3 * C + 2 * C, C * sizeof(float));
    }
    Tensor attended = g.make(Shape{n, C}, false);
    float* scores = capture_ ? captured_.data() + l * c.n_head * n * total : g.scratch(static_cast<std::size_t>(c.n_head * n * total));
    cached_attention(qkv.data, keys, values, n, start, C, c.n_head, attended.data, scores);
    x = add(g, x, inference_linear(g, attended, w.attn_proj_w, wp.attn_proj, w.attn_proj_b));
    Tensor h = gelu(g, inference_linear(g, layernorm(g, x, w.ln_2_w, w.ln_2_b), w.c_fc_w, wp.c_fc, w.c_fc_b));
    x = add(g, x, inference_linear(g, h, w.mlp_proj_w, wp.mlp_proj, w.mlp_proj_b));
  }
  length_ = total;
  if (all_logits) {
    Tensor logits = linear(g, layernorm(g, x, model_.ln_f_w(), model_.ln_f_b()), model_.wte(), Tensor{});
    all_logits->assign(logits.data, logits.data + logits.numel());
    std::copy(logits.data + (n - 1) * c.vocab_size, logits.data + n * c.vocab_size, last_logits_.begin());
    return last_logits_.data();
  }
  // Only the last position's logits are needed to pick the next token.
  Tensor last{x.data + (n - 1) * C, nullptr, Shape{1, C}};
  Tensor logits = linear(g, layernorm(g, last, model_.ln_f_w(), model_.ln_f_b()), model_.wte(), Tensor{});
  std::copy(logits.data, logits.data + c.vocab_size, last_logits_.begin());
  return last_logits_.data();
}

}  // namespace gpt
