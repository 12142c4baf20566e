// The number format of a matrix product's inputs. Accumulation, and everything that is not a
// matrix product, stays float32 in both: this is the `dtype` of nanoGPT's autocast, not a storage
// format (weights, gradients and optimizer state are float32 master copies).
#pragma once

#include <optional>
#include <string_view>

namespace gpt {

enum class Dtype { float32, bfloat16 };

inline const char* dtype_name(Dtype dtype) { return dtype == Dtype::bfloat16 ? "bfloat16" : "float32"; }
inline std::optional<Dtype> parse_dtype(std::string_view name) {
  if (name == "float32") return Dtype::float32;
  if (name == "bfloat16") return Dtype::bfloat16;
  return std::nullopt;
}

}  // namespace gpt
