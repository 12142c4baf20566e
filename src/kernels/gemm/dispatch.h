// Which micro-kernel family a product runs on: the list of families fastest first, the first one
// this CPU supports, or the one a test forced on the calling thread (a ForcedKernelScope). A
// product resolves its family once, on the calling thread, and hands it to every OpenMP thread
// of its region, so the workers run what the caller chose.
#pragma once

#include <cstdint>

#include "kernels/dtype.h"
#include "kernels/gemm/kernel_family.h"

namespace gpt::gemm_detail {

// A family of either packed format (implicitly made from either); visit(f) calls f with the
// KernelFamily<float> or KernelFamily<uint32_t>.
class AnyFamily {
 public:
  constexpr AnyFamily() = default;
  constexpr AnyFamily(const KernelFamily<float>& family) : floats_(&family) {}
  constexpr AnyFamily(const KernelFamily<uint32_t>& family) : pairs_(&family) {}
  explicit operator bool() const { return floats_ || pairs_; }
  const char* name() const { return pairs_ ? pairs_->name : floats_->name; }
  bool supported() const { return pairs_ ? pairs_->supported() : floats_->supported(); }
  const KernelFamily<float>* floats() const { return floats_; }
  template <typename F>
  decltype(auto) visit(F&& f) const {
    if (pairs_) return f(*pairs_);
    return f(*floats_);
  }

 private:
  const KernelFamily<float>* floats_ = nullptr;
  const KernelFamily<uint32_t>* pairs_ = nullptr;
};

// The calling thread's family for products of `inputs`.
AnyFamily gemm_family(Dtype inputs);
const KernelFamily<float>& float32_family();
// The family called `name` (the one a PackedMatrix was packed for).
AnyFamily family_named(const char* name);

}  // namespace gpt::gemm_detail
