// embedding: gathers rows of a table by id; backward scatter-adds the output gradient into the
// picked rows (parallel over column blocks, rows in id order, so repeated ids sum deterministically).
#include <algorithm>
#include <cstring>
#include <string>

#include "ops/ops.h"

namespace gpt {

namespace {

void embedding_backward(const int32_t* ids, int64_t n, const float* dout, float* dtable, int64_t C) {
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (C + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (n * C > (1 << 16) && blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t j0 = b * kBlock, j1 = std::min(C, j0 + kBlock);
    for (int64_t i = 0; i < n; ++i) {
      float* row = dtable + static_cast<int64_t>(ids[i]) * C;
      const float* d = dout + i * C;
      for (int64_t j = j0; j < j1; ++j) row[j] += d[j];
    }
  }
}

}  // namespace

Tensor embedding(Graph& g, const Tensor& table, const int32_t* ids, Shape ids_shape) {
  GPT_CHECK(table.shape.rank == 2, "embedding table must be [V, C]");
  GPT_CHECK(ids_shape.rank < Shape::kMaxRank, "ids rank too high");
  const int64_t V = table.shape[0], C = table.shape[1], n = ids_shape.numel();
  for (int64_t i = 0; i < n; ++i)
    GPT_CHECK(ids[i] >= 0 && ids[i] < V, "embedding id " + std::to_string(ids[i]) + " outside [0, " + std::to_string(V) + ")");
  Shape out_shape = ids_shape;
  out_shape.dims[out_shape.rank++] = C;
  Tensor out = g.make(out_shape, table.requires_grad());
  for (int64_t i = 0; i < n; ++i) std::memcpy(out.data + i * C, table.data + static_cast<int64_t>(ids[i]) * C, C * sizeof(float));
  if (out.requires_grad()) {
    // The caller's ids may not outlive the step; keep a copy in the arena for backward.
    int32_t* saved = static_cast<int32_t*>(g.arena().allocate_bytes(n * sizeof(int32_t)));
    std::memcpy(saved, ids, n * sizeof(int32_t));
    g.record(out, [=] { embedding_backward(saved, n, out.grad(), table.grad_accumulator(), C); });
  }
  return out;
}

}  // namespace gpt
