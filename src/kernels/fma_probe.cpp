#include "kernels/fma_probe.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "kernels/cpu_features.h"
#include "kernels/gemm.h"
#include "kernels/gemm/kernel_family.h"

namespace gpt {

namespace {

volatile double g_probe_sink = 0.0;

// 12 independent accumulators hide the FMA latency (4-5 cycles at 2 per cycle needs >= 10).
__attribute__((target("avx2,fma"))) double fma_chains_avx2(long rounds) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long r = 0; r < rounds; ++r)
    for (auto& x : acc) x = _mm256_fmadd_ps(x, a, b);
  float sink = 0;
  for (auto& x : acc) sink += _mm256_cvtss_f32(x);
  return sink;
}

// The chains' results are used (so they cannot be optimised away): the sum of their first lanes.
__attribute__((target("avx512f"))) float first_lanes_sum(const __m512 (&acc)[12]) {
  alignas(64) float lanes[16];
  float sink = 0;
  for (const auto& x : acc) {
    _mm512_store_ps(lanes, x);
    sink += lanes[0];
  }
  return sink;
}

__attribute__((target("avx512f"))) double fma_chains_avx512(long rounds) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long r = 0; r < rounds; ++r)
    for (auto& x : acc) x = _mm512_fmadd_ps(x, a, b);
  return first_lanes_sum(acc);
}

// VDPBF16PS: 16 lanes x 2 multiply-adds per instruction.
__attribute__((target("avx512f,avx512bf16"))) double dpbf16_chains(long rounds) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512bh a = reinterpret_cast<__m512bh>(_mm512_set1_epi32(0x3f803f80));  // (1, 1)
  const __m512bh b = reinterpret_cast<__m512bh>(_mm512_set1_epi32(0x33d633d6));  // (1e-7, 1e-7)
  for (long r = 0; r < rounds; ++r)
    for (auto& x : acc) x = _mm512_dpbf16_ps(x, a, b);
  return first_lanes_sum(acc);
}

}  // namespace

double vdpbf16ps_speedup() {
  if (!cpu_features().avx512bf16) return 0.0;
  auto best_seconds = [](auto chains) {
    chains(20000);  // warm up
    double best = 1e9;
    for (int trial = 0; trial < 3; ++trial) {
      const auto start = std::chrono::steady_clock::now();
      g_probe_sink = g_probe_sink + chains(100000);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return best;
  };
  // The same number of instructions: VDPBF16PS does 2 multiply-adds per lane, an FMA 1.
  const double dp = best_seconds(dpbf16_chains), fma = best_seconds(fma_chains_avx512);
  return 2.0 * fma / dp;
}

double measure_peak_gflops(Dtype inputs, double seconds) {
  const int width = gemm_vector_width();
  if (width <= 1) return 0.0;  // portable kernel: no SIMD peak to speak of
  const bool amx = inputs == Dtype::bfloat16 && std::strcmp(gemm_kernel_name(inputs), kAmxKernel) == 0;
  const bool bf16 = inputs == Dtype::bfloat16 && gemm_bfloat16_uses_vdpbf16ps();
  auto run = [&](long rounds) {
    if (amx) return gemm_detail::amx_tile_chains(rounds);
    if (bf16) return dpbf16_chains(rounds);
    return width == 16 ? fma_chains_avx512(rounds) : fma_chains_avx2(rounds);
  };
  // Per round: four tile products of 16 x 16 x 32 multiply-adds, or 12 vector instructions.
  const double flops_per_round = amx ? 4 * 16 * 16 * 32 * 2.0 : 12.0 * width * (bf16 ? 4.0 : 2.0);
  run(100000);  // warm up the vector units (and their clock)
  // The peak is a maximum: on a shared machine other work only ever slows a trial down, so take
  // the best of several short trials rather than one long one.
  constexpr int kTrials = 5;
  double best = 0.0, sink = 0.0;
  long rounds = 1 << 16;
  for (int trial = 0; trial < kTrials; ++trial) {
    double elapsed = 0;
    for (;;) {
      const auto start = std::chrono::steady_clock::now();
#pragma omp parallel reduction(+ : sink)
      sink += run(rounds);
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (elapsed >= seconds / kTrials) break;
      rounds *= 2;
    }
    const double flops = static_cast<double>(rounds) * flops_per_round * omp_get_max_threads();
    best = std::max(best, flops / elapsed * 1e-9);
  }
  g_probe_sink = sink;  // the chains' results are used, so they cannot be optimised away
  return best;
}

}  // namespace gpt
