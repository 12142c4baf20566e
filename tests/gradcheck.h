// Finite-difference gradient check shared by every op test.
// The op's output is reduced to L = sum_i out_i * w_i with fixed random w, so every output element
// is checked with its own weight. The analytic gradient comes from our backward; the numeric one
// from central differences of L evaluated in double precision from float forwards.
//
// Tolerance, and why: with step h = 1e-2 the central difference has truncation error O(h^2 f''')
// ~1e-4, and float32 forward round-off (~6e-8 relative per element, summed over n outputs) adds
// about 1e-7 * sqrt(n) * |out| / h ~ 1e-4 for our sizes. So we accept
//   |analytic - numeric| <= 2e-3 + 1e-2 * |numeric|,
// 20x above those errors yet far below the error of a wrong gradient (a missing term, a wrong
// scale or transpose is O(|grad|)); GradcheckCatchesWrongGradient proves the check can fail.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/rng.h"

namespace gpt::testing {

// A tensor that owns its data and gradient (test inputs).
struct OwnedTensor {
  std::vector<float> data, grad;
  Shape shape;
  GradSlot slot;  // fixed: points at `grad`
  OwnedTensor(Shape s, Rng& rng, float stddev = 1.0f) : data(s.numel()), grad(s.numel(), 0.0f), shape(s) {
    for (auto& v : data) v = static_cast<float>(rng.normal()) * stddev;
  }
  Tensor view() {
    slot = GradSlot{grad.data(), grad.size(), nullptr};
    return Tensor{data.data(), &slot, shape};
  }
  Tensor view_no_grad() { return Tensor{data.data(), nullptr, shape}; }
};

using OpFn = std::function<Tensor(Graph&, const std::vector<Tensor>&)>;

struct GradcheckResult {
  bool ok = true;
  double worst_excess = 0.0;  // largest error minus its tolerance (<= 0 when ok)
  std::string where;
};

inline GradcheckResult gradcheck(const OpFn& op, std::vector<OwnedTensor>& inputs, uint64_t seed = 99, double h = 1e-2,
                                 double atol = 2e-3, double rtol = 1e-2) {
  Arena arena;
  Graph g(arena);
  for (auto& in : inputs) std::fill(in.grad.begin(), in.grad.end(), 0.0f);

  std::vector<Tensor> views;
  for (auto& in : inputs) views.push_back(in.view());
  Tensor out = op(g, views);
  Rng rng(seed);
  std::vector<float> w(out.numel());
  for (auto& v : w) v = static_cast<float>(rng.normal());
  // Seed out.grad with w: dL/dout = w.
  EXPECT_TRUE(out.requires_grad()) << "op output has no gradient";
  if (!out.requires_grad()) return {false, 0, "no grad"};
  float* seed_grad = out.grad_accumulator();
  for (int64_t i = 0; i < out.numel(); ++i) seed_grad[i] = w[i];
  g.run_backward();

  auto loss_at = [&]() {
    Arena a2;
    Graph g2(a2);
    std::vector<Tensor> v2;
    for (auto& in : inputs) v2.push_back(in.view_no_grad());
    NoGradGuard no_grad(g2);
    Tensor o = op(g2, v2);
    double L = 0.0;
    for (int64_t i = 0; i < o.numel(); ++i) L += static_cast<double>(o.data[i]) * w[i];
    return L;
  };

  GradcheckResult result;
  result.worst_excess = -1e30;
  for (std::size_t t = 0; t < inputs.size(); ++t) {
    auto& in = inputs[t];
    for (std::size_t e = 0; e < in.data.size(); ++e) {
      const float saved = in.data[e];
      in.data[e] = static_cast<float>(saved + h);
      const double up = loss_at();
      in.data[e] = static_cast<float>(saved - h);
      const double down = loss_at();
      in.data[e] = saved;
      const double numeric = (up - down) / (2 * h);
      const double analytic = in.grad[e];
      const double excess = std::fabs(analytic - numeric) - (atol + rtol * std::fabs(numeric));
      if (excess > result.worst_excess) {
        result.worst_excess = excess;
        if (excess > 0) {
          result.ok = false;
          result.where = "input " + std::to_string(t) + " element " + std::to_string(e) + ": analytic " +
                         std::to_string(analytic) + " numeric " + std::to_string(numeric);
        }
      }
    }
  }
  return result;
}

}  // namespace gpt::testing
