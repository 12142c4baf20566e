// Where a training step spends its time: each op's forward and forward+backward at one layer's
// shapes, the optimizer, and the whole model. Shapes of the CPU recipe (B=12, T=64, C=128, 4
// heads, 4 layers) or, with `big`, of the 10.7M recipe (B=64, T=256, C=384, 6 heads, 6 layers);
// `bfloat16` rounds the linears' inputs as dtype "bfloat16" does; a number sets how many calls
// each mean is over (default 50, 3 with `big`); any other word keeps only the rows whose name
// contains it (e.g. `attention`: the op without dropout and with the recipes' 0.2); kernel=NAME
// forces that GEMM kernel of the dtype (one of `gpt bench`'s list, e.g. avx512-fma-bf16: how
// another CPU's choice runs here) for the products this thread calls; attention's products run on
// its own worker threads with their automatic kernel.
//   profile_ops [big] [bfloat16] [REPS] [WORD] [kernel=NAME]
// Built and run by tools/profile_ops.sh; timings are means over repeated calls with warm caches.
#include <omp.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/gemm.h"
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

int main(int argc, char** argv) {
  bool big = false;
  Dtype dtype = Dtype::float32;
  std::string only;
  const char* kernel = nullptr;
  int reps = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "big") == 0)
      big = true;
    else if (std::strncmp(argv[i], "kernel=", 7) == 0)
      kernel = argv[i] + 7;
    else if (std::isdigit(static_cast<unsigned char>(argv[i][0])))
      reps = std::atoi(argv[i]);
    else if (const std::optional<Dtype> parsed = parse_dtype(argv[i]))
      dtype = *parsed;
    else
      only = argv[i];
  }
  const ForcedKernelScope forced(dtype, kernel);
  const auto wanted = [&](const std::string& name) { return name.find(only) != std::string::npos; };
  const int64_t B = big ? 64 : 12, T = big ? 256 : 64, C = big ? 384 : 128, H = big ? 6 : 4, L = big ? 6 : 4;
  const int64_t R = B * T, V = 65;
  if (reps <= 0) reps = big ? 3 : 50;
  Rng rng(1);
  Owned x({B, T, C}, rng), x4({B, T, 4 * C}, rng), w_attn({3 * C, C}, rng), w_fc({4 * C, C}, rng),
      w_proj({C, 4 * C}, rng), w_head({V, C}, rng), ln_w({C}, rng), qkv({B, T, 3 * C}, rng), logits({R, V}, rng);
  std::vector<int32_t> targets(R, 3);
  Arena arena(big ? std::size_t{4} << 30 : 256u << 20);
  Graph g(arena);
  std::printf(
      "%d threads, B %lld, T %lld, C %lld, %lld heads, %lld layers, matrix products %s on %s\n%-30s %10s %14s\n",
      omp_get_max_threads(), static_cast<long long>(B), static_cast<long long>(T), static_cast<long long>(C),
      static_cast<long long>(H), static_cast<long long>(L), dtype_name(dtype), gemm_kernel_name(dtype),
      "op (one layer's shapes)", "fwd ms", "fwd+bwd ms");
  auto row = [&](const char* name, const std::function<Tensor()>& op) {
    if (!wanted(name)) return;
    const double fwd = mean_ms(
        [&] {
          NoGradGuard no_grad(g);
          op();
          g.reset();
        },
        reps);
    const double both = mean_ms(
        [&] {
          Tensor out = op();
          float* seed = out.grad_accumulator();
          std::fill(seed, seed + out.numel(), 1e-3f);
          g.run_backward();
          g.reset();
        },
        reps);
    std::printf("%-30s %10.3f %14.3f\n", name, fwd, both);
  };
  row("linear c_attn C->3C", [&] { return linear(g, x.view, w_attn.view, Tensor{}, dtype); });
  row("linear c_fc C->4C", [&] { return linear(g, x.view, w_fc.view, Tensor{}, dtype); });
  row("linear mlp.c_proj 4C->C", [&] { return linear(g, x4.view, w_proj.view, Tensor{}, dtype); });
  row("linear lm_head C->65", [&] { return linear(g, x.view, w_head.view, Tensor{}, dtype); });
  row("causal_self_attention", [&] { return causal_self_attention(g, qkv.view, H, 0, rng, true, 0, dtype); });
  row("causal_self_attention drop 0.2",
      [&] { return causal_self_attention(g, qkv.view, H, 0.2f, rng, true, 0, dtype); });
  row("layernorm", [&] { return layernorm(g, x.view, ln_w.view, Tensor{}); });
  row("gelu (4C)", [&] { return gelu(g, x4.view); });
  row("add (residual)", [&] { return add(g, x.view, x.view); });
  row("cross_entropy", [&] { return cross_entropy(g, logits.view, targets.data()); });
  if (!wanted("AdamW step") && !wanted("clip_grad_norm") && !wanted("whole model")) return 0;  // no model to build
  GptConfig cfg;
  cfg.n_layer = L;
  cfg.n_head = H;
  cfg.n_embd = C;
  cfg.block_size = T;
  cfg.vocab_size = V;
  cfg.dropout = 0;
  Gpt model(cfg);
  model.init_weights(rng.next_u64());
  model.set_matmul_dtype(dtype);
  const std::unique_ptr<Optimizer> optimizer = make_optimizer(TrainConfig{}, model.params());
  if (wanted("AdamW step")) std::printf("%-30s %10.3f\n", "AdamW step", mean_ms([&] { optimizer->step(1e-3); }));
  if (wanted("clip_grad_norm"))
    std::printf("%-30s %10.3f\n", "clip_grad_norm", mean_ms([&] { clip_grad_norm(model.params(), 1.0); }));
  if (!wanted("whole model")) return 0;
  std::vector<int32_t> idx(R, 5);
  const double fwd = mean_ms(
      [&] {
        NoGradGuard no_grad(g);
        model.forward(g, idx.data(), B, T, targets.data(), true, rng);
        g.reset();
      },
      reps);
  const double both = mean_ms(
      [&] {
        Gpt::Output out = model.forward(g, idx.data(), B, T, targets.data(), true, rng);
        g.backward(out.loss);
        g.reset();
      },
      reps);
  std::printf("%-30s %10.3f %14.3f\n", "whole model", fwd, both);
}
