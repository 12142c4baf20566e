// Measures this machine's multiply-add throughput for the GEMM's inputs: FP32 FMAs with the
// vector width the float32 kernel uses (AVX-512, AVX2 or NEON), or for bfloat16 AMX's TDPBF16PS
// where the tiles arithmetic runs on them, VDPBF16PS where the CPU has it (the emulation elsewhere
// runs on the FMA units: their peak). Every thread runs independent chains for a fixed time. It is
// the "peak" that `gpt bench` and `gpt train` report MFU against; under GPT_MAX_ISA, the capped
// family's instructions (it asks the kernel choice, which sees the capped CPU).
#pragma once

#include "kernels/dtype.h"

namespace gpt {

// GFLOP/s over all OpenMP threads (2 FLOPs per multiply-add), measured for about `seconds`.
double measure_peak_gflops(Dtype inputs, double seconds = 0.3);

// On a CPU with AVX512_BF16: VDPBF16PS's multiply-adds per second over AVX-512 FMAs', one thread,
// a few milliseconds each (how the bfloat16 GEMM picks its kernel). 0 without AVX512_BF16.
double vdpbf16ps_speedup();

}  // namespace gpt
