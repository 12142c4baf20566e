// embedding: gathers rows of a table by id; backward scatter-adds the output gradient into the
// picked rows (parallel over column blocks, rows in id order, so repeated ids sum deterministically).
// add_embedding_at adds the picked rows into columns of another tensor, with the same backward.
#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/parallel.h"
#include "kernels/row_sum.h"
#include "ops/op_kernels.h"
#include "ops/ops.h"

namespace gpt {

namespace detail {

void embedding_backward(const int32_t* ids, int64_t n, const float* dout, int64_t stride, float* dtable, int64_t C) {
  const int64_t blocks = column_blocks(C);
#pragma omp parallel for schedule(static) if (n * C > kParallelMinElementwise && blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) {
    const auto [j0, j1] = column_block(b, C);
    for (int64_t i = 0; i < n; ++i) {
      float* row = dtable + static_cast<int64_t>(ids[i]) * C;
      const float* d = dout + i * stride;
      for (int64_t j = j0; j < j1; ++j) row[j] += d[j];
    }
  }
}

}  // namespace detail

namespace {

void check_ids(const int32_t* ids, int64_t n, int64_t V) {
  for (int64_t i = 0; i < n; ++i)
    GPT_CHECK(ids[i] >= 0 && ids[i] < V,
              "embedding id " + std::to_string(ids[i]) + " outside [0, " + std::to_string(V) + ")");
}

// The caller's ids may not outlive the step; backward reads a copy in the arena.
const int32_t* save_ids(Graph& g, const int32_t* ids, int64_t n) {
  int32_t* saved = static_cast<int32_t*>(g.arena().allocate_bytes(n * sizeof(int32_t)));
  std::memcpy(saved, ids, n * sizeof(int32_t));
  return saved;
}

}  // namespace

Tensor embedding(Graph& g, const Tensor& table, const int32_t* ids, Shape ids_shape) {
  GPT_CHECK(table.shape.rank == 2, "embedding table must be [V, C]");
  GPT_CHECK(ids_shape.rank < Shape::kMaxRank, "ids rank too high");
  const int64_t V = table.shape[0], C = table.shape[1], n = ids_shape.numel();
  check_ids(ids, n, V);
  Shape out_shape = ids_shape;
  out_shape.dims[out_shape.rank++] = C;
  Tensor out = g.make(out_shape, table.requires_grad());
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(out.data + i * C, table.data + static_cast<int64_t>(ids[i]) * C, C * sizeof(float));
  if (out.requires_grad()) {
    const int32_t* saved = save_ids(g, ids, n);
    g.record(out, [=] { detail::embedding_backward(saved, n, out.grad(), C, table.grad_accumulator(), C); });
  }
  return out;
}

Tensor add_embedding_at(Graph& g, const Tensor& x, const Tensor& table, const int32_t* ids, int64_t column) {
  GPT_CHECK(table.shape.rank == 2, "embedding table must be [V, C]");
  const int64_t V = table.shape[0], C = table.shape[1], width = x.shape[x.shape.rank - 1], n = x.numel() / width;
  GPT_CHECK(column >= 0 && column + C <= width, "columns [" + std::to_string(column) + ", " +
                                                    std::to_string(column + C) + ") outside rows of " +
                                                    std::to_string(width));
  check_ids(ids, n, V);
  Tensor out = g.make(x.shape, x.requires_grad() || table.requires_grad());
#pragma omp parallel for schedule(static) if (n * width > kParallelMinElementwise)
  for (int64_t i = 0; i < n; ++i) {
    float* row = out.data + i * width;
    std::memcpy(row, x.data + i * width, width * sizeof(float));
    const float* picked = table.data + static_cast<int64_t>(ids[i]) * C;
    for (int64_t j = 0; j < C; ++j) row[column + j] += picked[j];
  }
  if (out.requires_grad()) {
    const int32_t* saved = save_ids(g, ids, n);
    g.record(out, [=] {
      const float* d = out.grad();
      if (float* dx = x.grad_accumulator()) accumulate(d, dx, n * width);
      if (float* dtable = table.grad_accumulator()) detail::embedding_backward(saved, n, d + column, width, dtable, C);
    });
  }
  return out;
}

// Fused as the composition dropout(add(embedding(...), first T rows of wpe)), with the same
// values, Rng draw and gradients, but one [B, T, C] tensor instead of three.
Tensor token_position_embedding(Graph& g, const Tensor& wte, const Tensor& wpe, const int32_t* ids, int64_t B,
                                int64_t T, float dropout_p, Rng& rng, bool training) {
  GPT_CHECK(wte.shape.rank == 2 && wpe.shape.rank == 2 && wte.shape[1] == wpe.shape[1],
            "embedding tables " + wte.shape.str() + " and " + wpe.shape.str() + " do not match");
  GPT_CHECK(T >= 1 && T <= wpe.shape[0],
            "sequence length " + std::to_string(T) + " outside [1, " + std::to_string(wpe.shape[0]) + "]");
  const int64_t V = wte.shape[0], C = wte.shape[1], n = B * T;
  check_ids(ids, n, V);
  const detail::DropoutMask mask = detail::DropoutMask::make(dropout_p, rng, training);
  Tensor out = g.make(Shape{B, T, C}, wte.requires_grad() || wpe.requires_grad());
#pragma omp parallel for schedule(static) if (n * C > kParallelMinElementwise)
  for (int64_t i = 0; i < n; ++i) {
    const float* token = wte.data + static_cast<int64_t>(ids[i]) * C;
    const float* position = wpe.data + (i % T) * C;
    float* row = out.data + i * C;
    for (int64_t j = 0; j < C; ++j) row[j] = token[j] + position[j];
    mask.apply_range(i * C, row, row, C);
  }
  if (out.requires_grad()) {
    const int32_t* saved = save_ids(g, ids, n);
    g.record(out, [=] {
      float* d = out.grad();  // consumed only here: the mask is applied in place
      mask.apply_in_place(d, n * C);
      if (float* dpos = wpe.grad_accumulator()) accumulate_column_sums(d, B, T * C, dpos);
      if (float* dtok = wte.grad_accumulator()) detail::embedding_backward(saved, n, d, C, dtok, C);
    });
  }
  return out;
}

}  // namespace gpt
