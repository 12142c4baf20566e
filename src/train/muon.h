// Muon (Jordan et al. 2024, "Muon: An optimizer for hidden layers"; modded-nanogpt's
// train_gpt.py): the 2-D weights inside the transformer blocks step by the orthogonalised
// Nesterov momentum of their gradient; every other parameter (embeddings, lm_head, norms,
// biases) steps by AdamW. Newton-Schulz's products run on our GEMM with the run's dtype (float32,
// or bfloat16 inputs with float32 sums, as the speedrun's run in bfloat16), so the step has the
// same bits on any thread count. The matrices are independent: when there are at least as many as
// threads, the threads share them out, a whole matrix each with single-threaded products (a small
// model's matrices are too small for one matrix's products to keep two threads busy); otherwise
// each matrix's products use every thread. It does not shard: each matrix needs its whole gradient
// (zero_stage 0 only).
#pragma once

#include <cstdint>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/param_store.h"
#include "kernels/dtype.h"
#include "train/optimizer.h"

namespace gpt {

// Whether Muon updates a parameter: the rule is "a matrix inside a block" (rank 2, name under
// "transformer.h."), so c_attn, attn.c_proj, c_fc, mlp.c_proj and any later block matrix qualify,
// and embeddings, lm_head, norms and biases do not.
bool updated_by_muon(const ParamStore::Slot& slot);

// modded-nanogpt's zeropower_via_newtonschulz5: X = G / (||G||_F + 1e-7) (transposed so that
// rows <= cols), then `steps` times A = X X^T, B = b A + (c A) A, X = a X + B X with the quintic
// (a, b, c) = (3.4445, -4.7750, 2.0315), which pushes every singular value of X into about
// [0.68, 1.2] fast rather than exactly to 1. Scratch is allocated once, for the largest matrix.
class NewtonSchulz {
 public:
  static constexpr float kA = 3.4445f, kB = -4.7750f, kC = 2.0315f;

  NewtonSchulz() = default;
  // Room for matrices of up to `max_floats` elements whose shorter side is at most `max_side`.
  NewtonSchulz(int64_t max_floats, int64_t max_side);
  // g [rows, cols] replaced by its orthogonalisation; `products` is the GEMM's input dtype.
  void orthogonalize(float* g, int64_t rows, int64_t cols, int steps = 5, Dtype products = Dtype::float32);

 private:
  AlignedBuffer<float> x_, bx_;  // [r, c] with r <= c: X and B X
  AlignedBuffer<float> a_, aa_;  // [r, r]: A and c A, then B
};

// Muon's step on a matrix W [rows, cols] with gradient G and momentum buffer M:
//   M = momentum M + G;  U = G + momentum M (Nesterov);  W -= lr sqrt(max(1, rows/cols)) NS5(U).
// The shape factor is modded-nanogpt's: NS5(U) has singular values near 1, so an RMS near
// 1/sqrt(max(rows, cols)), and the factor makes that 1/sqrt(cols) (1/sqrt(fan-in) for a Linear's
// [out, in] weight) for tall and wide matrices alike; the speedrun's tuned muon_lr (0.02-0.05)
// carries over with it. Muon's matrices have their own decoupled weight decay, relative to Muon's
// rate (W *= 1 - rate * muon_weight_decay before the update, as the speedrun's later records):
// weight_decay's AdamW-sized value would decay 20x harder at muon_lr. The learning rate follows
// the config's schedule: step(lr) uses rate = muon_lr * lr / learning_rate.
// State: AdamW's exp_avg, exp_avg_sq (zero on Muon's matrices) and momentum_buffer (zero elsewhere).
struct MuonSettings {
  double lr = 0.02;                 // muon_lr
  double momentum = 0.95;           // muon_momentum
  double schedule_peak = 1e-3;      // learning_rate: step(lr)'s lr / schedule_peak scales lr above
  AdamWSettings adamw;              // for every other parameter, at step(lr)'s lr
  Dtype products = Dtype::float32;  // Newton-Schulz's products: the run's dtype
  double weight_decay = 0;          // muon_weight_decay
};
class Muon final : public Optimizer {
 public:
  Muon(ParamStore& params, MuonSettings settings, StoreRange shard);
  const char* name() const override { return "muon"; }
  void step(double lr) override;
  std::vector<NamedBuffer> state() override;

 private:
  // One matrix's work space: U, then its orthogonalisation.
  struct Workspace {
    AlignedBuffer<float> update;  // the largest matrix's U
    NewtonSchulz newton_schulz;
  };
  struct Matrix {
    int64_t begin, rows, cols;  // in the store
  };
  void step_matrix(const Matrix& matrix, double rate, Workspace& workspace);

  MuonSettings settings_;
  AdamW adamw_;
  AlignedBuffer<float> momentum_;      // element k is the store's float shard().begin + k
  std::vector<Matrix> matrices_;       // Muon's matrices inside the shard
  std::vector<Workspace> workspaces_;  // one per thread sharing the matrices out, else one
};

}  // namespace gpt
