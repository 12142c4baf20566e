// causal_self_attention: multi-head causal attention over a packed [B, T, (H + 2 KV) hs] q|k|v
// tensor (grouped-query when KV < H: a group of H / KV query heads shares one kv head), one
// (batch, head) per parallel work item in forward and one (batch, kv head) in backward, whose
// query heads run in order (so each kv head's gradient has one writer and a fixed sum order).
// Within a head, query rows go in blocks and each block only multiplies against the keys it can
// see (0 .. end of block), skipping most of the masked half. A head's keys and values are packed
// for the GEMM micro-kernels once, not once per block (nor once per query head of a group).
// Nothing of size T x T is kept for backward: it recomputes each block's scores with the same
// calls as forward and redoes their softmax from each row's max and sum, kept by forward (so the
// probabilities are bit-identical), in per-thread scratch, and the dropout mask comes from the
// same counter-based hash. That keeps memory at O(T) per thread instead of the [B, H, T, T]
// probabilities (twice, with dropout) per layer, for one extra q k^T product. The same
// computation written with primitives (matmul, scale, causal_mask_fill, softmax, matmul) is the
// reference it is tested against.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/first_failure.h"
#include "kernels/gemm.h"
#include "kernels/softmax_row.h"
#include "ops/op_kernels.h"
#include "ops/ops.h"

namespace gpt {

namespace {

// Query rows per block: a block multiplies against keys 0 .. its end, so the masked part of the
// diagonal is at most half a block. Keys per packed chunk of v or k: a product over keys runs
// chunk by chunk, and longer chunks keep its tile of the output in registers longer.
constexpr int64_t kRowBlock = 32;
constexpr int64_t kKeyChunk = 64;
static_assert(kKeyChunk % kRowBlock == 0);

// The end of the chunk of keys that key i1 - 1 is in: the products over chunks read a block's
// probabilities (and their gradients) up to there, zeros past its diagonal.
int64_t chunk_end(int64_t i1, int64_t T) { return std::min(T, (i1 + kKeyChunk - 1) / kKeyChunk * kKeyChunk); }

struct AttentionDims {
  int64_t B, T, C, H, KV, hs;  // C = H hs: the output width
  int64_t width;               // of a q|k|v row: (H + 2 KV) hs
  int64_t group() const { return H / KV; }
  int64_t kv_head(int64_t h) const { return h / group(); }           // the kv head query head h reads
  int64_t k_offset(int64_t h) const { return C + kv_head(h) * hs; }  // of query head h's keys
  int64_t v_offset(int64_t h) const { return C + KV * hs + kv_head(h) * hs; }
  Dtype inputs;  // of the products
  int threads;   // the team size forward and backward both run with: the scratch has one part per thread
};

using detail::DropoutMask;

// Per-thread scratch: three blocks of kRowBlock x T floats.
int64_t scratch_floats_per_thread(const AttentionDims& d) { return 3 * std::min(kRowBlock, d.T) * d.T; }

// One head's keys or values as the right-hand operands of its blocks' products, packed once per
// head in the calling thread's grow-only storage.
struct HeadPacks {
  PackedMatrix transposed;  // m^T (hs x T): the first i1 columns serve rows ending at i1
  // m in chunks of kKeyChunk rows (keys): a product over keys 0 .. i1 runs chunk by chunk.
  std::vector<PackedMatrix> chunks;
};
HeadPacks& thread_packs(int which) {
  thread_local HeadPacks packs[2];
  return packs[which];
}

void pack_transposed(const AttentionDims& d, const float* m, PackedMatrix& out) {
  out.pack(true, d.hs, d.T, m, d.width, d.inputs);
}

void pack_chunks(const AttentionDims& d, const float* m, std::vector<PackedMatrix>& chunks) {
  const auto count = static_cast<std::size_t>((d.T + kKeyChunk - 1) / kKeyChunk);
  if (chunks.size() < count) chunks.resize(count);
  for (std::size_t c = 0; c < count; ++c) {
    const int64_t first = static_cast<int64_t>(c) * kKeyChunk;
    chunks[c].pack(false, std::min(kKeyChunk, d.T - first), d.hs, m + first * d.width, d.width, d.inputs);
  }
}

// c[rows, hs] (+)= p[rows, 0 .. keys) m[0 .. keys, hs] with m in chunks (p zero from keys to the
// chunk's end): each chunk's products continue the multiply-add chains of the one before, so the
// bits are those of one product.
void times_chunks(const AttentionDims& d, int64_t rows, const float* p, int64_t ldp, int64_t keys,
                  const std::vector<PackedMatrix>& chunks, float* c, int64_t ldc, bool accumulate) {
  for (int64_t first = 0; first < keys; first += kKeyChunk)
    gemm_prepacked_columns(rows, p + first, ldp, chunks[first / kKeyChunk], 0, d.hs, c, ldc, accumulate || first > 0);
}

// Probabilities of query rows i0..i1 of head (b, h) against keys 0..i1, rows with stride T:
// `probs` gets softmax(q k^T / sqrt(hs)) with zeros right of the diagonal up to chunk_end(i1),
// `dropped` the same with the dropout mask applied (it is left alone when dropout is off). Forward
// fills the rows' softmax stats (`found`, indexed by query row); backward redoes the rows from
// them (`known`).
void block_probabilities(const AttentionDims& d, int64_t bh, const float* q, const PackedMatrix& keys_t, int64_t i0,
                         int64_t i1, const DropoutMask& mask, SoftmaxRowStats* found, const SoftmaxRowStats* known,
                         float* probs, float* dropped) {
  const int64_t W = d.width, T = d.T;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d.hs));
  gemm_prepacked_columns(i1 - i0, q + i0 * W, W, keys_t, 0, i1, probs, T, false);
  const int64_t end = chunk_end(i1, T);
  for (int64_t i = i0; i < i1; ++i) {
    float* row = probs + (i - i0) * T;
    if (known)
      softmax_row_again(row, i + 1, i1, scale, known[i]);
    else
      found[i] = softmax_row_with_stats(row, i + 1, i1, scale);
    std::fill(row + i1, row + end, 0.0f);
    if (mask.active) {
      float* drow = dropped + (i - i0) * T;
      const int64_t base = (bh * T + i) * T;
      mask.apply_range(base, row, drow, i + 1);
      std::fill(drow + i + 1, drow + end, 0.0f);
    }
  }
}

// Query head bh (= b H + h) against its kv head's packed keys and values.
void attend_head(const AttentionDims& d, int64_t bh, const float* qkv, const HeadPacks& keys, const HeadPacks& values,
                 float* out, const DropoutMask& mask, SoftmaxRowStats* stats, float* scratch) {
  const int64_t W = d.width, T = d.T;
  const int64_t b = bh / d.H, h = bh % d.H;
  const float* q = qkv + b * T * W + h * d.hs;
  float* p = scratch + static_cast<int64_t>(omp_get_thread_num()) * scratch_floats_per_thread(d);
  float* pd = mask.active ? p + std::min(kRowBlock, T) * T : p;
  for (int64_t i0 = 0; i0 < T; i0 += kRowBlock) {
    const int64_t i1 = std::min(T, i0 + kRowBlock), rows = i1 - i0;
    block_probabilities(d, bh, q, keys.transposed, i0, i1, mask, stats + bh * T, nullptr, p, pd);
    times_chunks(d, rows, pd, T, i1, values.chunks, out + (b * T + i0) * d.C + h * d.hs, d.C, false);
  }
}

void attention_forward(const AttentionDims& d, const float* qkv, float* out, const DropoutMask& mask,
                       SoftmaxRowStats* stats, float* scratch) {
  const int64_t W = d.width, T = d.T;
  FirstFailure failure;  // packing allocates (a thread's first, larger head)
#pragma omp parallel num_threads(d.threads)
  {
    // A thread's (batch, head) items are consecutive, so the query heads of a group mostly follow
    // one another on one thread: their shared keys and values are packed once for the run of them.
    int64_t packed_kv = -1;  // b KV + kv head of what this thread's packs hold, in this call
#pragma omp for schedule(static)
    for (int64_t bh = 0; bh < d.B * d.H; ++bh) {
      failure.capture([&] {
        const int64_t b = bh / d.H, h = bh % d.H;
        HeadPacks& keys = thread_packs(0);
        HeadPacks& values = thread_packs(1);
        if (const int64_t kv = b * d.KV + d.kv_head(h); kv != packed_kv) {
          pack_transposed(d, qkv + b * T * W + d.k_offset(h), keys.transposed);
          pack_chunks(d, qkv + b * T * W + d.v_offset(h), values.chunks);
          packed_kv = kv;
        }
        attend_head(d, bh, qkv, keys, values, out, mask, stats, scratch);
      });
    }
  }
  failure.rethrow();
}

// dots[r] = sum over j <= i0 + r of a[r ld + j] b[r ld + j] for the rows r < rows of a causal
// block, each a running sum in j order (so the bits of a plain loop). Four rows' sums advance side
// by side: one row's adds wait on each other, four rows' overlap.
void causal_row_dots(const float* a, const float* b, int64_t ld, int64_t i0, int64_t rows, float* dots) {
  constexpr int kRows = 4;
  int64_t r = 0;
  for (; r + kRows <= rows; r += kRows) {
    float sums[kRows] = {};
    const int64_t common = i0 + r + 1;  // the first row's length; row r + q has q more
    for (int64_t j = 0; j < common; ++j)
      for (int q = 0; q < kRows; ++q) sums[q] += a[(r + q) * ld + j] * b[(r + q) * ld + j];
    for (int q = 1; q < kRows; ++q)
      for (int64_t j = common; j < common + q; ++j) sums[q] += a[(r + q) * ld + j] * b[(r + q) * ld + j];
    std::copy(sums, sums + kRows, dots + r);
  }
  for (; r < rows; ++r) {
    float sum = 0.0f;
    for (int64_t j = 0; j <= i0 + r; ++j) sum += a[r * ld + j] * b[r * ld + j];
    dots[r] = sum;
  }
}

// The columns of q|k|v that (batch, kv head) task b KV + kvh writes in every row of its batch:
// its query heads' then its key's then its value's, each task's apart from the others'.
void zero_task_columns(const AttentionDims& d, int64_t kvh, float* dqkv_batch) {
  for (int64_t t = 0; t < d.T; ++t) {
    float* row = dqkv_batch + t * d.width;
    std::fill_n(row + kvh * d.group() * d.hs, d.group() * d.hs, 0.0f);
    std::fill_n(row + d.k_offset(kvh * d.group()), d.hs, 0.0f);
    std::fill_n(row + d.v_offset(kvh * d.group()), d.hs, 0.0f);
  }
}

// dqkv += the gradient, or = it when dqkv is not to accumulate (its values are then not read):
// each task zeroes its own columns first, in parallel and just before it sums into them.
void attention_backward(const AttentionDims& d, const float* qkv, const DropoutMask& mask, const SoftmaxRowStats* stats,
                        const float* dout, Tensor::GradTarget dqkv, float* scratch) {
  const int64_t W = d.width, T = d.T;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d.hs));
  FirstFailure failure;
#pragma omp parallel for schedule(static) num_threads(d.threads)
  for (int64_t bkv = 0; bkv < d.B * d.KV; ++bkv)
    failure.capture([&] {
      const int64_t b = bkv / d.KV, kvh = bkv % d.KV;
      const int64_t block = std::min(kRowBlock, T) * T;
      float* p = scratch + static_cast<int64_t>(omp_get_thread_num()) * scratch_floats_per_thread(d);
      float* pd = mask.active ? p + block : p;
      float* dp = p + 2 * block;
      float dots[kRowBlock];
      const float* k = qkv + b * T * W + d.k_offset(kvh * d.group());
      const float* v = qkv + b * T * W + d.v_offset(kvh * d.group());
      if (!dqkv.accumulate) zero_task_columns(d, kvh, dqkv.data + b * T * W);
      HeadPacks& keys = thread_packs(0);
      HeadPacks& values = thread_packs(1);
      pack_transposed(d, k, keys.transposed);
      pack_chunks(d, k, keys.chunks);
      pack_transposed(d, v, values.transposed);
      for (int64_t h = kvh * d.group(); h < (kvh + 1) * d.group(); ++h) {
        const int64_t bh = b * d.H + h;
        const float* q = qkv + b * T * W + h * d.hs;
        float* dq = dqkv.data + b * T * W + h * d.hs;
        float* dk = dqkv.data + b * T * W + d.k_offset(h);
        float* dv = dqkv.data + b * T * W + d.v_offset(h);
        const float* dob = dout + b * T * d.C + h * d.hs;
        for (int64_t i0 = 0; i0 < T; i0 += kRowBlock) {
          const int64_t i1 = std::min(T, i0 + kRowBlock), rows = i1 - i0;
          block_probabilities(d, bh, q, keys.transposed, i0, i1, mask, nullptr, stats + bh * T, p, pd);
          gemm_prepacked_columns(rows, dob + i0 * d.C, d.C, values.transposed, 0, i1, dp, T, false);  // d(dropped)
          gemm(true, false, i1, d.hs, rows, pd, T, dob + i0 * d.C, d.C, dv, W, true, d.inputs);       // dv
          if (mask.active)
            for (int64_t i = i0; i < i1; ++i)
              mask.apply_range((bh * T + i) * T, dp + (i - i0) * T, dp + (i - i0) * T, i + 1);
          causal_row_dots(dp, p, T, i0, rows, dots);
          for (int64_t i = i0; i < i1; ++i) {
            float* row = dp + (i - i0) * T;
            const float* prow = p + (i - i0) * T;
            const float dot = dots[i - i0];
            for (int64_t j = 0; j <= i; ++j) row[j] = prow[j] * (row[j] - dot) * scale;  // d(scores before scaling)
            std::fill(row + i + 1, row + chunk_end(i1, T), 0.0f);
          }
          times_chunks(d, rows, dp, T, i1, keys.chunks, dq + i0 * W, W, true);             // dq
          gemm(true, false, i1, d.hs, rows, dp, T, q + i0 * W, W, dk, W, true, d.inputs);  // dk
        }
      }
    });
  failure.rethrow();
}

}  // namespace

Tensor causal_self_attention(Graph& g, const Tensor& qkv, int n_head, float dropout_p, Rng& rng, bool training,
                             int n_kv_head, Dtype inputs) {
  if (n_kv_head == 0) n_kv_head = n_head;
  GPT_CHECK(n_head > 0 && n_kv_head > 0 && n_head % n_kv_head == 0, "n_kv_head must divide n_head");
  GPT_CHECK(qkv.shape.rank == 3 && qkv.shape[2] % (n_head + 2 * n_kv_head) == 0,
            "attention input must be [B, T, (H + 2 KV) hs], got " + qkv.shape.str());
  AttentionDims d{.B = qkv.shape[0],
                  .T = qkv.shape[1],
                  .C = 0,
                  .H = n_head,
                  .KV = n_kv_head,
                  .hs = qkv.shape[2] / (n_head + 2 * n_kv_head),
                  .width = qkv.shape[2],
                  .inputs = inputs,
                  .threads = omp_get_max_threads()};
  d.C = d.H * d.hs;
  const DropoutMask mask = DropoutMask::make(dropout_p, rng, training);

  Tensor out = g.make(Shape{d.B, d.T, d.C}, qkv.requires_grad());
  // One scratch region serves forward and backward: they never run at the same time.
  float* scratch = g.scratch(static_cast<std::size_t>(d.threads * scratch_floats_per_thread(d)));
  static_assert(sizeof(SoftmaxRowStats) == 2 * sizeof(float));
  auto* stats = reinterpret_cast<SoftmaxRowStats*>(g.scratch(static_cast<std::size_t>(2 * d.B * d.H * d.T)));
  attention_forward(d, qkv.data, out.data, mask, stats, scratch);
  if (out.requires_grad()) {
    g.record(out, [=] { attention_backward(d, qkv.data, mask, stats, out.grad(), qkv.grad_target(), scratch); });
  }
  return out;
}

}  // namespace gpt
