// The model's normalisation layers, chosen by config key `norm`, and the one dispatch every caller
// (the fused norm+linear op and the sampler's executor) goes through: one switch for forward, one
// for backward. Adding one: an enum value, its name, its kernels and a case in each switch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gpt {

enum class Norm {
  layernorm,  // (x - mean) / sqrt(var + eps) * w + b (GPT-2, nanoGPT)
  rmsnorm,    // x / sqrt(mean(x^2) + eps) * w, no bias (Zhang & Sennrich 2019; llama)
};

// "layernorm", "rmsnorm"; and back (nullopt for any other text). Inline: config and checkpoint
// readers use them without the kernels.
inline const char* norm_name(Norm norm) {
  switch (norm) {
    case Norm::layernorm:
      return "layernorm";
    case Norm::rmsnorm:
      return "rmsnorm";
  }
  return nullptr;
}

inline std::optional<Norm> parse_norm(const std::string& text) {
  for (Norm norm : {Norm::layernorm, Norm::rmsnorm})
    if (text == norm_name(norm)) return norm;
  return std::nullopt;
}

// x, y: [rows, C]; w, b: [C] (b may be null; rmsnorm has none). Saves per row what the backward
// needs: mean (layernorm only) and 1/std (1/rms for rmsnorm).
void norm_forward(Norm norm, const float* x, const float* w, const float* b, float* y, float* mean, float* rstd,
                  int64_t rows, int64_t C);
// dx += d/dx, dw += d/dw, db += d/db (each skipped when null).
void norm_backward(Norm norm, const float* x, const float* w, const float* mean, const float* rstd, const float* dy,
                   float* dx, float* dw, float* db, int64_t rows, int64_t C);

}  // namespace gpt
