// GEMM microbenchmark: our kernel (src/kernels/gemm.h) against OpenBLAS cblas_sgemm on the
// GPT models' shapes, in the three forms training uses, and our bfloat16-input kernel against the
// measured bfloat16 peak. Benchmark only: OpenBLAS is never linked into gpt. Built on request
// (cmake --build build --target gemm_bench, with libopenblas-dev installed) and run by
// tools/bench_vs_torch.sh; prints one JSON object per line.
//   gemm_bench [ROUNDS] [FILTER]   ROUNDS (default 5) alternating rounds per shape: each round times
//                                  every contender (the median of its repetitions) one after the
//                                  other, so a drift of the machine's speed hits them alike; the
//                                  figures are medians over rounds, the ratio the median of the
//                                  rounds' ratios. FILTER: only shapes whose name contains it.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/rng.h"
#include "kernels/cpu_features.h"
#include "kernels/fma_probe.h"
#include "kernels/gemm.h"
#include "median_seconds.h"

namespace {

// A weight gradient accumulates into its gradient (C += A^T B; OpenBLAS's beta = 1), as training's
// linear backward does.
struct Shape {
  const char* what;
  bool ta, tb;
  long M, N, K;
  bool accumulate = false;
};

// Per round: seconds of ours, OpenBLAS, ours with bfloat16 inputs, and the VDPBF16PS kernel forced.
struct Rounds {
  std::vector<double> ours, blas, bf16, vdpbf16ps, ratio;
};

}  // namespace

int main(int argc, char** argv) {
  const gpt::MaxIsaSetting& max_isa = gpt::max_isa_setting();
  if (!max_isa.error.empty()) {
    std::fprintf(stderr, "gemm_bench: %s\n", max_isa.error.c_str());
    return 2;
  }
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const std::string filter = argc > 2 ? argv[2] : "";
  // B*T = 768 rows (CPU recipe: 12 x 64), C = 128; and 16384 rows (64 x 256), C = 384 (10.7M recipe).
  // A weight gradient is dy^T x (out x in, as gpt stores weights); x^T dy, the product for a weight
  // stored in x out (GPT-2's Conv1D layout), is c_attn's gradient in the other operand order.
  const Shape shapes[] = {
      {"cpu c_attn fwd  x W^T", false, true, 768, 384, 128},
      {"cpu c_fc fwd    x W^T", false, true, 768, 512, 128},
      {"cpu mlp.c_proj dx dy W", false, false, 768, 512, 128},
      {"cpu c_fc dW    dy^T x", true, false, 512, 128, 768, true},
      {"cpu mlp.c_proj dW dy^T x", true, false, 128, 512, 768, true},
      {"cpu lm_head fwd x W^T", false, true, 768, 65, 128},
      {"big c_attn fwd  x W^T", false, true, 16384, 1152, 384},
      {"big c_fc dx    dy W", false, false, 16384, 384, 1536},
      {"big c_fc dW    dy^T x", true, false, 1536, 384, 16384, true},
      {"big mlp.c_proj dW dy^T x", true, false, 384, 1536, 16384, true},
      {"big c_attn dx  dy W", false, false, 16384, 384, 1152},
      {"big c_attn dW  x^T dy", true, false, 384, 1152, 16384, true},
  };
  gpt::Rng rng(1);
  const double fp32_peak = gpt::measure_peak_gflops(gpt::Dtype::float32, 1.0);
  const double bf16_peak = gpt::measure_peak_gflops(gpt::Dtype::bfloat16, 1.0);
  // VDPBF16PS itself, also where the automatic choice is FMA (it was measured slower there).
  const auto kernels = gpt::gemm_kernels(gpt::Dtype::bfloat16);
  const bool has_vdpbf16ps = std::string(kernels.front()) == gpt::kVdpbf16psKernel;
  const char* vdpbf16ps_kernel = has_vdpbf16ps ? gpt::kVdpbf16psKernel : nullptr;
  const double vdpbf16ps_peak = [&] {
    const gpt::ForcedKernelScope forced(gpt::Dtype::bfloat16, vdpbf16ps_kernel);
    return has_vdpbf16ps ? gpt::measure_peak_gflops(gpt::Dtype::bfloat16, 1.0) : 0.0;
  }();
  for (const Shape& s : shapes) {
    if (std::string(s.what).find(filter) == std::string::npos) continue;
    // Allocated as gpt allocates its tensors (2 MiB aligned, huge pages advised), so the products
    // read and write memory as they do in training.
    gpt::AlignedBuffer<float> A(s.M * s.K), B(s.K * s.N), C(s.M * s.N);
    for (std::size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>(rng.normal());
    for (std::size_t i = 0; i < B.size(); ++i) B[i] = static_cast<float>(rng.normal());
    const long lda = s.ta ? s.M : s.K, ldb = s.tb ? s.K : s.N;
    const double flops = 2.0 * s.M * s.N * s.K;
    const int reps = flops > 1e10 ? 5 : 50;
    const auto product = [&](gpt::Dtype inputs) {
      gpt::gemm(s.ta, s.tb, s.M, s.N, s.K, A.data(), lda, B.data(), ldb, C.data(), s.N, s.accumulate, inputs);
    };
    Rounds r;
    for (int round = 0; round < rounds; ++round) {
      r.ours.push_back(median_seconds([&] { product(gpt::Dtype::float32); }, reps));
      r.blas.push_back(median_seconds(
          [&] {
            cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans, s.M, s.N,
                        s.K, 1.0f, A.data(), lda, B.data(), ldb, s.accumulate ? 1.0f : 0.0f, C.data(), s.N);
          },
          reps));
      r.ratio.push_back(r.blas.back() / r.ours.back());
      r.bf16.push_back(median_seconds([&] { product(gpt::Dtype::bfloat16); }, reps));
      const gpt::ForcedKernelScope forced(gpt::Dtype::bfloat16, vdpbf16ps_kernel);
      r.vdpbf16ps.push_back(has_vdpbf16ps ? median_seconds([&] { product(gpt::Dtype::bfloat16); }, reps) : 0.0);
    }
    const auto gflops = [&](const std::vector<double>& seconds) {
      const double t = median(seconds);
      return t > 0 ? flops / t * 1e-9 : 0.0;
    };
    const auto [lowest, highest] = std::minmax_element(r.ratio.begin(), r.ratio.end());
    std::printf(
        "{\"shape\": \"%s\", \"ta\": %s, \"tb\": %s, \"M\": %ld, \"N\": %ld, \"K\": %ld, \"accumulate\": %s, "
        "\"rounds\": %d, \"ours_gflops\": %.1f, \"openblas_gflops\": %.1f, \"ratio\": %.3f, \"ratio_min\": %.3f, "
        "\"ratio_max\": %.3f, \"kernel\": \"%s\", \"fp32_peak_gflops\": %.1f, \"bf16_gflops\": %.1f, "
        "\"bf16_kernel\": \"%s\", \"bf16_peak_gflops\": %.1f, \"vdpbf16ps_gflops\": %.1f, "
        "\"vdpbf16ps_peak_gflops\": %.1f, \"threads\": %d, \"openblas_core\": \"%s\", \"max_isa\": \"%s\"}\n",
        s.what, s.ta ? "true" : "false", s.tb ? "true" : "false", s.M, s.N, s.K, s.accumulate ? "true" : "false",
        rounds, gflops(r.ours), gflops(r.blas), median(r.ratio), *lowest, *highest, gpt::gemm_kernel_name(), fp32_peak,
        gflops(r.bf16), gpt::gemm_kernel_name(gpt::Dtype::bfloat16), bf16_peak, gflops(r.vdpbf16ps), vdpbf16ps_peak,
        omp_get_max_threads(), openblas_get_corename(), max_isa.cap ? gpt::max_isa_name(*max_isa.cap) : "");
    std::fflush(stdout);
  }
}
