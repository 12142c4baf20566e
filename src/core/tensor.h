// Tensor: a non-owning view of contiguous row-major float32 storage plus an optional gradient.
// The memory belongs to an Arena (activations, reset each step) or the ParamStore (parameters).
// The gradient lives behind a GradSlot so that activations need no buffer until backward reaches
// them: a slot with a pool gets its buffer from the Graph's BufferPool when backward first writes
// it (zeroed unless the op writes every element) and gives it back once the backward of the op
// that made the tensor has consumed it, so only the gradients of the part of the graph backward is
// working on are alive at once. Parameters and caller-owned inputs have fixed buffers (pool ==
// nullptr). A null slot means no gradient is wanted (no-grad mode, or inputs that need none): ops
// skip it. Views (reshape) share data and slot, so they need no backward of their own; transposes
// copy.
#pragma once

#include <cstddef>

#include "core/shape.h"

namespace gpt {

class BufferPool;

struct GradSlot {
  float* data = nullptr;  // null until the first gradient arrives (for pooled slots)
  std::size_t count = 0;
  BufferPool* pool = nullptr;
};

struct Tensor {
  float* data = nullptr;
  GradSlot* grad_slot = nullptr;
  Shape shape;

  int64_t numel() const { return shape.numel(); }
  bool requires_grad() const { return grad_slot != nullptr; }
  float item() const { return data[0]; }
  // The gradient accumulated so far; null when none is wanted or none has arrived (it is zero).
  float* grad() const { return grad_slot ? grad_slot->data : nullptr; }
  // The buffer to accumulate (+=) this tensor's gradient into, zeroed when first handed out;
  // null when no gradient is wanted. Call it outside parallel regions (it may allocate).
  float* grad_accumulator() const;
  // Whether grad_to_overwrite() applies: a gradient is wanted, none has arrived yet (grad() is
  // null) and the slot is pooled.
  bool grad_can_be_overwritten() const { return grad_slot && !grad_slot->data && grad_slot->pool; }
  // For a backward that writes every element of this tensor's gradient when it can be
  // overwritten: the buffer, uninitialised, saving the zeroing.
  float* grad_to_overwrite() const;
  // For a backward that writes every element of this tensor's gradient: grad_to_overwrite() when
  // that applies (accumulate false), else grad_accumulator() (accumulate true); {null, true} when
  // no gradient is wanted. Overwriting skips zeroing a buffer that is then written in full.
  struct GradTarget {
    float* data = nullptr;
    bool accumulate = true;
  };
  GradTarget grad_target() const;
  Tensor reshaped(Shape new_shape) const {
    GPT_CHECK(new_shape.numel() == shape.numel(), "reshape " + shape.str() + " -> " + new_shape.str());
    return Tensor{data, grad_slot, new_shape};
  }
};

}  // namespace gpt
