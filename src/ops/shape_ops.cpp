// Shape ops: reshape (a view), transpose of two axes (a copy), split/concat along the last axis.
#include "ops/ops.h"

namespace gpt {

Tensor reshape(const Tensor& x, Shape shape) { return x.reshaped(shape); }

namespace {

// Copies x into out with axes a0 and a1 swapped (pad to rank 4 so one loop nest covers all).
void transpose_copy(const float* x, const Shape& in, int a0, int a1, float* out, bool accumulate) {
  int64_t d[4] = {1, 1, 1, 1};
  const int pad = 4 - in.rank;
  for (int i = 0; i < in.rank; ++i) d[pad + i] = in.dims[i];
  int64_t in_stride[4];
  in_stride[3] = 1;
  for (int i = 2; i >= 0; --i) in_stride[i] = in_stride[i + 1] * d[i + 1];
  int perm[4] = {0, 1, 2, 3};
  std::swap(perm[pad + a0], perm[pad + a1]);
  int64_t od[4], src_stride[4];
  for (int i = 0; i < 4; ++i) {
    od[i] = d[perm[i]];
    src_stride[i] = in_stride[perm[i]];
  }
  int64_t o = 0;
  for (int64_t i0 = 0; i0 < od[0]; ++i0)
    for (int64_t i1 = 0; i1 < od[1]; ++i1)
      for (int64_t i2 = 0; i2 < od[2]; ++i2)
        for (int64_t i3 = 0; i3 < od[3]; ++i3, ++o) {
          const float v = x[i0 * src_stride[0] + i1 * src_stride[1] + i2 * src_stride[2] + i3 * src_stride[3]];
          out[o] = accumulate ? out[o] + v : v;
        }
}

}  // namespace

Tensor transpose(Graph& g, const Tensor& x, int axis0, int axis1) {
  const int rank = x.shape.rank;
  if (axis0 < 0) axis0 += rank;
  if (axis1 < 0) axis1 += rank;
  GPT_CHECK(axis0 >= 0 && axis0 < rank && axis1 >= 0 && axis1 < rank, "transpose axes out of range");
  Shape out_shape = x.shape;
  std::swap(out_shape.dims[axis0], out_shape.dims[axis1]);
  Tensor out = g.make(out_shape, x.requires_grad());
  transpose_copy(x.data, x.shape, axis0, axis1, out.data, false);
  // The inverse of swapping two axes is the same swap, applied to the output's shape.
  if (out.requires_grad())
    g.record(out, [=] { transpose_copy(out.grad(), out_shape, axis0, axis1, x.grad_accumulator(), true); });
  return out;
}

std::vector<Tensor> split_last(Graph& g, const Tensor& x, const std::vector<int64_t>& sizes) {
  const int64_t width = x.shape.last(), rows = x.shape.rows();
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  GPT_CHECK(total == width, "split sizes do not add up to the last dimension");
  std::vector<Tensor> parts;
  int64_t begin = 0;
  for (int64_t size : sizes) {
    Shape shape = x.shape;
    shape.dims[shape.rank - 1] = size;
    Tensor part = g.make(shape, x.requires_grad());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < size; ++j) part.data[r * size + j] = x.data[r * width + begin + j];
    if (part.requires_grad())
      g.record(part, [=] {
        float* dx = x.grad_accumulator();
        const float* dpart = part.grad();
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < size; ++j) dx[r * width + begin + j] += dpart[r * size + j];
      });
    parts.push_back(part);
    begin += size;
  }
  return parts;
}

Tensor concat_last(Graph& g, const std::vector<Tensor>& parts) {
  GPT_CHECK(!parts.empty(), "concat of nothing");
  Shape shape = parts[0].shape;
  const int64_t rows = shape.rows();
  int64_t width = 0;
  bool needs_grad = false;
  for (const Tensor& p : parts) {
    GPT_CHECK(p.shape.rows() == rows && p.shape.rank == shape.rank, "concat shapes differ");
    width += p.shape.last();
    needs_grad = needs_grad || p.requires_grad();
  }
  shape.dims[shape.rank - 1] = width;
  Tensor out = g.make(shape, needs_grad);
  int64_t begin = 0;
  for (const Tensor& part : parts) {
    const int64_t size = part.shape.last();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < size; ++j) out.data[r * width + begin + j] = part.data[r * size + j];
    if (out.requires_grad() && part.requires_grad())
      g.record(out, [=] {
        float* dpart = part.grad_accumulator();
        const float* dout = out.grad();
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < size; ++j) dpart[r * size + j] += dout[r * width + begin + j];
      });
    begin += size;
  }
  return out;
}

}  // namespace gpt
