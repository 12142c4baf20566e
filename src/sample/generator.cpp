#include "sample/generator.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/team_barrier.h"
#include "kernels/activation.h"
#include "kernels/norm.h"
#include "kernels/parallel.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/softcap.h"
#include "kernels/softmax_row.h"
#include "kernels/weighted_rows.h"
#include "model/gpt_definition.h"

namespace gpt {

namespace {

// From this many rows on, threads split a step by rows rather than by output columns. A constant
// (not a function of the thread count), so which arithmetic a row gets never depends on it.
constexpr int64_t kRowSplitMin = 16;

// Rows `rows` x columns `cols` of y[., N] = x[., K] W^T + b (b may be null), by the prepacked GEMM
// whatever the number of rows: a row's arithmetic is the same in a step of one row as in a batch of
// many (the GEMM's partial tiles run the same micro-kernel), so a sequence's text does not depend
// on which other sequences share its steps, nor on which thread computes the tile.
void linear_tile(const float* x, IndexRange rows, IndexRange cols, const Tensor& w, const PackedMatrix& packed,
                 const float* bias, float* y) {
  const int64_t N = w.shape[0], K = w.shape[1];
  if (rows.size() == 0 || cols.size() == 0) return;
  if (bias)
    for (int64_t r = rows.begin; r < rows.end; ++r)
      std::memcpy(y + r * N + cols.begin, bias + cols.begin, cols.size() * sizeof(float));
  gemm_prepacked_columns(rows.size(), x + rows.begin * K, K, packed, cols.begin, cols.end, y + rows.begin * N, N,
                         bias != nullptr);
}

// This thread's rows `own` (of a step of many rows), all columns.
void rows_linear(const float* x, IndexRange own, const Tensor& w, const PackedMatrix& packed, const float* bias,
                 float* y) {
  linear_tile(x, own, {0, w.shape[0]}, w, packed, bias, y);
}

// One query head's attention for queries q0 .. n-1 of a sequence whose new tokens sit at
// positions start .. start+n-1, over its cached keys/values 0 .. each query's own position.
// q: query row q0's head ([nq, hs], rows q_stride apart); keys, values: the head's cache
// ([block_size, hs], rows kv_stride apart); out: [nq, hs], rows out_stride apart;
// scores: [nq, start + n] (the captured probabilities when the caller wants them). `inputs`: the
// products' input format, the training forward's (bfloat16 rounds q, k, v and the probabilities).
void head_attention(const float* q, int64_t q_stride, const float* keys, const float* values, int64_t kv_stride,
                    int64_t n, int64_t q0, int64_t start, int64_t hs, float* out, int64_t out_stride, float* scores,
                    Dtype inputs) {
  const int64_t total = start + n, nq = n - q0;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  // Several queries (or bfloat16 inputs, whose arithmetic only the products have): scores and
  // outputs are two matrix products; one float32 query: loops over the cache.
  const bool batched = nq > 1 || inputs != Dtype::float32;
  if (batched) gemm(false, true, nq, total, hs, q, q_stride, keys, kv_stride, scores, total, false, inputs);
  for (int64_t i = 0; i < nq; ++i) {
    const int64_t visible = start + q0 + i + 1;
    float* row = scores + i * total;
    if (!batched) row_times_transposed_serial(visible, hs, q + i * q_stride, keys, kv_stride, row, false);
    softmax_row(row, visible, total, scale);
    if (!batched) weighted_row_sum(visible, hs, row, values, kv_stride, out + i * out_stride);
  }
  if (batched) gemm(false, false, nq, hs, total, scores, total, values, kv_stride, out, out_stride, false, inputs);
}

// W^T packed once for the generator's life: for bfloat16 products, the weights are rounded here.
PackedMatrix packed_transpose(const Tensor& w, Dtype inputs) {
  return PackedMatrix(true, w.shape[1], w.shape[0], w.data, w.shape[1], inputs);
}

}  // namespace

// Activations of one append to k sequences: R rows, sequence by sequence (k after the last
// layer's attention when only each sequence's last row is needed); `per_thread` buffers are
// indexed by thread number.
struct Generator::Buffers {
  int64_t threads = 1;
  const int64_t* sequences = nullptr;     // [k] which of the batch's sequences the rows belong to
  const int64_t* row_begin = nullptr;     // [k + 1] each sequence's first row; row_begin[k] = R
  const int64_t* row_position = nullptr;  // [R] each row's position in its sequence
  const int32_t* row_previous = nullptr;  // [R] the token before each row in its sequence, -1 at position 0
  int64_t k = 0;
  int64_t rows = 0, total = 0;  // R; the most cached positions of any of them after this append
  int64_t longest = 0;          // the most rows of one sequence
  float* x = nullptr;           // [R, C] residual stream
  float* x_last = nullptr;      // [k, C] the stream after trimming to last rows
  float* linear_out[2] = {};    // [R, max(3C, c_fc's outputs, V)] each: norm_linear's outputs, alternately
  float* attended = nullptr;    // [R, C] attention's output
  float* activated = nullptr;   // [R, mlp_hidden] act(hidden)
  float* projected = nullptr;   // [R, C]
  float* normed = nullptr;      // per thread [R, C]
  float* stats = nullptr;       // per thread [2R]: layernorm means and 1/std
  float* scores = nullptr;      // per thread [longest, total]
};

// One thread's share of one append, as an executor of the model definition (gpt_definition.h).
// Every thread of the region runs run_gpt with its own StepExecutor and makes the same calls, so
// all reach the same barriers. Two ways to share a step: many rows (a prompt, a re-encoded window,
// a batch) are split by rows, each thread taking its rows through layernorm, the products, the
// activation and the residual adds; few rows (one token) are split by output columns of every
// product, each thread normalising all rows itself. A barrier is placed only where a step reads
// what another thread wrote since the last one: each Value records how it was written and when.
class Generator::StepExecutor {
 public:
  enum class Share { rows, columns, heads };
  struct Value {
    float* data;
    int64_t rows;
    Share share;
    int64_t epoch;    // the barrier count when it was written
    IndexRange cols;  // this thread's columns, when shared by columns
  };

  StepExecutor(Generator& g, const Buffers& b, const int32_t* tokens, bool last_rows_only, TeamBarrier& barrier)
      : g_(g),
        b_(b),
        tokens_(tokens),
        last_rows_only_(last_rows_only),
        C_(g.model_.config().n_embd),
        thread_(omp_get_thread_num()),
        team_(omp_get_num_threads()),
        barrier_(barrier) {}

  int64_t position(int64_t r) const { return b_.row_position[r]; }

  // This thread's part of [0, count) in whole granules.
  IndexRange my_share(int64_t count, int64_t granule = 1) const {
    return contiguous_share(count, thread_, team_, granule);
  }

  // This thread's columns of all `rows` rows of y = x W^T + b; returns them.
  IndexRange team_linear(const float* x, int64_t rows, const Tensor& w, const PackedMatrix& packed, const float* bias,
                         float* y) const {
    const IndexRange cols = my_share(w.shape[0], packed.nr());
    linear_tile(x, {0, rows}, cols, w, packed, bias, y);
    return cols;
  }

  // In the tape's order of additions: (token + position) + bigram.
  Value embed(const Tensor& wte, const Tensor& wpe, const Tensor& wbe) {
    const IndexRange own = my_share(b_.rows);
    for (int64_t r = own.begin; r < own.end; ++r) {
      float* x = b_.x + r * C_;
      const float* token = wte.data + static_cast<int64_t>(tokens_[r]) * C_;
      if (!wpe.data) {  // RoPE: positions enter in attention
        std::memcpy(x, token, C_ * sizeof(float));
      } else {
        const float* row_position = wpe.data + position(r) * C_;
        for (int64_t j = 0; j < C_; ++j) x[j] = token[j] + row_position[j];
      }
      if (!wbe.data) continue;
      const float* bigram = wbe.data + g_.model_.config().bigram_row(b_.row_previous[r], tokens_[r]) * C_;
      for (int64_t j = 0; j < C_; ++j) x[j] += bigram[j];
    }
    return {b_.x, b_.rows, Share::rows, epoch_, {}};
  }

  Value norm_linear(const Value& x, const NormWeights& norm, const LinearWeights& linear) {
    float* out = next_linear_buffer();
    float* normed = b_.normed + thread_ * b_.rows * C_;
    float* mean = b_.stats + thread_ * 2 * b_.rows;
    float* rstd = mean + b_.rows;
    const PackedMatrix& packed = g_.packed_[static_cast<std::size_t>(linear.index)];
    if (by_rows(x.rows)) {
      wait_for(x, x.rows);
      const IndexRange own = my_share(x.rows);
      norm_forward(norm.kind, x.data + own.begin * C_, norm.weight.data, norm.bias.data, normed + own.begin * C_, mean,
                   rstd, own.size(), C_);
      rows_linear(normed, own, linear.weight, packed, linear.bias.data, out);
      return {out, x.rows, Share::rows, epoch_, {}};
    }
    wait_for(x);
    norm_forward(norm.kind, x.data, norm.weight.data, norm.bias.data, normed, mean, rstd, x.rows, C_);
    const IndexRange cols = team_linear(normed, x.rows, linear.weight, packed, linear.bias.data, out);
    return {out, x.rows, Share::columns, epoch_, cols};
  }

  // In place, on the elements of v this thread wrote (its rows or its columns): no barrier.
  Value value_embed(const Value& qkv, const Tensor& ve) {
    const GptConfig& c = g_.model_.config();
    const int64_t v_begin = c.v_column(), v_width = c.kv_width(), width = c.qkv_width();
    IndexRange rows{0, qkv.rows}, cols{v_begin, width};
    if (qkv.share == Share::columns) {
      cols = {std::max(v_begin, qkv.cols.begin), std::min(width, qkv.cols.end)};
    } else {
      GPT_CHECK(qkv.share == Share::rows, "value embeddings of q|k|v shared by rows or columns");
      rows = my_share(qkv.rows);
    }
    for (int64_t r = rows.begin; r < rows.end; ++r) {
      const float* picked = ve.data + static_cast<int64_t>(tokens_[r]) * v_width - v_begin;
      for (int64_t j = cols.begin; j < cols.end; ++j) qkv.data[r * width + j] += picked[j];
    }
    return qkv;
  }

  // Weightless RMSNorm of each q and k head of this thread's rows, in place.
  Value qk_norm(const Value& qkv) {
    const IndexRange own = own_rows(qkv);
    const GptConfig& c = g_.model_.config();
    const int64_t hs = c.head_size(), width = c.qkv_width();
    float* rows = qkv.data + own.begin * width;
    head_rmsnorm_forward(rows, rows, nullptr, own.size(), width, c.n_head + c.kv_heads(), hs);
    return {qkv.data, qkv.rows, Share::rows, epoch_, {}};
  }

  // RoPE on each q and k head of this thread's rows, in place, at each row's position in its
  // sequence (the cache holds rotated keys).
  Value rope(const Value& qkv) {
    const IndexRange own = own_rows(qkv);
    const GptConfig& c = g_.model_.config();
    const int64_t width = c.qkv_width();
    for (int64_t r = own.begin; r < own.end; ++r) {
      float* row = qkv.data + r * width;
      rope_rotate(g_.model_.rope_table(), position(r), row, row, c.n_head + c.kv_heads());
    }
    return {qkv.data, qkv.rows, Share::rows, epoch_, {}};
  }

  // Appends the new keys and values (of the kv heads only) to the cache, then attends: one work
  // item per (sequence, kv head), running the query heads of its group. In the last layer, when
  // only each sequence's last row goes on, only those rows are queried.
  Value attention(const Value& qkv, int64_t layer) {
    wait_for(qkv);
    const GptConfig& c = g_.model_.config();
    const int64_t H = c.n_head, KV = c.kv_heads(), hs = c.head_size();
    const int64_t width = c.qkv_width(), kv_width = c.kv_width();
    const bool trim = last_rows_only_ && layer == c.n_layer - 1 && b_.rows > b_.k;
    float* out = b_.attended;
    float* scratch_scores = b_.scores + thread_ * b_.longest * b_.total;
    const IndexRange items = my_share(b_.k * KV);
    for (int64_t item = items.begin; item < items.end; ++item) {
      const int64_t i_seq = item / KV, kvh = item % KV, s = b_.sequences[i_seq], start = g_.lengths_[s];
      const int64_t first = b_.row_begin[i_seq], n = b_.row_begin[i_seq + 1] - first;
      const int64_t q0 = trim ? n - 1 : 0, out_row = trim ? i_seq : first;
      const float* rows = qkv.data + first * width;
      float* keys = g_.keys_[layer].data() + s * c.block_size * kv_width + kvh * hs;
      float* values = g_.values_[layer].data() + s * c.block_size * kv_width + kvh * hs;
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(keys + (start + i) * kv_width, rows + i * width + (H + kvh) * hs, hs * sizeof(float));
        std::memcpy(values + (start + i) * kv_width, rows + i * width + (H + KV + kvh) * hs, hs * sizeof(float));
      }
      for (int64_t h = kvh * (H / KV); h < (kvh + 1) * (H / KV); ++h) {
        float* scores = g_.capture_ ? g_.captured_.data() + (layer * H + h) * n * b_.total : scratch_scores;
        head_attention(rows + q0 * width + h * hs, width, keys, values, kv_width, n, q0, start, hs,
                       out + out_row * C_ + h * hs, C_, scores, g_.model_.matmul_dtype());
      }
    }
    return {out, trim ? b_.k : b_.rows, Share::heads, epoch_, {}};
  }

  // x + act(in) W^T + b, written over x; when `in` has fewer rows than x (the last layer's last
  // rows), each sequence's last row of x is gathered into x_last on the way.
  Value residual(const Value& x, const Value& in, Activation act, const LinearWeights& linear) {
    const int64_t rows = in.rows;
    const bool gather_last = rows < x.rows;
    float* x_out = gather_last ? b_.x_last : x.data;
    const PackedMatrix& packed = g_.packed_[static_cast<std::size_t>(linear.index)];
    const int64_t width = linear.weight.shape[1];  // act(in)'s; in's rows may be wider (gated act)
    if (by_rows(rows)) {
      wait_for(in, rows);
      wait_for(x, gather_last ? -1 : rows);
      const IndexRange own = my_share(rows);
      const float* input = in.data;
      if (!is_identity(act)) {
        activation_forward(act, in.data + own.begin * activation_input_width(act, width),
                           b_.activated + own.begin * width, own.size(), width);
        input = b_.activated;
      }
      rows_linear(input, own, linear.weight, packed, linear.bias.data, b_.projected);
      add_rows(x.data, gather_last, own, {0, C_}, x_out);
      return {x_out, rows, Share::rows, epoch_, {}};
    }
    const float* input = in.data;
    if (!is_identity(act)) {
      activate_own_part(act, in, width);
      input = b_.activated;
    }
    wait_for(in);
    wait_for(x);
    const IndexRange cols = team_linear(input, rows, linear.weight, packed, linear.bias.data, b_.projected);
    add_rows(x.data, gather_last, {0, rows}, cols, x_out);
    return {x_out, rows, Share::columns, epoch_, cols};
  }

  // In place, on the elements this thread wrote (its rows or its columns): no barrier.
  Value softcap(const Value& logits, float cap) {
    const int64_t V = g_.model_.config().vocab_size;
    if (logits.share == Share::columns) {
      for (int64_t r = 0; r < logits.rows; ++r) {
        float* row = logits.data + r * V + logits.cols.begin;
        softcap_forward(row, row, logits.cols.size(), cap);
      }
    } else {
      GPT_CHECK(logits.share == Share::rows, "softcap of logits shared by rows or columns");
      const IndexRange own = my_share(logits.rows);
      softcap_forward(logits.data + own.begin * V, logits.data + own.begin * V, own.size() * V, cap);
    }
    return logits;
  }

 private:
  static bool by_rows(int64_t rows) { return rows >= kRowSplitMin; }

  // This thread's rows of v (waiting first unless it wrote them itself), for a step that works
  // on whole rows.
  IndexRange own_rows(const Value& v) {
    wait_for(v, v.rows);
    return my_share(v.rows);
  }

  // Waits at a barrier unless every element this thread reads of v was written before the last
  // barrier or by this thread: own_rows >= 0 means it reads only its share of own_rows rows.
  void wait_for(const Value& v, int64_t own_rows = -1) {
    if (v.epoch < epoch_) return;
    if (own_rows >= 0 && v.share == Share::rows && v.rows == own_rows) return;
    barrier();
  }

  void barrier() {
    barrier_.arrive_and_wait(team_);
    ++epoch_;
  }

  // norm_linear's outputs alternate between two buffers. In run_gpt each is read by the next step
  // only, and between a norm_linear and the next-but-one lies an attention, whose barrier every
  // thread passes; so no thread writes a buffer another may still be reading (row-split threads
  // run ahead of each other between barriers, and a 3C-wide row of one thread overlaps C-wide
  // rows of others: reuse without that barrier would be a race).
  float* next_linear_buffer() {
    flip_ = !flip_;
    return b_.linear_out[flip_ ? 1 : 0];
  }

  // act(in) into activated for the elements this thread wrote of `in` (so no barrier is needed
  // before it), then the barrier the projection needs. A gated activation reads two columns of
  // `in` per output (gate and up, width apart): it waits for all of `in` and splits by rows.
  void activate_own_part(Activation act, const Value& in, int64_t width) {
    if (in.share == Share::columns && in.epoch == epoch_ && !is_gated(act)) {
      for (int64_t r = 0; r < in.rows; ++r)
        activation_forward(act, in.data + r * width + in.cols.begin, b_.activated + r * width + in.cols.begin, 1,
                           in.cols.size());
    } else {
      wait_for(in);
      const IndexRange own = my_share(in.rows);
      activation_forward(act, in.data + own.begin * activation_input_width(act, width),
                         b_.activated + own.begin * width, own.size(), width);
    }
    barrier();
  }

  // x_out[r][cols] = x[source row][cols] + projected[r][cols]; the source row is sequence r's
  // last row when gathering, r itself otherwise.
  void add_rows(const float* x, bool gather_last, IndexRange rows, IndexRange cols, float* x_out) const {
    for (int64_t r = rows.begin; r < rows.end; ++r) {
      const float* source = x + (gather_last ? b_.row_begin[r + 1] - 1 : r) * C_;
      for (int64_t j = cols.begin; j < cols.end; ++j) x_out[r * C_ + j] = source[j] + b_.projected[r * C_ + j];
    }
  }

  Generator& g_;
  const Buffers& b_;
  const int32_t* tokens_;
  bool last_rows_only_;
  int64_t C_;
  int64_t thread_;
  int team_;
  TeamBarrier& barrier_;
  int64_t epoch_ = 0;
  bool flip_ = false;
};

Generator::Generator(Gpt& model, int64_t batch)
    : model_(model),
      batch_(batch),
      arena_(4u << 20),
      lengths_(static_cast<std::size_t>(batch), 0),
      last_token_(static_cast<std::size_t>(batch), -1) {
  GPT_CHECK(batch >= 1, "generator batch must be at least 1");
  const GptConfig& c = model.config();
  for (int64_t l = 0; l < c.n_layer; ++l) {
    keys_.emplace_back(static_cast<std::size_t>(batch * c.block_size * c.kv_width()));
    values_.emplace_back(static_cast<std::size_t>(batch * c.block_size * c.kv_width()));
  }
  for (const LinearWeights* linear : model.weights().linears())
    packed_.push_back(packed_transpose(linear->weight, model.matmul_dtype()));
  last_logits_.resize(static_cast<std::size_t>(batch * c.vocab_size));
  for (int64_t s = 0; s < batch; ++s) every_sequence_.push_back(s);
  last_append_.assign(static_cast<std::size_t>(batch), 0);
}

void Generator::set_capture_attention(bool capture) {
  capture_ = capture;
  if (!capture) std::vector<float>().swap(captured_);
}

void Generator::reset() { std::fill(lengths_.begin(), lengths_.end(), 0); }

void Generator::copy_sequence(int64_t from, int64_t to) {
  GPT_CHECK(from >= 0 && from < batch_ && to >= 0 && to < batch_, "copy_sequence: sequences of the batch");
  if (from == to) return;
  const GptConfig& c = model_.config();
  const int64_t kv_width = c.kv_width(), floats = lengths_[from] * kv_width;
  for (int64_t l = 0; l < c.n_layer; ++l)
    for (std::vector<AlignedBuffer<float>>* cache : {&keys_, &values_}) {
      float* base = (*cache)[static_cast<std::size_t>(l)].data();
      std::memcpy(base + to * c.block_size * kv_width, base + from * c.block_size * kv_width, floats * sizeof(float));
    }
  lengths_[to] = lengths_[from];
  last_token_[to] = last_token_[from];
}

const float* Generator::append(const int32_t* tokens, int64_t n, std::vector<float>* all_logits) {
  return append_to(every_sequence_, tokens, n, all_logits);
}

const float* Generator::append_to(const std::vector<int64_t>& sequences, const int32_t* tokens, int64_t n,
                                  std::vector<float>* all_logits) {
  uniform_counts_.assign(sequences.size(), n);
  return append_ragged(sequences, uniform_counts_, tokens, all_logits);
}

// Checks one append's arguments: distinct sequences of the batch, at least one token for each and
// room for them in its cache, ids in the vocabulary.
void Generator::check_append(const std::vector<int64_t>& sequences, const std::vector<int64_t>& counts,
                             const int32_t* tokens) {
  const GptConfig& c = model_.config();
  GPT_CHECK(!sequences.empty() && counts.size() == sequences.size(),
            "an append needs at least one sequence and a token count for each");
  GPT_CHECK(!capture_ || sequences.size() == 1, "attention capture needs an append to one sequence");
  ++append_count_;
  int64_t rows = 0;
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    const int64_t s = sequences[i], n = counts[i];
    GPT_CHECK(s >= 0 && s < batch_ && last_append_[s] != append_count_,
              "append to sequence " + std::to_string(s) + ": not a distinct sequence of the batch");
    last_append_[s] = append_count_;
    GPT_CHECK(n >= 1, "append to sequence " + std::to_string(s) + ": no tokens");
    GPT_CHECK(lengths_[s] + n <= c.block_size,
              "KV cache overflow: " + std::to_string(lengths_[s] + n) + " > block_size");
    rows += n;
  }
  for (int64_t i = 0; i < rows; ++i)
    GPT_CHECK(tokens[i] >= 0 && tokens[i] < c.vocab_size,
              "token id " + std::to_string(tokens[i]) + " outside the vocabulary");
}

const float* Generator::append_ragged(const std::vector<int64_t>& sequences, const std::vector<int64_t>& counts,
                                      const int32_t* tokens, std::vector<float>* all_logits) {
  check_append(sequences, counts, tokens);
  const GptConfig& c = model_.config();
  const int64_t k = static_cast<int64_t>(sequences.size());
  row_begin_.assign(1, 0);
  row_position_.clear();
  row_previous_.clear();
  Buffers b;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t length = lengths_[sequences[i]], n = counts[i];
    const int32_t* own = tokens + row_begin_.back();
    for (int64_t p = length; p < length + n; ++p) {
      row_position_.push_back(p);
      row_previous_.push_back(p == 0 ? -1 : p == length ? last_token_[sequences[i]] : own[p - length - 1]);
    }
    row_begin_.push_back(row_begin_.back() + n);
    b.total = std::max(b.total, length + n);
    b.longest = std::max(b.longest, n);
  }
  const int64_t C = c.n_embd, V = c.vocab_size, R = row_begin_.back();
  arena_.reset();
  b.threads = team_sizer_ ? team_sizer_->threads(omp_get_max_threads()) : omp_get_max_threads();
  b.sequences = sequences.data();
  b.row_begin = row_begin_.data();
  b.row_position = row_position_.data();
  b.row_previous = row_previous_.data();
  b.k = k;
  b.rows = R;
  const int64_t hidden = c.mlp_width(), widest = std::max({3 * C, activation_input_width(c.mlp, hidden), V});
  b.x = arena_.allocate_floats(R * C);
  b.x_last = arena_.allocate_floats(k * C);
  for (float*& out : b.linear_out) out = arena_.allocate_floats(R * widest);
  b.attended = arena_.allocate_floats(R * C);
  b.activated = arena_.allocate_floats(R * hidden);
  b.projected = arena_.allocate_floats(R * C);
  b.normed = arena_.allocate_floats(b.threads * R * C);
  b.stats = arena_.allocate_floats(b.threads * 2 * R);
  b.scores = arena_.allocate_floats(b.threads * b.longest * b.total);
  if (capture_) captured_.assign(static_cast<std::size_t>(c.n_layer * c.n_head * R * b.total), 0.0f);

  // Only each sequence's last position feeds the next token: unless every position's logits or
  // attention are wanted, the last layer runs attention, the MLP and the head for that row only.
  const bool last_rows_only = !all_logits && !capture_;
  const float* logits = nullptr;
  TeamBarrier barrier;
  const ThreadCount kernel_threads(static_cast<int>(b.threads));  // a team of one opens no inner teams
#pragma omp parallel num_threads(static_cast <int>(b.threads))
  {
    StepExecutor executor(*this, b, tokens, last_rows_only, barrier);
    const StepExecutor::Value out = run_gpt(c, model_.weights(), executor);
    if (omp_get_thread_num() == 0) logits = out.data;
  }
  for (int64_t i = 0; i < k; ++i) {
    lengths_[sequences[i]] += counts[i];
    last_token_[sequences[i]] = tokens[row_begin_[i + 1] - 1];
  }

  for (int64_t i = 0; i < k; ++i) {
    const float* last = logits + (last_rows_only ? i : row_begin_[i + 1] - 1) * V;
    std::copy(last, last + V, last_logits_.begin() + i * V);
  }
  if (all_logits) all_logits->assign(logits, logits + R * V);
  return last_logits_.data();
}

}  // namespace gpt
