// --dtype for the commands that run a trained model (sample, eval, serve): the matrix products'
// format, by default the one the checkpoint was trained with; "auto" is `gpt train`'s rule
// (auto_dtype): bfloat16 where this CPU multiplies bfloat16 natively, float32 elsewhere.
#pragma once

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <string>

#include "core/check.h"
#include "kernels/dtype.h"
#include "kernels/gemm.h"
#include "model/gpt.h"

namespace gpt {

inline void add_dtype_option(CLI::App* command, std::string& dtype) {
  command->add_option("--dtype", dtype,
                      "matrix products in \"float32\", \"bfloat16\" or \"auto\" (bfloat16 where this CPU multiplies "
                      "bfloat16 natively, else float32; default: the dtype the checkpoint was trained with)");
}

// The value of a --dtype flag that names a format (export's); UserError (exit 2) naming the flag otherwise.
inline Dtype parse_dtype_option(const std::string& dtype) {
  const std::optional<Dtype> parsed = parse_dtype(dtype);
  if (!parsed) throw UserError("--dtype must be \"float32\" or \"bfloat16\", got \"" + dtype + "\"");
  return *parsed;
}

inline void apply_dtype_option(const std::string& dtype, Gpt& model) {
  if (dtype.empty()) return;
  const std::optional<DtypeSetting> setting = parse_dtype_setting(dtype);
  if (!setting) throw UserError(std::string("--dtype must be ") + kDtypeSettingNames + ", got \"" + dtype + "\"");
  if (const std::optional<Dtype> fixed = fixed_dtype(*setting)) {
    model.set_matmul_dtype(*fixed);
    return;
  }
  const AutoDtype chosen = auto_dtype(bf16_arithmetic());
  spdlog::info("dtype auto: {} ({})", dtype_name(chosen.dtype), chosen.reason);
  model.set_matmul_dtype(chosen.dtype);
}

}  // namespace gpt
