// Where a training step of the CPU recipe (B=12, T=64, C=128, 4 heads) spends its time: each
// op's forward and forward+backward at the model's shapes, the optimizer, and the whole model.
// Built and run by tools/profile_ops.sh; timings are means over repeated calls with warm caches.
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <vector>

#include "model/gpt.h"
#include "ops/ops.h"
#include "train/optimizer.h"
#include "train/train_config.h"

using namespace gpt;

namespace {

double mean_ms(const std::function<void()>& f, int reps = 50) {
  f();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / reps;
}

struct Owned {
  std::vector<float> data, grad;
  GradSlot slot;
  Tensor view;
  Owned(Shape s, Rng& rng) : data(s.numel()), grad(s.numel()) {
    for (auto& x : data) x = static_cast<float>(rng.normal() * 0.1);
    slot = GradSlot{grad.data(), grad.size(), nullptr};
    view = Tensor{data.data(), &slot, s};
  }
  Owned(const Owned&) = delete;
};

}  // namespace

int main() {
  const int64_t B = 12, T = 64, C = 128, H = 4, R = B * T, V = 65;
  Rng rng(1);
  Owned x({B, T, C}, rng), x4({B, T, 4 * C}, rng), w_attn({3 * C, C}, rng), w_fc({4 * C, C}, rng),
      w_proj({C, 4 * C}, rng), w_head({V, C}, rng), ln_w({C}, rng), qkv({B, T, 3 * C}, rng), logits({R, V}, rng);
  std::vector<int32_t> targets(R, 3);
  Arena arena(256 << 20);
  Graph g(arena);
  std::printf("%d threads\n%-30s %10s %14s\n", omp_get_max_threads(), "op (one layer's shapes)", "fwd ms",
              "fwd+bwd ms");
  auto row = [&](const char* name, const std::function<Tensor()>& op) {
    const double fwd = mean_ms([&] {
      NoGradGuard no_grad(g);
      op();
      g.reset();
    });
    const double both = mean_ms([&] {
      Tensor out = op();
      float* seed = out.grad_accumulator();
      std::fill(seed, seed + out.numel(), 1e-3f);
      g.run_backward();
      g.reset();
    });
    std::printf("%-30s %10.3f %14.3f\n", name, fwd, both);
  };
  row("linear c_attn 128->384", [&] { return linear(g, x.view, w_attn.view, Tensor{}); });
  row("linear c_fc 128->512", [&] { return linear(g, x.view, w_fc.view, Tensor{}); });
  row("linear mlp.c_proj 512->128", [&] { return linear(g, x4.view, w_proj.view, Tensor{}); });
  row("linear lm_head 128->65", [&] { return linear(g, x.view, w_head.view, Tensor{}); });
  row("causal_self_attention", [&] { return causal_self_attention(g, qkv.view, H, 0, rng, true); });
  row("layernorm", [&] { return layernorm(g, x.view, ln_w.view, Tensor{}); });
  row("gelu (4C)", [&] { return gelu(g, x4.view); });
  row("add (residual)", [&] { return add(g, x.view, x.view); });
  row("cross_entropy", [&] { return cross_entropy(g, logits.view, targets.data()); });
  GptConfig cfg;
  cfg.n_layer = 4;
  cfg.n_head = H;
  cfg.n_embd = C;
  cfg.block_size = T;
  cfg.vocab_size = V;
  cfg.dropout = 0;
  Gpt model(cfg);
  model.init_weights(rng.next_u64());
  const std::unique_ptr<Optimizer> optimizer = make_optimizer(TrainConfig{}, model.params());
  std::printf("%-30s %10.3f\n", "AdamW step", mean_ms([&] { optimizer->step(1e-3); }));
  std::printf("%-30s %10.3f\n", "clip_grad_norm", mean_ms([&] { clip_grad_norm(model.params(), 1.0); }));
  std::vector<int32_t> idx(R, 5);
  const double fwd = mean_ms(
      [&] {
        NoGradGuard no_grad(g);
        model.forward(g, idx.data(), B, T, targets.data(), true, rng);
        g.reset();
      },
      20);
  const double both = mean_ms(
      [&] {
        Gpt::Output out = model.forward(g, idx.data(), B, T, targets.data(), true, rng);
        g.backward(out.loss);
        g.reset();
      },
      20);
  std::printf("%-30s %10.3f %14.3f\n", "whole model (4 layers)", fwd, both);
}
