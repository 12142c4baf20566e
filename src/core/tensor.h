// Tensor: a non-owning view of contiguous row-major float32 storage plus an optional gradient.
// The memory belongs to an Arena (activations, reset each step) or the ParamStore (parameters).
// `grad` is null when no gradient is wanted (no-grad mode, or inputs that need none): ops skip it.
// Views (reshape) share data and grad, so they need no backward of their own; transposes copy.
#pragma once

#include "core/shape.h"

namespace gpt {

struct Tensor {
  float* data = nullptr;
  float* grad = nullptr;
  Shape shape;

  int64_t numel() const { return shape.numel(); }
  bool requires_grad() const { return grad != nullptr; }
  float item() const { return data[0]; }
  Tensor reshaped(Shape new_shape) const {
    GPT_CHECK(new_shape.numel() == shape.numel(), "reshape " + shape.str() + " -> " + new_shape.str());
    return Tensor{data, grad, new_shape};
  }
};

}  // namespace gpt
