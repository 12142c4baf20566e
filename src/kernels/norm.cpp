// The norm dispatch: each Norm's kernels behind one switch for forward and one for backward.
#include "kernels/norm.h"

#include "core/check.h"
#include "kernels/layernorm.h"
#include "kernels/rmsnorm.h"

namespace gpt {

namespace {

[[noreturn]] void unknown_norm(Norm norm) {
  fail_check(__FILE__, __LINE__, "known norm", "norm " + std::to_string(static_cast<int>(norm)));
}

}  // namespace

void norm_forward(Norm norm, const float* x, const float* w, const float* b, float* y, float* mean, float* rstd,
                  int64_t rows, int64_t C) {
  switch (norm) {
    case Norm::layernorm:
      return layernorm_forward(x, w, b, y, mean, rstd, rows, C);
    case Norm::rmsnorm:
      GPT_CHECK(b == nullptr, "rmsnorm has no bias");
      return rmsnorm_forward(x, w, y, rstd, rows, C);
  }
  unknown_norm(norm);
}

void norm_backward(Norm norm, const float* x, const float* w, const float* mean, const float* rstd, const float* dy,
                   float* dx, float* dw, float* db, int64_t rows, int64_t C) {
  switch (norm) {
    case Norm::layernorm:
      return layernorm_backward(x, w, mean, rstd, dy, dx, dw, db, rows, C);
    case Norm::rmsnorm:
      GPT_CHECK(db == nullptr, "rmsnorm has no bias");
      return rmsnorm_backward(x, w, rstd, dy, dx, dw, rows, C);
  }
  unknown_norm(norm);
}

}  // namespace gpt
