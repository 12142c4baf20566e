// add, mul, scale: elementwise ops; b may broadcast over a's leading dimensions (b's gradient is
// then the sum over them, summed per column in row order so the result is thread-independent).
#include "kernels/fast_math.h"
#include "kernels/parallel.h"
#include "kernels/row_sum.h"
#include "ops/ops.h"

namespace gpt {

namespace {

// b's elements repeat every `period` elements of a (period == a.numel() when shapes match).
int64_t broadcast_period(const Tensor& a, const Tensor& b) {
  if (a.shape == b.shape) return a.numel();
  GPT_CHECK(b.shape.rank <= a.shape.rank, "cannot broadcast " + b.shape.str() + " to " + a.shape.str());
  for (int i = 1; i <= b.shape.rank; ++i)
    GPT_CHECK(b.shape[-i] == a.shape[-i], "cannot broadcast " + b.shape.str() + " to " + a.shape.str());
  return b.numel();
}

GPT_VECTOR_CLONES void add_range(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

GPT_VECTOR_CLONES void mul_range(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
}

// out = a op b with b repeating every `period` elements: one vectorised range per period.
void broadcast_apply(void (*op)(const float*, const float*, float*, int64_t), const float* a, const float* b,
                     float* out, int64_t n, int64_t period) {
  const int64_t rows = n / period;
#pragma omp parallel for schedule(static) if (n > kParallelMinElementwise && rows > 1)
  for (int64_t r = 0; r < rows; ++r) op(a + r * period, b, out + r * period, period);
}

void add_forward(const float* a, const float* b, float* out, int64_t n, int64_t period) {
  broadcast_apply(add_range, a, b, out, n, period);
}

void add_backward(const float* dout, float* da, float* db, int64_t n, int64_t period) {
  if (da) accumulate(dout, da, n);
  if (db) accumulate_column_sums(dout, n / period, period, db);
}

}  // namespace

Tensor add(Graph& g, const Tensor& a, const Tensor& b) {
  const int64_t period = broadcast_period(a, b), n = a.numel();
  Tensor out = g.make(a.shape, detail::any_grad(a, b));
  add_forward(a.data, b.data, out.data, n, period);
  if (out.requires_grad())
    g.record(out, [=] { add_backward(out.grad(), a.grad_accumulator(), b.grad_accumulator(), n, period); });
  return out;
}

namespace {

void mul_forward(const float* a, const float* b, float* out, int64_t n, int64_t period) {
  broadcast_apply(mul_range, a, b, out, n, period);
}

// da += dout * b; db += sum over broadcast rows of dout * a. `scratch` holds n floats when db is
// broadcast, so the per-column sums run in row order.
void mul_backward(const float* a, const float* b, const float* dout, float* da, float* db, int64_t n, int64_t period,
                  float* scratch) {
  if (da)
#pragma omp parallel for schedule(static) if (n > kParallelMinElementwise)
    for (int64_t i = 0; i < n; ++i) da[i] += dout[i] * b[i % period];
  if (!db) return;
  if (period == n) {
#pragma omp parallel for schedule(static) if (n > kParallelMinElementwise)
    for (int64_t i = 0; i < n; ++i) db[i] += dout[i] * a[i];
    return;
  }
  for (int64_t i = 0; i < n; ++i) scratch[i] = dout[i] * a[i];
  accumulate_column_sums(scratch, n / period, period, db);
}

}  // namespace

Tensor mul(Graph& g, const Tensor& a, const Tensor& b) {
  const int64_t period = broadcast_period(a, b), n = a.numel();
  Tensor out = g.make(a.shape, detail::any_grad(a, b));
  mul_forward(a.data, b.data, out.data, n, period);
  if (out.requires_grad()) {
    float* scratch = (b.requires_grad() && period != n) ? g.scratch(n) : nullptr;
    g.record(out, [=] {
      mul_backward(a.data, b.data, out.grad(), a.grad_accumulator(), b.grad_accumulator(), n, period, scratch);
    });
  }
  return out;
}

Tensor scale(Graph& g, const Tensor& a, float factor) {
  const int64_t n = a.numel();
  Tensor out = g.make(a.shape, a.requires_grad());
  for (int64_t i = 0; i < n; ++i) out.data[i] = a.data[i] * factor;
  if (out.requires_grad())
    g.record(out, [=] {
      float* da = a.grad_accumulator();
      const float* dout = out.grad();
      for (int64_t i = 0; i < n; ++i) da[i] += dout[i] * factor;
    });
  return out;
}

}  // namespace gpt
