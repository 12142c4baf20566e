#include "sample/generator.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "kernels/softmax_row.h"
#include "ops/op_kernels.h"

namespace gpt {

namespace {

constexpr int64_t kDotGranule = 8;  // the dot-product path computes 8 outputs together
// From this many rows on, threads split a step by rows rather than by output columns. A constant
// (not a function of the thread count), so which arithmetic a row gets never depends on it.
constexpr int64_t kRowSplitMin = 16;

struct Range {
  int64_t begin, end;
  int64_t size() const { return end - begin; }
};

// The calling thread's part of [0, count) in whole granules: the same split on every call, so
// each thread keeps reading the same slice of every weight matrix (it stays in its own cache).
Range my_share(int64_t count, int64_t granule) {
  const int64_t t = omp_get_thread_num(), threads = omp_get_num_threads();
  const int64_t units = (count + granule - 1) / granule;
  return {std::min(count, units * t / threads * granule), std::min(count, units * (t + 1) / threads * granule)};
}

// Rows `rows` x columns `cols` of y[., N] = x[., K] W^T + b (b may be null). A step of a single
// row takes the dot-product path, any other the prepacked GEMM: the arithmetic of linear() and
// gemm_prepacked(), whichever thread computes the tile.
void linear_tile(const float* x, Range rows, Range cols, bool single_row_step, const Tensor& w, const PackedMatrix& packed,
                 const float* bias, float* y) {
  const int64_t N = w.shape[0], K = w.shape[1];
  if (rows.size() == 0 || cols.size() == 0) return;
  if (bias)
    for (int64_t r = rows.begin; r < rows.end; ++r)
      std::memcpy(y + r * N + cols.begin, bias + cols.begin, cols.size() * sizeof(float));
  if (single_row_step)
    row_times_transposed_serial(cols.size(), K, x, w.data + cols.begin * K, K, y + cols.begin, bias != nullptr);
  else
    gemm_prepacked_columns(rows.size(), x + rows.begin * K, K, packed, cols.begin, cols.end, y + rows.begin * N, N,
                           bias != nullptr);
}

// This thread's columns of all `rows` rows of y = x W^T + b; returns them.
Range team_linear(const float* x, int64_t rows, const Tensor& w, const PackedMatrix& packed, const float* bias, float* y) {
  const int64_t N = w.shape[0];
  const Range cols = rows == 1 ? my_share(N, kDotGranule) : my_share(N, packed.nr());
  linear_tile(x, {0, rows}, cols, rows == 1, w, packed, bias, y);
  return cols;
}

// This thread's rows `own` (of a step of many rows), all columns.
void rows_linear(const float* x, Range own, const Tensor& w, const PackedMatrix& packed, const float* bias, float* y) {
  linear_tile(x, own, {0, w.shape[0]}, false, w, packed, bias, y);
}

// One head's attention for queries q0 .. n-1 of a sequence whose new tokens sit at positions
// start .. start+n-1, over its cached keys/values 0 .. each query's own position.
// qkv: the sequence's [n, 3C] rows; keys, values: its [block_size, C] cache; out: [n - q0, C];
// scores: [n - q0, start + n] (the captured probabilities when the caller wants them).
void head_attention(const float* qkv, const float* keys, const float* values, int64_t n, int64_t q0, int64_t start,
                    int64_t C, int64_t hs, int64_t h, float* out, float* scores) {
  const int64_t total = start + n, nq = n - q0;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  // Several queries: scores and outputs are two matrix products; one query: loops over the cache.
  const bool batched = nq > 1;
  const float* q_rows = qkv + q0 * 3 * C + h * hs;
  if (batched) gemm(false, true, nq, total, hs, q_rows, 3 * C, keys + h * hs, C, scores, total, false);
  for (int64_t i = 0; i < nq; ++i) {
    const int64_t visible = start + q0 + i + 1;
    float* row = scores + i * total;
    if (!batched) row_times_transposed_serial(visible, hs, q_rows + i * 3 * C, keys + h * hs, C, row, false);
    softmax_row(row, visible, total, scale);
    if (!batched) {
      float* o = out + i * C + h * hs;
      for (int64_t d = 0; d < hs; ++d) o[d] = 0.0f;
      for (int64_t j = 0; j < visible; ++j) {
        const float* v = values + j * C + h * hs;
        for (int64_t d = 0; d < hs; ++d) o[d] += row[j] * v[d];
      }
    }
  }
  if (batched) gemm(false, false, nq, hs, total, scores, total, values + h * hs, C, out + h * hs, C, false);
}

PackedMatrix packed_transpose(const Tensor& w) { return PackedMatrix(true, w.shape[1], w.shape[0], w.data, w.shape[1]); }

}  // namespace

// Activations of one append: R = batch * n rows (fewer in the last layer when only each
// sequence's last row is needed); `per_thread` buffers are indexed by thread number.
struct Generator::Buffers {
  int64_t threads = 1;
  float* x = nullptr;         // [R, C] residual stream
  float* x_last = nullptr;    // [batch, C] the last layer's stream when only last rows are kept
  float* qkv = nullptr;       // [R, 3C]
  float* attended = nullptr;  // [R, C]
  float* projected = nullptr; // [R, C]
  float* hidden = nullptr;    // [R, 4C] before GELU
  float* activated = nullptr; // [R, 4C] after GELU
  float* logits = nullptr;    // [R, V]
  float* normed = nullptr;    // per thread [R, C]
  float* stats = nullptr;     // per thread [2R]: layernorm means and 1/std
  float* scores = nullptr;    // per thread [n, length]
  int64_t rows = 0, total = 0;
};

Generator::Generator(Gpt& model, int64_t batch) : model_(model), batch_(batch), arena_(4u << 20) {
  GPT_CHECK(batch >= 1, "generator batch must be at least 1");
  const GptConfig& c = model.config();
  for (int64_t l = 0; l < c.n_layer; ++l) {
    keys_.emplace_back(static_cast<std::size_t>(batch * c.block_size * c.n_embd));
    values_.emplace_back(static_cast<std::size_t>(batch * c.block_size * c.n_embd));
    const Gpt::BlockParams w = model.block(l);
    packed_.push_back({packed_transpose(w.c_attn_w), packed_transpose(w.attn_proj_w), packed_transpose(w.c_fc_w),
                       packed_transpose(w.mlp_proj_w)});
  }
  lm_head_ = packed_transpose(model.wte());
  last_logits_.resize(static_cast<std::size_t>(batch * c.vocab_size));
}

void Generator::set_capture_attention(bool capture) {
  GPT_CHECK(!capture || batch_ == 1, "attention capture needs a batch of one sequence");
  capture_ = capture;
}

const float* Generator::append(const int32_t* tokens, int64_t n, std::vector<float>* all_logits) {
  const GptConfig& c = model_.config();
  GPT_CHECK(n >= 1 && length_ + n <= c.block_size, "KV cache overflow: " + std::to_string(length_ + n) + " > block_size");
  for (int64_t i = 0; i < batch_ * n; ++i)
    GPT_CHECK(tokens[i] >= 0 && tokens[i] < c.vocab_size, "token id " + std::to_string(tokens[i]) + " outside the vocabulary");
  const int64_t C = c.n_embd, V = c.vocab_size, R = batch_ * n;
  arena_.reset();
  Buffers b;
  b.threads = omp_get_max_threads();
  b.rows = R;
  b.total = length_ + n;
  b.x = arena_.allocate_floats(R * C);
  b.x_last = arena_.allocate_floats(batch_ * C);
  b.qkv = arena_.allocate_floats(R * 3 * C);
  b.attended = arena_.allocate_floats(R * C);
  b.projected = arena_.allocate_floats(R * C);
  b.hidden = arena_.allocate_floats(R * 4 * C);
  b.activated = arena_.allocate_floats(R * 4 * C);
  b.logits = arena_.allocate_floats(R * V);
  b.normed = arena_.allocate_floats(b.threads * R * C);
  b.stats = arena_.allocate_floats(b.threads * 2 * R);
  b.scores = arena_.allocate_floats(b.threads * n * b.total);
  if (capture_) captured_.assign(static_cast<std::size_t>(c.n_layer * c.n_head * n * b.total), 0.0f);

  // Only each sequence's last position feeds the next token: unless every position's logits or
  // attention are wanted, the last layer runs attention, the MLP and the head for that row only.
  const bool last_rows_only = !all_logits && !capture_;
  forward(b, tokens, n, last_rows_only);
  length_ += n;

  const int64_t logit_rows_per_sequence = last_rows_only ? 1 : n;
  for (int64_t s = 0; s < batch_; ++s) {
    const float* last = b.logits + ((s + 1) * logit_rows_per_sequence - 1) * V;
    std::copy(last, last + V, last_logits_.begin() + s * V);
  }
  if (all_logits) all_logits->assign(b.logits, b.logits + R * V);
  return last_logits_.data();
}

void Generator::forward(const Buffers& b, const int32_t* tokens, int64_t n, bool last_rows_only) {
  const GptConfig& c = model_.config();
  const int64_t C = c.n_embd, H = c.n_head, hs = C / H, start = length_, total = b.total;
  const int64_t L = c.n_layer;
  const Tensor wte = model_.wte(), wpe = model_.wpe();
  const Tensor ln_f_w = model_.ln_f_w(), ln_f_b = model_.ln_f_b();

#pragma omp parallel num_threads(static_cast<int>(b.threads))
  {
    const int64_t t = omp_get_thread_num();
    float* normed = b.normed + t * b.rows * C;
    float* mean = b.stats + t * 2 * b.rows;
    float* rstd = mean + b.rows;
    float* scratch_scores = b.scores + t * n * total;

    // Two ways to share a step. Many rows (a prompt, a re-encoded window, a batch): each thread
    // takes whole rows through layernorm, the products, GELU and the residual adds, and the
    // threads meet only where attention needs every row's keys and values. Few rows (one token):
    // each thread takes output columns of every product, and each normalises all rows itself.
    auto by_rows = [](int64_t rows) { return rows >= kRowSplitMin; };

    const Range emb_rows = my_share(b.rows, 1);
    for (int64_t r = emb_rows.begin; r < emb_rows.end; ++r) {
      const float* token = wte.data + static_cast<int64_t>(tokens[r]) * C;
      const float* position = wpe.data + (start + r % n) * C;
      for (int64_t j = 0; j < C; ++j) b.x[r * C + j] = token[j] + position[j];
    }
    if (!by_rows(b.rows)) {
#pragma omp barrier
    }

    float* x = b.x;
    int64_t rows = b.rows;
    for (int64_t l = 0; l < L; ++l) {
      const Gpt::BlockParams w = model_.block(l);
      const PackedWeights& wp = packed_[static_cast<std::size_t>(l)];
      if (by_rows(rows)) {
        const Range own = my_share(rows, 1);
        detail::layernorm_forward(x + own.begin * C, w.ln_1_w.data, w.ln_1_b.data, normed + own.begin * C, mean, rstd,
                                  own.size(), C);
        rows_linear(normed, own, w.c_attn_w, wp.c_attn, w.c_attn_b.data, b.qkv);
      } else {
        detail::layernorm_forward(x, w.ln_1_w.data, w.ln_1_b.data, normed, mean, rstd, rows, C);
        team_linear(normed, rows, w.c_attn_w, wp.c_attn, w.c_attn_b.data, b.qkv);
      }
#pragma omp barrier

      const bool trim = last_rows_only && l == L - 1 && n > 1;
      const int64_t q0 = trim ? n - 1 : 0, nq = n - q0;
      const Range items = my_share(batch_ * H, 1);
      for (int64_t item = items.begin; item < items.end; ++item) {
        const int64_t s = item / H, h = item % H;
        const float* qkv = b.qkv + s * n * 3 * C;
        float* keys = keys_[l].data() + s * c.block_size * C;
        float* values = values_[l].data() + s * c.block_size * C;
        for (int64_t i = 0; i < n; ++i) {
          std::memcpy(keys + (start + i) * C + h * hs, qkv + i * 3 * C + C + h * hs, hs * sizeof(float));
          std::memcpy(values + (start + i) * C + h * hs, qkv + i * 3 * C + 2 * C + h * hs, hs * sizeof(float));
        }
        float* scores = capture_ ? captured_.data() + (l * H + h) * n * total : scratch_scores;
        head_attention(qkv, keys, values, n, q0, start, C, hs, h, b.attended + s * nq * C, scores);
      }
#pragma omp barrier

      // x + c_proj(attention), then x + mlp(ln_2(x)). When only the last rows go on, the residual
      // stream is gathered into x_last on the way.
      const int64_t out_rows = batch_ * nq;
      float* x_out = trim ? b.x_last : x;
      auto residual_source = [&](int64_t r) { return trim ? r * n + n - 1 : r; };
      if (by_rows(out_rows)) {
        const Range own = my_share(out_rows, 1);
        rows_linear(b.attended, own, w.attn_proj_w, wp.attn_proj, w.attn_proj_b.data, b.projected);
        for (int64_t r = own.begin; r < own.end; ++r)
          for (int64_t j = 0; j < C; ++j) x_out[r * C + j] = x[residual_source(r) * C + j] + b.projected[r * C + j];
        detail::layernorm_forward(x_out + own.begin * C, w.ln_2_w.data, w.ln_2_b.data, normed + own.begin * C, mean, rstd,
                                  own.size(), C);
        rows_linear(normed, own, w.c_fc_w, wp.c_fc, w.c_fc_b.data, b.hidden);
        detail::gelu_forward(b.hidden + own.begin * 4 * C, b.activated + own.begin * 4 * C, own.size() * 4 * C);
        rows_linear(b.activated, own, w.mlp_proj_w, wp.mlp_proj, w.mlp_proj_b.data, b.projected);
        for (int64_t r = own.begin; r < own.end; ++r)
          for (int64_t j = 0; j < C; ++j) x_out[r * C + j] = x_out[r * C + j] + b.projected[r * C + j];
        x = x_out;
        rows = out_rows;
        continue;  // the next layer reads only this thread's rows before its barrier
      }
      Range cols = team_linear(b.attended, out_rows, w.attn_proj_w, wp.attn_proj, w.attn_proj_b.data, b.projected);
      for (int64_t r = 0; r < out_rows; ++r)
        for (int64_t j = cols.begin; j < cols.end; ++j)
          x_out[r * C + j] = x[residual_source(r) * C + j] + b.projected[r * C + j];
      x = x_out;
      rows = out_rows;
#pragma omp barrier

      detail::layernorm_forward(x, w.ln_2_w.data, w.ln_2_b.data, normed, mean, rstd, rows, C);
      cols = team_linear(normed, rows, w.c_fc_w, wp.c_fc, w.c_fc_b.data, b.hidden);
      for (int64_t r = 0; r < rows; ++r)
        detail::gelu_forward(b.hidden + r * 4 * C + cols.begin, b.activated + r * 4 * C + cols.begin, cols.size());
#pragma omp barrier

      cols = team_linear(b.activated, rows, w.mlp_proj_w, wp.mlp_proj, w.mlp_proj_b.data, b.projected);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = cols.begin; j < cols.end; ++j) x[r * C + j] = x[r * C + j] + b.projected[r * C + j];
#pragma omp barrier
    }
    if (by_rows(rows)) {
      const Range own = my_share(rows, 1);
      detail::layernorm_forward(x + own.begin * C, ln_f_w.data, ln_f_b.data, normed + own.begin * C, mean, rstd,
                                own.size(), C);
      rows_linear(normed, own, wte, lm_head_, nullptr, b.logits);
    } else {
      detail::layernorm_forward(x, ln_f_w.data, ln_f_b.data, normed, mean, rstd, rows, C);
      team_linear(normed, rows, wte, lm_head_, nullptr, b.logits);
    }
  }
}

}  // namespace gpt
