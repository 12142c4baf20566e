// --dtype for the commands that run a trained model (sample, eval): the matrix products' format,
// by default the one the checkpoint was trained with.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "core/check.h"
#include "kernels/dtype.h"
#include "model/gpt.h"

namespace gpt {

inline void add_dtype_option(CLI::App* command, std::string& dtype) {
  command->add_option("--dtype", dtype,
                      "matrix products in \"float32\" or \"bfloat16\" (default: the dtype the checkpoint was trained "
                      "with)");
}

// The value of a --dtype flag; UserError (exit 2) naming the flag otherwise.
inline Dtype parse_dtype_option(const std::string& dtype) {
  const std::optional<Dtype> parsed = parse_dtype(dtype);
  if (!parsed) throw UserError("--dtype must be \"float32\" or \"bfloat16\", got \"" + dtype + "\"");
  return *parsed;
}

inline void apply_dtype_option(const std::string& dtype, Gpt& model) {
  if (!dtype.empty()) model.set_matmul_dtype(parse_dtype_option(dtype));
}

}  // namespace gpt
