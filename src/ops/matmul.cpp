// matmul: (batched) matrix product with optional transposed operands, on the gemm kernel.
#include "kernels/gemm.h"
#include "ops/ops.h"

namespace gpt {

namespace {

struct MatmulDims {
  int64_t batch, M, N, K;
  bool b_shared;  // b is rank 2 and used by every batch
};

MatmulDims matmul_dims(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  GPT_CHECK(a.shape.rank >= 2 && b.shape.rank >= 2, "matmul needs rank >= 2: " + a.shape.str() + " " + b.shape.str());
  MatmulDims d{};
  d.M = trans_a ? a.shape[-1] : a.shape[-2];
  d.K = trans_a ? a.shape[-2] : a.shape[-1];
  const int64_t kb = trans_b ? b.shape[-1] : b.shape[-2];
  d.N = trans_b ? b.shape[-2] : b.shape[-1];
  GPT_CHECK(d.K == kb, "matmul inner dimensions differ: " + a.shape.str() + " " + b.shape.str());
  d.batch = a.numel() / (d.M * d.K);
  d.b_shared = b.shape.rank == 2;
  if (!d.b_shared) {
    GPT_CHECK(b.shape.rank == a.shape.rank, "matmul batch ranks differ");
    for (int i = 0; i < a.shape.rank - 2; ++i)
      GPT_CHECK(a.shape.dims[i] == b.shape.dims[i], "matmul batch dims differ");
  }
  return d;
}

void matmul_forward(const MatmulDims& d, bool ta, bool tb, const float* a, const float* b, float* c) {
  const int64_t lda = ta ? d.M : d.K, ldb = tb ? d.K : d.N;
  for (int64_t i = 0; i < d.batch; ++i) {
    gemm(ta, tb, d.M, d.N, d.K, a + i * d.M * d.K, lda, b + (d.b_shared ? 0 : i * d.K * d.N), ldb, c + i * d.M * d.N,
         d.N, false);
  }
}

// Accumulates dA and/or dB (either may be null) from dC; see the derivation in the comments.
void matmul_backward(const MatmulDims& d, bool ta, bool tb, const float* a, const float* b, const float* dc, float* da,
                     float* db) {
  const int64_t lda = ta ? d.M : d.K, ldb = tb ? d.K : d.N;
  for (int64_t i = 0; i < d.batch; ++i) {
    const float* ai = a + i * d.M * d.K;
    const float* bi = b + (d.b_shared ? 0 : i * d.K * d.N);
    const float* dci = dc + i * d.M * d.N;
    if (da) {
      float* dai = da + i * d.M * d.K;
      if (!ta)
        gemm(false, !tb, d.M, d.K, d.N, dci, d.N, bi, ldb, dai, lda, true);  // dA = dC op(B)^T
      else
        gemm(tb, true, d.K, d.M, d.N, bi, ldb, dci, d.N, dai, lda, true);  // dA^T = op(B) dC^T
    }
    if (db) {
      float* dbi = db + (d.b_shared ? 0 : i * d.K * d.N);
      if (!tb)
        gemm(!ta, false, d.K, d.N, d.M, ai, lda, dci, d.N, dbi, ldb, true);  // dB = op(A)^T dC
      else
        gemm(true, ta, d.N, d.K, d.M, dci, d.N, ai, lda, dbi, ldb, true);  // dB^T = dC^T op(A)
    }
  }
}

}  // namespace

Tensor matmul(Graph& g, const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  const MatmulDims d = matmul_dims(a, b, trans_a, trans_b);
  Shape out_shape = a.shape;
  out_shape.dims[out_shape.rank - 2] = d.M;
  out_shape.dims[out_shape.rank - 1] = d.N;
  Tensor out = g.make(out_shape, detail::any_grad(a, b));
  matmul_forward(d, trans_a, trans_b, a.data, b.data, out.data);
  if (out.requires_grad())
    g.record(out, [=] {
      matmul_backward(d, trans_a, trans_b, a.data, b.data, out.grad(), a.grad_accumulator(), b.grad_accumulator());
    });
  return out;
}

}  // namespace gpt
