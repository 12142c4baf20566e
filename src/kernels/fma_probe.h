// Measures this machine's FP32 fused-multiply-add throughput with the vector width the GEMM
// kernel uses: every thread runs independent FMA chains for a fixed time. It is the "peak" that
// `gpt bench` and `gpt train` report model FLOPs utilisation (MFU) against.
#pragma once

namespace gpt {

// GFLOP/s over all OpenMP threads (2 FLOPs per lane per FMA), measured for about `seconds`.
double measure_fma_peak_gflops(double seconds = 0.3);

}  // namespace gpt
