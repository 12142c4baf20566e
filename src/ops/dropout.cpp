// dropout: inverted dropout with a counter-based mask (seed from the Rng, then a hash per element),
// so masks are reproducible and independent of the thread count. DropoutMask is the mask itself,
// shared with the fused ops that apply dropout (attention, residual_projection, the embeddings).
#include <algorithm>

#include "kernels/parallel.h"
#include "ops/op_kernels.h"
#include "ops/ops.h"

namespace gpt {

namespace detail {

DropoutMask DropoutMask::make(float p, Rng& rng, bool training) {
  DropoutMask mask;
  if (!training || p <= 0.0f) return mask;
  GPT_CHECK(p < 1.0f, "dropout probability must be below 1");
  mask.active = true;
  mask.keys = dropout_keys(rng.next_u64(), p);
  return mask;
}

void DropoutMask::apply_range(int64_t first, const float* in, float* out, int64_t n) const {
  if (active)
    dropout_apply_range(keys, static_cast<uint64_t>(first), in, out, n);
  else if (in != out)
    std::copy(in, in + n, out);
}

namespace {
// Whole tensors go in chunks of this many elements, each a thread's task.
constexpr int64_t kDropoutChunk = 4096;
int64_t chunks(int64_t n) { return (n + kDropoutChunk - 1) / kDropoutChunk; }
}  // namespace

void DropoutMask::apply(const float* in, float* out, int64_t n) const {
  if (!active && in == out) return;
#pragma omp parallel for schedule(static) if (n > kParallelMinElementwise)
  for (int64_t c = 0; c < chunks(n); ++c) {
    const int64_t begin = c * kDropoutChunk, size = std::min(kDropoutChunk, n - begin);
    apply_range(begin, in + begin, out + begin, size);
  }
}

void DropoutMask::accumulate(const float* d, float* acc, int64_t n) const {
#pragma omp parallel for schedule(static) if (n > kParallelMinElementwise)
  for (int64_t c = 0; c < chunks(n); ++c) {
    const int64_t begin = c * kDropoutChunk, size = std::min(kDropoutChunk, n - begin);
    if (active) {
      dropout_accumulate_range(keys, static_cast<uint64_t>(begin), d + begin, acc + begin, size);
    } else {
      for (int64_t i = begin; i < begin + size; ++i) acc[i] += d[i];
    }
  }
}

}  // namespace detail

Tensor dropout(Graph& g, const Tensor& x, float p, Rng& rng, bool training) {
  const detail::DropoutMask mask = detail::DropoutMask::make(p, rng, training);
  if (!mask.active) return x;
  const int64_t n = x.numel();
  Tensor out = g.make(x.shape, x.requires_grad());
  mask.apply(x.data, out.data, n);
  if (out.requires_grad()) g.record(out, [=] { mask.accumulate(out.grad(), x.grad_accumulator(), n); });
  return out;
}

}  // namespace gpt
