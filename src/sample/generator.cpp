#include "sample/generator.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "ops/ops.h"

namespace gpt {

namespace {

// Attention of n new queries (positions start .. start+n-1) over the cached keys/values 0 .. their
// own position; the new keys and values were already written into the cache.
// qkv: [n, 3C]; keys, values: [block_size, C]; out: [n, C]; probs (optional): [H, n, start+n].
void cached_attention(const float* qkv, const float* keys, const float* values, int64_t n, int64_t start, int64_t C,
                      int64_t H, float* out, float* probs) {
  const int64_t hs = C / H, total = start + n;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
#pragma omp parallel for schedule(static) if (n * total * C > (1 << 16))
  for (int64_t work = 0; work < H * n; ++work) {
    const int64_t h = work / n, i = work % n, visible = start + i + 1;
    const float* q = qkv + i * 3 * C + h * hs;
    float stack_scores[4096];  // block_size <= 4096 is checked by the caller
    float* scores = probs ? probs + (h * n + i) * total : stack_scores;
    float max = -INFINITY;
    for (int64_t j = 0; j < visible; ++j) {
      const float* k = keys + j * C + h * hs;
      float s = 0.0f;
      for (int64_t d = 0; d < hs; ++d) s += q[d] * k[d];
      scores[j] = s * scale;
      max = std::fmax(max, scores[j]);
    }
    float sum = 0.0f;
    for (int64_t j = 0; j < visible; ++j) sum += (scores[j] = std::exp(scores[j] - max));
    const float inv = 1.0f / sum;
    float* o = out + i * C + h * hs;
    for (int64_t d = 0; d < hs; ++d) o[d] = 0.0f;
    for (int64_t j = 0; j < visible; ++j) {
      scores[j] *= inv;
      const float* v = values + j * C + h * hs;
      for (int64_t d = 0; d < hs; ++d) o[d] += scores[j] * v[d];
    }
    if (probs)
      for (int64_t j = visible; j < total; ++j) scores[j] = 0.0f;
  }
}

}  // namespace

Generator::Generator(Gpt& model) : model_(model), arena_(4u << 20), graph_(arena_) {
  graph_.set_grad_enabled(false);
  const GptConfig& c = model.config();
  for (int64_t l = 0; l < c.n_layer; ++l) {
    keys_.emplace_back(static_cast<std::size_t>(c.block_size * c.n_embd));
    values_.emplace_back(static_cast<std::size_t>(c.block_size * c.n_embd));
  }
  last_logits_.resize(static_cast<std::size_t>(c.vocab_size));
}

const float* Generator::append(const int32_t* tokens, int64_t n, std::vector<float>* all_logits) {
  const GptConfig& c = model_.config();
  GPT_CHECK(n >= 1 && length_ + n <= c.block_size, "KV cache overflow: " + std::to_string(length_ + n) + " > block_size");
  GPT_CHECK(c.block_size <= 4096, "block_size above the attention scratch size");
  const int64_t C = c.n_embd, start = length_, total = start + n;
  graph_.reset();
  Graph& g = graph_;
  Tensor wpe = model_.wpe();
  Tensor pos{wpe.data + start * C, nullptr, Shape{n, C}};  // rows start .. start+n-1
  Tensor x = add(g, embedding(g, model_.wte(), tokens, Shape{n}), pos);
  if (capture_) captured_.assign(static_cast<std::size_t>(c.n_layer * c.n_head * n * total), 0.0f);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const Gpt::BlockParams w = model_.block(l);
    Tensor qkv = linear(g, layernorm(g, x, w.ln_1_w, w.ln_1_b), w.c_attn_w, w.c_attn_b);  // [n, 3C]
    float* keys = keys_[l].data();
    float* values = values_[l].data();
    for (int64_t i = 0; i < n; ++i) {
      std::memcpy(keys + (start + i) * C, qkv.data + i * 3 * C + C, C * sizeof(float));
      std::memcpy(values + (start + i) * C, qkv.data + i * 3 * C + 2 * C, C * sizeof(float));
    }
    Tensor attended = g.make(Shape{n, C}, false);
    float* probs = capture_ ? captured_.data() + l * c.n_head * n * total : nullptr;
    cached_attention(qkv.data, keys, values, n, start, C, c.n_head, attended.data, probs);
    x = add(g, x, linear(g, attended, w.attn_proj_w, w.attn_proj_b));
    Tensor h = gelu(g, linear(g, layernorm(g, x, w.ln_2_w, w.ln_2_b), w.c_fc_w, w.c_fc_b));
    x = add(g, x, linear(g, h, w.mlp_proj_w, w.mlp_proj_b));
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
