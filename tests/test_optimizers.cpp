// The optimizer interface: Lion against a direct transcription of its update rule, Muon against a
// plain Newton-Schulz and PyTorch's steps (tools/muon_reference.py), state by name, and
// checkpoints that save and restore any optimizer's state (and still read the AdamW-only train
// states written before optimizers had names).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/atomic_file.h"
#include "core/check.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "same_bits.h"
#include "thread_count.h"
#include "train/muon.h"
#include "train/optimizer.h"
#include "train/trainer.h"
#include "train/weight_average.h"
#include "training_fixtures.h"

namespace gpt {
namespace {

using namespace gpt::testing;

// Lion as the paper's pseudocode reads (Chen et al. 2023, Program 1), element by element, with
// decoupled weight decay on rank >= 2 parameters only (nanoGPT's groups). Scalars such as
// 1 - beta are formed in double and applied in float, as PyTorch does with Python floats.
void lion_reference(std::vector<float>& p, std::vector<float>& m, const std::vector<float>& g, bool decays, double lr,
                    double beta1, double beta2, double wd) {
  const auto b1 = static_cast<float>(beta1), c1 = static_cast<float>(1.0 - beta1);
  const auto b2 = static_cast<float>(beta2), c2 = static_cast<float>(1.0 - beta2);
  const auto rate = static_cast<float>(lr), decay = static_cast<float>(1.0 - lr * wd);
  for (std::size_t k = 0; k < p.size(); ++k) {
    const float update = m[k] * b1 + g[k] * c1;
    const float sign = update > 0.0f ? 1.0f : update < 0.0f ? -1.0f : 0.0f;
    if (decays) p[k] = p[k] * decay;
    p[k] = p[k] - rate * sign;
    m[k] = m[k] * b2 + g[k] * c2;
  }
}

// Four steps of `lion` (over all of `store`) against lion_reference with these settings; a zero
// gradient at step 1 makes the update's sign come from the momentum alone.
void expect_lion_steps(Optimizer& lion, ParamStore& store, double beta1, double beta2, double weight_decay) {
  std::vector<std::vector<float>> p(2), m(2);
  for (int i = 0; i < 2; ++i) {
    const Tensor t = store.tensor(i);
    p[i].assign(t.data, t.data + t.numel());
    m[i].assign(p[i].size(), 0.0f);
  }
  Rng rng(9);
  for (int step = 0; step < 4; ++step) {
    const double lr = 0.01 * (step + 1);
    for (int i = 0; i < 2; ++i) {
      const Tensor t = store.tensor(i);
      std::vector<float> g(p[i].size());
      for (std::size_t k = 0; k < g.size(); ++k) g[k] = t.grad()[k] = static_cast<float>(rng.normal());
      if (step == 1) g[0] = t.grad()[0] = 0.0f;
      lion_reference(p[i], m[i], g, store.slot(i).shape.rank >= 2, lr, beta1, beta2, weight_decay);
    }
    lion.step(lr);
    for (int i = 0; i < 2; ++i) {
      const Tensor t = store.tensor(i);
      ASSERT_EQ(std::vector<float>(t.data, t.data + t.numel()), p[i]) << store.slot(i).name << " after step " << step;
      ASSERT_EQ(std::vector<float>(lion.state()[0].data + store.slot(i).offset,
                                   lion.state()[0].data + store.slot(i).offset + t.numel()),
                m[i]);
    }
  }
  EXPECT_EQ(lion.step_count(), 4);
}

void add_lion_test_parameters(ParamStore& store) {
  store.add("matrix", Shape{70, 300}, Init::normal(0.5));  // large enough for the parallel path
  store.add("vector", Shape{33}, Init::normal(0.5));
  store.finalize();
  store.initialize(1);
}

TEST(Lion, MatchesTheUpdateRuleStepByStep) {
  ParamStore store;
  add_lion_test_parameters(store);
  const LionSettings settings{0.9, 0.99, 0.5};
  Lion lion(store, settings, {0, static_cast<int64_t>(store.padded_floats())});
  EXPECT_STREQ(lion.name(), "lion");
  ASSERT_EQ(lion.state().size(), 1u);
  EXPECT_EQ(lion.state()[0].name, "exp_avg");
  expect_lion_steps(lion, store, 0.9, 0.99, 0.5);
}

// lion_beta1 and lion_beta2 reach Lion, not AdamW's beta1 and beta2 (set apart here).
TEST(Optimizers, LionFromTheConfigTakesItsOwnBetas) {
  ParamStore store;
  add_lion_test_parameters(store);
  TrainConfig c;
  c.optimizer = OptimizerKind::lion;
  c.lion_beta1 = 0.6;
  c.lion_beta2 = 0.8;
  c.beta1 = 0.95;
  c.beta2 = 0.999;
  c.weight_decay = 0.3;
  const auto lion = make_optimizer(c, store);
  expect_lion_steps(*lion, store, 0.6, 0.8, 0.3);
}

TEST(Optimizers, MadeFromTheConfigWithTheirStateByName) {
  ParamStore store;
  store.add("w", Shape{4, 4}, Init::normal(0.1));
  store.finalize();
  TrainConfig c;
  auto adamw = make_optimizer(c, store);
  EXPECT_STREQ(adamw->name(), "adamw");
  ASSERT_EQ(adamw->state().size(), 2u);
  EXPECT_EQ(adamw->state()[0].name, "exp_avg");
  EXPECT_EQ(adamw->state()[1].name, "exp_avg_sq");
  c.optimizer = OptimizerKind::lion;
  EXPECT_STREQ(make_optimizer(c, store)->name(), "lion");
}

// ---- Muon ---------------------------------------------------------------------------------------

std::vector<float> normal_floats(Rng& rng, int64_t n, double scale = 1.0) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = static_cast<float>(scale * rng.normal());
  return v;
}

// Newton-Schulz written out in double with plain loops, for one [rows, cols] matrix.
std::vector<double> newton_schulz_reference(const std::vector<float>& g, int64_t rows, int64_t cols) {
  const bool tall = rows > cols;
  const int64_t r = std::min(rows, cols), c = std::max(rows, cols);
  double norm = 0;
  for (float x : g) norm += static_cast<double>(x) * x;
  norm = std::sqrt(norm);
  std::vector<double> X(static_cast<std::size_t>(r * c)), A(static_cast<std::size_t>(r * r)), B(A.size()), next(X);
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) X[i * c + j] = g[tall ? j * cols + i : i * cols + j] / (norm + 1e-7);
  const double a = NewtonSchulz::kA, b = NewtonSchulz::kB, cc = NewtonSchulz::kC;
  for (int step = 0; step < 5; ++step) {
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < r; ++j) {
        A[i * r + j] = 0;
        for (int64_t k = 0; k < c; ++k) A[i * r + j] += X[i * c + k] * X[j * c + k];
      }
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < r; ++j) {
        double aa = 0;
        for (int64_t k = 0; k < r; ++k) aa += A[i * r + k] * A[k * r + j];
        B[i * r + j] = b * A[i * r + j] + cc * aa;
      }
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) {
        double bx = 0;
        for (int64_t k = 0; k < r; ++k) bx += B[i * r + k] * X[k * c + j];
        next[i * c + j] = a * X[i * c + j] + bx;
      }
    X = next;
  }
  std::vector<double> out(X.size());
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) out[tall ? j * cols + i : i * cols + j] = X[i * c + j];
  return out;
}

// The eigenvalues of a symmetric n x n matrix (cyclic Jacobi rotations, in double).
std::vector<double> symmetric_eigenvalues(std::vector<double> a, int64_t n) {
  for (int sweep = 0; sweep < 50; ++sweep) {
    double off = 0;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = 0; q < n; ++q) off += p == q ? 0 : a[p * n + q] * a[p * n + q];
    if (off < 1e-24) break;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        if (a[p * n + q] == 0) continue;
        const double theta = (a[q * n + q] - a[p * n + p]) / (2 * a[p * n + q]);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
        const double cs = 1 / std::sqrt(t * t + 1), sn = t * cs;
        for (int64_t k = 0; k < n; ++k) {
          const double kp = a[k * n + p], kq = a[k * n + q];
          a[k * n + p] = cs * kp - sn * kq;
          a[k * n + q] = sn * kp + cs * kq;
        }
        for (int64_t k = 0; k < n; ++k) {
          const double pk = a[p * n + k], qk = a[q * n + k];
          a[p * n + k] = cs * pk - sn * qk;
          a[q * n + k] = sn * pk + cs * qk;
        }
      }
  }
  std::vector<double> eigenvalues;
  for (int64_t i = 0; i < n; ++i) eigenvalues.push_back(a[i * n + i]);
  return eigenvalues;
}

// The singular values of a [rows, cols] matrix: square roots of the eigenvalues of its Gram matrix.
std::vector<double> singular_values(const std::vector<float>& x, int64_t rows, int64_t cols) {
  const int64_t n = std::min(rows, cols);
  std::vector<double> gram(static_cast<std::size_t>(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < std::max(rows, cols); ++k)
        gram[i * n + j] +=
            rows <= cols ? double(x[i * cols + k]) * x[j * cols + k] : double(x[k * cols + i]) * x[k * cols + j];
  std::vector<double> values = symmetric_eigenvalues(gram, n);
  for (double& v : values) v = std::sqrt(std::max(0.0, v));
  return values;
}

TEST(NewtonSchulz, MatchesAPlainReferenceAndPushesSingularValuesNearOne) {
  Rng rng(21);
  // Wide, tall (orthogonalised transposed) and square; non-square Gaussian matrices are well
  // conditioned, so five iterations bring every singular value into the quintic's band.
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{12, 40}, {40, 12}, {16, 16}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols));
    const std::vector<float> g = normal_floats(rng, rows * cols);
    std::vector<float> x = g;
    NewtonSchulz(rows * cols, std::min(rows, cols)).orthogonalize(x.data(), rows, cols);
    const std::vector<double> reference = newton_schulz_reference(g, rows, cols);
    double worst = 0;
    for (std::size_t k = 0; k < x.size(); ++k) worst = std::max(worst, std::fabs(x[k] - reference[k]));
    EXPECT_LT(worst, 2e-6);      // float against double: a few float roundings, amplified <= 3.4x an iteration
    if (rows == cols) continue;  // a square Gaussian matrix's smallest singular values are too small
    // Once a singular value s is in the quintic p's attracting interval, p(s) is in p's range
    // there, [0.681, 1.2025] (p's local minimum at s = 1.050, maximum at s = 0.554): near 1,
    // not at 1, as the speedrun's coefficients intend.
    for (double sigma : singular_values(x, rows, cols)) {
      EXPECT_GT(sigma, 0.68);
      EXPECT_LT(sigma, 1.21);
    }
    const std::vector<double> before = singular_values(g, rows, cols);  // far from orthogonal before
    EXPECT_GT(*std::max_element(before.begin(), before.end()) / *std::min_element(before.begin(), before.end()), 2.0);
  }
}

// Under dtype bfloat16 the products round their inputs to bfloat16 (sums stay float32), as the
// speedrun's bfloat16 Newton-Schulz does: up to 2^-9 of each value per product, which the quintic
// (slope up to a = 3.4 at small singular values) amplifies over five iterations to about 2% of the
// result in Frobenius norm (measured: 2.2% on both shapes). The bound leaves 2x: the direction is
// what Muon uses, and every singular value still lands in the quintic's band. And not float32's
// bits: the rounding is really there.
TEST(NewtonSchulz, BfloatProductsStayNearTheReferenceAndInTheBand) {
  Rng rng(22);
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{12, 40}, {40, 12}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols));
    const std::vector<float> g = normal_floats(rng, rows * cols);
    std::vector<float> x32 = g, x16 = g;
    NewtonSchulz newton_schulz(rows * cols, std::min(rows, cols));
    newton_schulz.orthogonalize(x32.data(), rows, cols);
    newton_schulz.orthogonalize(x16.data(), rows, cols, 5, Dtype::bfloat16);
    const std::vector<double> reference = newton_schulz_reference(g, rows, cols);
    double error = 0, norm = 0;
    for (std::size_t k = 0; k < x16.size(); ++k) {
      error += (x16[k] - reference[k]) * (x16[k] - reference[k]);
      norm += reference[k] * reference[k];
    }
    EXPECT_LT(std::sqrt(error / norm), 0.045);
    EXPECT_FALSE(same_bits(x16, x32));
    for (double sigma : singular_values(x16, rows, cols)) {
      EXPECT_GT(sigma, 0.67);
      EXPECT_LT(sigma, 1.22);
    }
  }
}

// The steps of tools/muon_reference.py's PyTorch Muon (float32). Our GEMM sums each product in
// another order than PyTorch's BLAS, so Newton-Schulz's output differs by float roundings that
// its iterations amplify (each multiplies small singular directions by up to a = 3.4): measured
// up to 1.2e-6 of the output's largest element, bound 1e-5. The step adds that times lr to the
// weights, so they differ by about an ulp: bound 1e-6 of the largest weight (16 ulps of it). The
// momentum buffer has no products, and has PyTorch's bits exactly.
TEST(MuonReference, StepsAsPyTorchWithinRounding) {
  const char* root = std::getenv("GPT_SOURCE_DIR");
  const SafetensorsReader file =
      SafetensorsReader::open(std::string(root ? root : ".") + "/tests/data/muon_reference.safetensors");
  auto read = [&](const std::string& name) {
    const auto& dims = file.entries().at(name).shape;
    Shape shape;
    for (int64_t d : dims) shape.dims[shape.rank++] = d;
    std::vector<float> out(static_cast<std::size_t>(shape.numel()));
    file.read_into(name, shape, out.data());
    return std::pair{out, shape};
  };
  auto worst_relative = [](const float* ours, const std::vector<float>& theirs) {
    double worst = 0, largest = 0;
    for (std::size_t k = 0; k < theirs.size(); ++k) {
      worst = std::max(worst, std::fabs(double(ours[k]) - theirs[k]));
      largest = std::max(largest, std::fabs(double(theirs[k])));
    }
    return worst / largest;
  };
  ParamStore store;
  for (const auto& [name, entry] : file.entries())
    if (name.starts_with("param.")) store.add(name.substr(6), read(name).second);
  store.finalize();
  ASSERT_EQ(store.size(), 3);
  for (int i = 0; i < store.size(); ++i) {
    const ParamStore::Slot& slot = store.slot(i);
    ASSERT_TRUE(updated_by_muon(slot)) << slot.name;
    auto [p, shape] = read("param." + slot.name);
    std::copy(p.begin(), p.end(), store.tensor(i).data);
    auto [x, unused] = read("ns_in." + slot.name);
    NewtonSchulz(shape.numel(), std::min(shape.dims[0], shape.dims[1]))
        .orthogonalize(x.data(), shape.dims[0], shape.dims[1]);
    EXPECT_LT(worst_relative(x.data(), read("ns_out." + slot.name).first), 1e-5) << slot.name;
  }
  // muon_lr 0.04 at a schedule peak of 2e-3: step(lr) moves the matrices at 20 lr.
  const double momentum = std::stod(file.metadata("momentum"));
  const auto lrs = nlohmann::json::parse(file.metadata("lrs")).get<std::vector<double>>();
  Muon muon(store, MuonSettings{0.04, momentum, 2e-3, {}}, {0, static_cast<int64_t>(store.padded_floats())});
  for (std::size_t step = 0; step < lrs.size(); ++step) {
    const std::string tag = std::to_string(step) + ".";
    for (int i = 0; i < store.size(); ++i) {
      const std::vector<float> g = read("grad." + tag + store.slot(i).name).first;
      std::copy(g.begin(), g.end(), store.tensor(i).grad());
    }
    muon.step(lrs[step] / 20);
    for (int i = 0; i < store.size(); ++i) {
      const ParamStore::Slot& slot = store.slot(i);
      SCOPED_TRACE(slot.name + " after step " + std::to_string(step));
      const std::vector<float> after = read("after." + tag + slot.name).first;
      EXPECT_LT(worst_relative(store.tensor(i).data, after), 1e-6);
      EXPECT_TRUE(same_bits(muon.state()[2].data + slot.offset, read("momentum_buffer." + tag + slot.name).first.data(),
                            after.size()));
    }
  }
}

// A store as the model names its parameters: Muon's block matrices and AdamW's others.
void add_model_like_parameters(ParamStore& store, int64_t C, int64_t V) {
  store.add("transformer.wte.weight", Shape{V, C}, Init::normal(0.02));
  store.add("transformer.h.0.ln_1.weight", Shape{C}, Init::ones());
  store.add("transformer.h.0.attn.c_attn.weight", Shape{3 * C, C}, Init::normal(0.02));
  store.add("transformer.h.0.attn.c_attn.bias", Shape{3 * C}, Init::normal(0.02));
  store.add("transformer.h.0.mlp.c_proj.weight", Shape{C, 4 * C}, Init::normal(0.02));
  store.add("lm_head.weight", Shape{V, C}, Init::normal(0.02));
  store.finalize();
  store.initialize(3);
}

void fill_gradients(ParamStore& store, Rng& rng) {
  for (int i = 0; i < store.size(); ++i) {
    const std::vector<float> g = normal_floats(rng, store.slot(i).shape.numel(), 0.01);
    std::copy(g.begin(), g.end(), store.tensor(i).grad());
  }
}

TEST(Muon, UpdatesTheBlocksMatricesAndLeavesEveryOtherParameterToAdamW) {
  ParamStore a, b;
  add_model_like_parameters(a, 8, 16);
  add_model_like_parameters(b, 8, 16);
  const StoreRange whole{0, static_cast<int64_t>(a.padded_floats())};
  const AdamWSettings adamw_settings{0.9, 0.95, 1e-8, 0.1};
  Muon muon(a, MuonSettings{0.02, 0.95, 1e-3, adamw_settings}, whole);
  AdamW adamw(b, adamw_settings, whole);
  EXPECT_STREQ(muon.name(), "muon");
  ASSERT_EQ(muon.state().size(), 3u);
  EXPECT_EQ(muon.state()[0].name, "exp_avg");
  EXPECT_EQ(muon.state()[1].name, "exp_avg_sq");
  EXPECT_EQ(muon.state()[2].name, "momentum_buffer");
  Rng ra(4), rb(4);
  for (int step = 0; step < 3; ++step) {
    fill_gradients(a, ra);
    fill_gradients(b, rb);
    muon.step(1e-3 * (step + 1));
    adamw.step(1e-3 * (step + 1));
  }
  EXPECT_EQ(muon.step_count(), 3);
  for (int i = 0; i < a.size(); ++i) {
    const ParamStore::Slot& slot = a.slot(i);
    SCOPED_TRACE(slot.name);
    const bool matrix = slot.name.find(".h.0.") != std::string::npos && slot.shape.rank == 2;
    EXPECT_EQ(updated_by_muon(slot), matrix);
    const auto n = static_cast<std::size_t>(slot.shape.numel());
    const std::vector<float> zeros(n, 0.0f);
    if (!matrix) {
      EXPECT_TRUE(same_bits(a.tensor(i).data, b.tensor(i).data, n));
      EXPECT_TRUE(same_bits(muon.state()[0].data + slot.offset, adamw.state()[0].data + slot.offset, n));
      EXPECT_TRUE(same_bits(muon.state()[2].data + slot.offset, zeros.data(), n));
    } else {
      EXPECT_FALSE(same_bits(a.tensor(i).data, b.tensor(i).data, n));
      EXPECT_TRUE(same_bits(muon.state()[0].data + slot.offset, zeros.data(), n));
      EXPECT_FALSE(same_bits(muon.state()[2].data + slot.offset, zeros.data(), n));
    }
  }
}

// muon_weight_decay multiplies each Muon matrix by 1 - rate * wd before its update, rate being
// muon_lr scaled by the schedule: one step from the same weights and gradients differs from the
// undecayed step by rate * wd * W0 on Muon's matrices (within float rounding), and by nothing
// elsewhere (AdamW's weight_decay is the other parameters').
TEST(Muon, WeightDecayShrinksOnlyMuonsMatricesByTheScheduledRate) {
  ParamStore decayed, plain;
  add_model_like_parameters(decayed, 8, 16);
  add_model_like_parameters(plain, 8, 16);
  const std::vector<float> start(decayed.data(), decayed.data() + decayed.padded_floats());
  const StoreRange whole{0, static_cast<int64_t>(decayed.padded_floats())};
  const AdamWSettings adamw{0.9, 0.95, 1e-8, 0.1};
  MuonSettings settings{0.02, 0.95, 2e-3, adamw};
  Muon undecayed(plain, settings, whole);
  settings.weight_decay = 5.0;
  Muon muon(decayed, settings, whole);
  Rng ra(4), rb(4);
  fill_gradients(decayed, ra);
  fill_gradients(plain, rb);
  const double lr = 1e-3;  // half the peak: Muon's rate is 0.01
  muon.step(lr);
  undecayed.step(lr);
  const double shrink = 0.01 * 5.0;
  for (int i = 0; i < decayed.size(); ++i) {
    const ParamStore::Slot& slot = decayed.slot(i);
    SCOPED_TRACE(slot.name);
    const auto n = static_cast<std::size_t>(slot.shape.numel());
    if (!updated_by_muon(slot)) {
      EXPECT_TRUE(same_bits(decayed.tensor(i).data, plain.tensor(i).data, n));
      continue;
    }
    for (std::size_t k = 0; k < n; ++k) {
      const double w0 = start[slot.offset + k];
      ASSERT_NEAR(decayed.tensor(i).data[k] - plain.tensor(i).data[k], -shrink * w0, 1e-6 + 1e-5 * std::abs(w0)) << k;
    }
  }
}

// ema_decay's average after update n is d A + (1 - d) W with d = min(ema_decay, 1 - 1/n): the
// plain mean of the weights while n < 1 / (1 - ema_decay) (decay 0.75: the first four), then an
// exponential average. The weights themselves are the wrapped optimizer's, bit for bit.
TEST(WeightAverage, IsTheMeanOfTheWeightsUntilItsWindowIsFullThenDecays) {
  ParamStore averaged, bare;
  add_model_like_parameters(averaged, 8, 16);
  add_model_like_parameters(bare, 8, 16);
  const StoreRange whole{0, static_cast<int64_t>(averaged.padded_floats())};
  const AdamWSettings adamw{0.9, 0.95, 1e-8, 0.1};
  AveragedOptimizer optimizer(std::make_unique<AdamW>(averaged, adamw, whole), 0.75);
  AdamW reference(bare, adamw, whole);
  EXPECT_STREQ(optimizer.name(), "adamw");
  ASSERT_EQ(optimizer.state().size(), 3u);
  EXPECT_EQ(optimizer.state()[2].name, "ema");
  const auto n = static_cast<std::size_t>(averaged.padded_floats());
  std::vector<std::vector<double>> weights;
  Rng ra(5), rb(5);
  for (int step = 1; step <= 6; ++step) {
    fill_gradients(averaged, ra);
    fill_gradients(bare, rb);
    optimizer.step(1e-2);
    reference.step(1e-2);
    ASSERT_TRUE(same_bits(averaged.data(), bare.data(), n)) << step;
    weights.emplace_back(averaged.data(), averaged.data() + n);
    std::vector<double> expected(n, 0.0);
    for (std::size_t k = 0; k < n; ++k) {
      if (step <= 4) {
        for (const auto& w : weights) expected[k] += w[k] / step;
      } else {
        double mean = 0;
        for (int j = 0; j < 4; ++j) mean += weights[j][k] / 4;
        for (int j = 4; j < step; ++j) mean = 0.75 * mean + 0.25 * weights[j][k];
        expected[k] = mean;
      }
    }
    const float* average = optimizer.state()[2].data;
    for (std::size_t k = 0; k < n; ++k) ASSERT_NEAR(average[k], expected[k], 1e-6) << "step " << step << " float " << k;
  }
  EXPECT_EQ(optimizer.step_count(), 6);
  ParamStore copy;
  add_model_like_parameters(copy, 8, 16);
  optimizer.copy_average(copy);
  EXPECT_TRUE(same_bits(copy.data(), optimizer.state()[2].data, n));
}

// Two matrices: on 2 threads each takes one whole, on 3 each matrix's products use all three.
TEST(Muon, SameBitsOnOneTwoAndThreeThreadsInEachDtype) {
  for (const Dtype dtype : {Dtype::float32, Dtype::bfloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto run = [dtype] {
      ParamStore store;
      add_model_like_parameters(store, 136, 65);  // c_attn [408, 136], mlp.c_proj [136, 544]: parallel loops
      MuonSettings settings;
      settings.products = dtype;
      Muon muon(store, settings, {0, static_cast<int64_t>(store.padded_floats())});
      Rng rng(6);
      for (int step = 0; step < 3; ++step) {
        fill_gradients(store, rng);
        muon.step(1e-3);
      }
      std::vector<float> out(store.data(), store.data() + store.padded_floats());
      for (const NamedBuffer& buffer : muon.state())
        out.insert(out.end(), buffer.data, buffer.data + store.padded_floats());
      return out;
    };
    const std::vector<float> one = on_threads(1, run);
    EXPECT_TRUE(same_bits(one, on_threads(2, run)));
    EXPECT_TRUE(same_bits(one, on_threads(3, run)));
  }
}

// The optimizer keys reach the optimizers: three steps of make_optimizer(config) give the bits of
// the optimizer built with those settings by hand, and not those of the defaults.
TEST(Optimizers, TheirConfigKeysReachThem) {
  auto weights_after_steps = [](auto make) {
    ParamStore store;
    add_model_like_parameters(store, 8, 16);
    const std::unique_ptr<Optimizer> optimizer = make(store);
    Rng rng(4);
    for (int step = 0; step < 3; ++step) {
      fill_gradients(store, rng);
      optimizer->step(2e-3 * (step + 1));
    }
    return std::vector<float>(store.data(), store.data() + store.padded_floats());
  };
  TrainConfig c;
  c.beta1 = 0.5;
  c.beta2 = 0.7;
  c.weight_decay = 0.3;
  c.muon_lr = 0.05;
  c.muon_momentum = 0.8;
  c.muon_weight_decay = 3.0;
  c.learning_rate = 2e-3;
  const AdamWSettings adamw{0.5, 0.7, 1e-8, 0.3};
  const auto from_config = [&](ParamStore& store) { return make_optimizer(c, store); };
  const auto whole = [](ParamStore& store) { return StoreRange{0, static_cast<int64_t>(store.padded_floats())}; };
  const std::vector<float> adamw_steps = weights_after_steps(from_config);
  EXPECT_EQ(adamw_steps, weights_after_steps([&](ParamStore& store) -> std::unique_ptr<Optimizer> {
              return std::make_unique<AdamW>(store, adamw, whole(store));
            }));
  EXPECT_NE(adamw_steps, weights_after_steps([&](ParamStore& store) { return make_optimizer(TrainConfig{}, store); }));
  c.optimizer = OptimizerKind::muon;
  const std::vector<float> muon_steps = weights_after_steps(from_config);
  EXPECT_EQ(
      muon_steps, weights_after_steps([&](ParamStore& store) -> std::unique_ptr<Optimizer> {
        return std::make_unique<Muon>(store, MuonSettings{0.05, 0.8, 2e-3, adamw, Dtype::float32, 3.0}, whole(store));
      }));
  for (const MuonSettings& other :
       {MuonSettings{0.02, 0.8, 2e-3, adamw, Dtype::float32, 3.0},
        MuonSettings{0.05, 0.95, 2e-3, adamw, Dtype::float32, 3.0}, MuonSettings{0.05, 0.8, 2e-3, adamw}})
    EXPECT_NE(muon_steps, weights_after_steps([&](ParamStore& store) -> std::unique_ptr<Optimizer> {
                return std::make_unique<Muon>(store, other, whole(store));
              }));
}

TEST(Muon, ChosenByTheConfigWithItsKeysChecked) {
  EXPECT_EQ(Setting<OptimizerKind>::parse("muon"), OptimizerKind::muon);
  EXPECT_EQ(Setting<OptimizerKind>::text(OptimizerKind::muon), "muon");
  TrainConfig c;
  c.data_path = "corpus.txt";
  c.optimizer = OptimizerKind::muon;
  EXPECT_EQ(find_config_problem(c).key, "");
  ParamStore store;
  add_model_like_parameters(store, 8, 16);
  EXPECT_STREQ(make_optimizer(c, store)->name(), "muon");
  c.zero_stage = 1;  // sharding would cut matrices that Newton-Schulz needs whole
  EXPECT_EQ(find_config_problem(c).key, "zero_stage");
  c.zero_stage = 0;
  c.muon_momentum = 1.0;
  EXPECT_EQ(find_config_problem(c).key, "muon_momentum");
  c.muon_momentum = 0.95;
  c.muon_lr = 0;
  EXPECT_EQ(find_config_problem(c).key, "muon_lr");
  c.muon_lr = 0.02;
  c.muon_weight_decay = 50;  // the weights would be multiplied by 0 at the peak
  EXPECT_EQ(find_config_problem(c).key, "muon_weight_decay");
  c.muon_weight_decay = 49;
  EXPECT_EQ(find_config_problem(c).key, "");
}

class OptimizerCheckpoints : public CorpusTest {};

// run_training(c) must stop with a usage error (exit code 2) whose message has every fragment.
void expect_training_refused(const TrainConfig& c, std::initializer_list<std::string> fragments) {
  try {
    run_training(c, nullptr);
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    const std::string message = e.what();
    for (const std::string& fragment : fragments) EXPECT_NE(message.find(fragment), std::string::npos) << message;
    EXPECT_EQ(e.exit_code(), 2);
  }
}

TEST_F(OptimizerCheckpoints, LionRunResumesExactly) {
  TrainConfig c = tiny_config(dir, corpus);
  c.optimizer = OptimizerKind::lion;
  c.learning_rate = 3e-4;
  c.weight_decay = 1.0;
  expect_resumed_run_reproduces(c, dir.file("split"));
  const LoggedRun full = read_metrics(c.out_dir);
  EXPECT_LT(full.val.back().second, full.val.front().second);  // it trains
}

TEST_F(OptimizerCheckpoints, MuonRunResumesExactly) {
  TrainConfig c = tiny_config(dir, corpus);
  c.optimizer = OptimizerKind::muon;
  expect_resumed_run_reproduces(c, dir.file("split"));
}

// With ema_decay the evaluations measure, and model.safetensors holds, the average the train state
// keeps as "ema", not the weights the resume point continues from; a resumed run's evaluations are
// the uninterrupted run's, so the average is saved and restored whole.
TEST_F(OptimizerCheckpoints, EmaRunResumesExactlyAndItsModelIsTheAverage) {
  TrainConfig c = tiny_config(dir, corpus);
  c.ema_decay = 0.9;
  c.always_save_checkpoint = true;
  expect_resumed_run_reproduces(c, dir.file("split"));
  const LoadedModel model = load_model(c.out_dir), resume = load_model(resume_path(c.out_dir));
  const ParamStore& weights = resume.model->params();
  std::vector<float> average(weights.padded_floats()), m(average.size()), v(average.size());
  OptimizerState state{"adamw", 0, {{"exp_avg", m.data()}, {"exp_avg_sq", v.data()}, {"ema", average.data()}}};
  EXPECT_EQ(load_training_state(c.out_dir, *resume.model, state).iter_num, 20);
  EXPECT_TRUE(same_bits(model.model->params().data(), average.data(), average.size()));
  EXPECT_FALSE(same_weights(model, resume));
}

TEST_F(OptimizerCheckpoints, ResumingWithAnAverageTheRunDidNotKeepSaysSo) {
  TrainConfig c = tiny_config(dir, corpus);
  c.max_iters = 2;
  run_training(c, nullptr);
  c.init_from = {InitKind::resume, ""};
  c.max_iters = 4;
  c.ema_decay = 0.9;
  expect_training_refused(c, {"no \"ema\" state", "ema_decay"});
  c.ema_decay = 0;
  EXPECT_EQ(run_training(c, nullptr).final_iter, 4);
}

TEST_F(OptimizerCheckpoints, MuonTrainingLowersTheLoss) {
  TrainConfig c = tiny_config(dir, corpus);
  c.optimizer = OptimizerKind::muon;
  c.max_iters = 60;
  c.lr_decay_iters = 60;
  c.eval_interval = 20;
  c.eval_iters = 5;
  run_training(c, nullptr);
  const LoggedRun run = read_metrics(c.out_dir);
  ASSERT_EQ(run.val.size(), 4u);
  for (std::size_t i = 1; i < run.val.size(); ++i) EXPECT_LT(run.val[i].second, run.val[i - 1].second) << i;
  EXPECT_LT(run.val.back().second, run.val.front().second - 1.0);
}

TEST_F(OptimizerCheckpoints, ResumingWithAnotherOptimizerNamesBoth) {
  TrainConfig c = tiny_config(dir, corpus);
  c.max_iters = 2;
  run_training(c, nullptr);
  c.init_from = {InitKind::resume, ""};
  c.optimizer = OptimizerKind::lion;
  expect_training_refused(c, {"\"adamw\"", "\"lion\""});
}

// Rewrites the train state in out_dir the way the AdamW-only format wrote it: no "optimizer" or
// "optimizer_step", the step as "adam_step" and an RNG state in the loop metadata.
void rewrite_as_old_format(const std::string& out_dir, Gpt& model) {
  const SafetensorsReader weights = SafetensorsReader::open(resume_path(out_dir));
  const std::string state_path = out_dir + "/" + weights.metadata("train_state");
  const SafetensorsReader state = SafetensorsReader::open(state_path);
  SafetensorsWriter old;
  std::vector<std::vector<float>> keep;
  for (const auto& [name, entry] : state.entries()) {
    const std::string param = name.substr(name.find('.') + 1);
    const Shape shape = model.params().slot(model.params().index_of(param)).shape;
    keep.emplace_back(static_cast<std::size_t>(shape.numel()));
    state.read_into(name, shape, keep.back().data());
    old.add(name, shape, keep.back().data());
  }
  nlohmann::json loop = nlohmann::json::parse(state.metadata("training"));
  loop["adam_step"] = std::stoll(state.metadata("optimizer_step"));
  loop["rng_state"] = {"0000000000000001", "0000000000000002", "0000000000000003", "0000000000000004"};
  old.set_metadata("training", loop.dump());
  old.set_metadata("train_config", state.metadata("train_config"));
  write_file_atomically(state_path, old.serialize());
}

TEST_F(OptimizerCheckpoints, TrainStatesOfTheAdamWOnlyFormatStillLoad) {
  TrainConfig c = tiny_config(dir, corpus);
  c.max_iters = 6;
  run_training(c, nullptr);
  LoadedModel loaded = load_model(c.out_dir);
  std::vector<float> m(loaded.model->params().padded_floats()), v(m.size());
  OptimizerState current{"adamw", 0, {{"exp_avg", m.data()}, {"exp_avg_sq", v.data()}}};
  load_training_state(c.out_dir, *loaded.model, current);
  rewrite_as_old_format(c.out_dir, *loaded.model);

  std::vector<float> m_old(m.size()), v_old(m.size());
  OptimizerState old{"adamw", 0, {{"exp_avg", m_old.data()}, {"exp_avg_sq", v_old.data()}}};
  const TrainingState state = load_training_state(c.out_dir, *loaded.model, old);
  EXPECT_EQ(state.iter_num, 6);
  EXPECT_EQ(old.step, current.step);
  EXPECT_EQ(old.step, 6);
  EXPECT_EQ(m_old, m);
  EXPECT_EQ(v_old, v);
  c.init_from = {InitKind::resume, ""};
  c.max_iters = 8;
  EXPECT_EQ(run_training(c, nullptr).final_iter, 8);
}

}  // namespace
}  // namespace gpt
