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

// The `dtype` a run is given: a Dtype, or "auto", which the run resolves once, at its start, to
// bfloat16 where this CPU multiplies bfloat16 natively and float32 elsewhere (auto_dtype in
// kernels/gemm.h), so that nothing past the start sees "auto".
enum class DtypeSetting { automatic, float32, bfloat16 };

inline DtypeSetting dtype_setting(Dtype dtype) {
  return dtype == Dtype::bfloat16 ? DtypeSetting::bfloat16 : DtypeSetting::float32;
}
// The Dtype a setting names; none for "auto".
inline std::optional<Dtype> fixed_dtype(DtypeSetting setting) {
  if (setting == DtypeSetting::automatic) return std::nullopt;
  return setting == DtypeSetting::bfloat16 ? Dtype::bfloat16 : Dtype::float32;
}
inline const char* dtype_setting_name(DtypeSetting setting) {
  const std::optional<Dtype> dtype = fixed_dtype(setting);
  return dtype ? dtype_name(*dtype) : "auto";
}
inline std::optional<DtypeSetting> parse_dtype_setting(std::string_view name) {
  if (name == "auto") return DtypeSetting::automatic;
  if (const std::optional<Dtype> dtype = parse_dtype(name)) return dtype_setting(*dtype);
  return std::nullopt;
}
inline constexpr const char* kDtypeSettingNames = "\"float32\", \"bfloat16\" or \"auto\"";

// How a bfloat16 product sums, each a numeric family of its own with its own bits:
//   sequential  every output a chain of fused multiply-adds in k order (VDPBF16PS, or float32
//               FMAs on rounded inputs: kernels/bfloat16.h);
//   tiles       the order of AMX's TDPBF16PS (kernels/gemm/amx_bf16.cpp): on AMX hardware, or
//               emulated, exactly but slowly, elsewhere;
//   automatic   ("auto") tiles where AMX runs, sequential elsewhere: the fastest here.
enum class Bf16Arithmetic { automatic, sequential, tiles };

inline const char* bf16_arithmetic_name(Bf16Arithmetic arithmetic) {
  switch (arithmetic) {
    case Bf16Arithmetic::sequential:
      return "sequential";
    case Bf16Arithmetic::tiles:
      return "tiles";
    case Bf16Arithmetic::automatic:
      break;
  }
  return "auto";
}
inline std::optional<Bf16Arithmetic> parse_bf16_arithmetic(std::string_view name) {
  for (const Bf16Arithmetic arithmetic : {Bf16Arithmetic::automatic, Bf16Arithmetic::sequential, Bf16Arithmetic::tiles})
    if (name == bf16_arithmetic_name(arithmetic)) return arithmetic;
  return std::nullopt;
}

}  // namespace gpt
