#include "train/muon.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <string_view>

#include "core/check.h"
#include "core/first_failure.h"
#include "kernels/gemm.h"
#include "kernels/parallel.h"

namespace gpt {

namespace {

// AdamW's share of a Muon run: every parameter Muon leaves.
bool updated_by_adamw_beside_muon(const ParamStore::Slot& slot) { return !updated_by_muon(slot); }

// The matrix's rows and columns as Newton-Schulz sees them: the shorter side first.
struct Sides {
  int64_t shorter, longer;
};
Sides sides(int64_t rows, int64_t cols) { return {std::min(rows, cols), std::max(rows, cols)}; }

}  // namespace

bool updated_by_muon(const ParamStore::Slot& slot) {
  return slot.shape.rank == 2 && std::string_view(slot.name).starts_with("transformer.h.");
}

NewtonSchulz::NewtonSchulz(int64_t max_floats, int64_t max_side)
    : x_(static_cast<std::size_t>(max_floats)),
      bx_(static_cast<std::size_t>(max_floats)),
      a_(static_cast<std::size_t>(max_side * max_side)),
      aa_(static_cast<std::size_t>(max_side * max_side)) {}

void NewtonSchulz::orthogonalize(float* g, int64_t rows, int64_t cols, int steps, Dtype products) {
  const bool tall = rows > cols;
  const auto [r, c] = sides(rows, cols);  // X [r, c] = G or G^T
  GPT_CHECK(static_cast<std::size_t>(r * c) <= x_.size() && static_cast<std::size_t>(r * r) <= a_.size(),
            "Newton-Schulz scratch too small");
  // The Frobenius norm summed in double, in order: the same bits on any thread count.
  double squares = 0.0;
  for (int64_t k = 0; k < rows * cols; ++k) squares += static_cast<double>(g[k]) * g[k];
  const float denominator = static_cast<float>(std::sqrt(squares)) + 1e-7f;
  float *X = x_.data(), *BX = bx_.data(), *A = a_.data(), *B = aa_.data();
#pragma omp parallel for schedule(static) if (r * c > kParallelMinElementwise)
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) X[i * c + j] = g[tall ? j * cols + i : i * cols + j] / denominator;
  for (int s = 0; s < steps; ++s) {
    gemm(false, true, r, r, c, X, c, X, c, A, r, false, products);  // A = X X^T
    // B = b A + (c A) A, in the speedrun's order of operations (its `b * A + c * A @ A`).
    for (int64_t k = 0; k < r * r; ++k) B[k] = kC * A[k];
    gemm(false, false, r, r, r, B, r, A, r, BX, r, false, products);
    for (int64_t k = 0; k < r * r; ++k) B[k] = kB * A[k] + BX[k];
    gemm(false, false, r, c, r, B, r, X, c, BX, c, false, products);  // B X
#pragma omp parallel for schedule(static) if (r * c > kParallelMinElementwise)
    for (int64_t k = 0; k < r * c; ++k) X[k] = kA * X[k] + BX[k];
  }
#pragma omp parallel for schedule(static) if (r * c > kParallelMinElementwise)
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) g[tall ? j * cols + i : i * cols + j] = X[i * c + j];
}

Muon::Muon(ParamStore& params, MuonSettings settings, StoreRange shard)
    : Optimizer(params, shard),
      settings_(settings),
      adamw_(params, settings.adamw, shard, &updated_by_adamw_beside_muon),
      momentum_(state_buffer(shard, "Muon")) {
  int64_t max_floats = 0, max_side = 0;
  for (const ParamStore::Slot& slot : params.slots()) {
    if (!updated_by_muon(slot)) continue;
    const auto begin = static_cast<int64_t>(slot.offset), end = begin + slot.shape.numel();
    const bool inside = begin >= shard.begin && end <= shard.end;
    GPT_CHECK(end <= shard.begin || begin >= shard.end || inside,
              "Muon's matrix " + slot.name + " cut by the optimizer's shard");
    if (inside) matrices_.push_back({begin, slot.shape.dims[0], slot.shape.dims[1]});
    max_floats = std::max(max_floats, slot.shape.numel());
    max_side = std::max(max_side, sides(slot.shape.dims[0], slot.shape.dims[1]).shorter);
  }
  // A workspace per thread when the threads share the matrices out (see step), else one.
  const auto threads = static_cast<std::size_t>(std::max(1, omp_get_max_threads()));
  workspaces_.resize(matrices_.size() >= threads ? threads : 1);
  for (Workspace& workspace : workspaces_)
    workspace = {AlignedBuffer<float>(static_cast<std::size_t>(max_floats)), NewtonSchulz(max_floats, max_side)};
}

std::vector<NamedBuffer> Muon::state() {
  std::vector<NamedBuffer> buffers = adamw_.state();
  buffers.push_back({"momentum_buffer", momentum_.data()});
  return buffers;
}

void Muon::step(double lr) {
  ++step_;
  adamw_.set_step_count(step_ - 1);  // its bias corrections count our steps (a resume sets only ours)
  adamw_.step(lr);
  const double rate = settings_.lr * lr / settings_.schedule_peak;
  const auto count = static_cast<int64_t>(matrices_.size());
  const auto threads = static_cast<int>(workspaces_.size());
  // Any thread may take any matrix: a matrix's bits do not depend on which thread steps it. With
  // one workspace the loop runs on this thread and each matrix's products use every thread.
  FirstFailure failure;  // a matrix's products may grow a thread's GEMM scratch
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
  for (int64_t m = 0; m < count; ++m)
    failure.capture([&] { step_matrix(matrices_[m], rate, workspaces_[omp_get_thread_num()]); });
  failure.rethrow();
}

void Muon::step_matrix(const Matrix& matrix, double rate, Workspace& workspace) {
  const auto [begin, rows, cols] = matrix;
  const int64_t n = rows * cols;
  const auto momentum = static_cast<float>(settings_.momentum);
  float* p = params_.data() + begin;
  const float* g = params_.grad() + begin;
  float* buffer = momentum_.data() + (begin - shard_.begin);
  float* u = workspace.update.data();
#pragma omp parallel for schedule(static) if (n > kParallelMinElementwise)
  for (int64_t k = 0; k < n; ++k) {
    buffer[k] = buffer[k] * momentum + g[k];
    u[k] = g[k] + momentum * buffer[k];
  }
  workspace.newton_schulz.orthogonalize(u, rows, cols, 5, settings_.products);
  // The scale in double, applied in float, as PyTorch applies a Python float.
  const auto scale = static_cast<float>(rate * std::sqrt(std::max(1.0, static_cast<double>(rows) / cols)));
  const auto decay = static_cast<float>(1.0 - rate * settings_.weight_decay);
#pragma omp parallel for schedule(static) if (n > kParallelMinElementwise)
  for (int64_t k = 0; k < n; ++k) p[k] = p[k] * decay - scale * u[k];
}

}  // namespace gpt
