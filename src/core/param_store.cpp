#include "core/param_store.h"

#include <cstring>

namespace gpt {

int ParamStore::add(const std::string& name, Shape shape) {
  GPT_CHECK(!finalized_, "add after finalize");
  GPT_CHECK(!by_name_.count(name), "duplicate parameter " + name);
  Slot slot{name, shape, total_floats_};
  total_floats_ += round_up(static_cast<std::size_t>(shape.numel()), kAlignment / sizeof(float));
  by_name_[name] = static_cast<int>(slots_.size());
  slots_.push_back(std::move(slot));
  return static_cast<int>(slots_.size()) - 1;
}

void ParamStore::finalize() {
  GPT_CHECK(!finalized_);
  data_ = AlignedBuffer<float>(total_floats_);
  grad_ = AlignedBuffer<float>(total_floats_);
  for (const Slot& s : slots_)
    grad_slots_.push_back(GradSlot{grad_.data() + s.offset, static_cast<std::size_t>(s.shape.numel()), nullptr});
  finalized_ = true;
}

Tensor ParamStore::tensor(int i) {
  GPT_CHECK(finalized_ && i >= 0 && i < size());
  const Slot& s = slots_[i];
  return Tensor{data_.data() + s.offset, grads_enabled_ ? &grad_slots_[i] : nullptr, s.shape};
}

Tensor ParamStore::tensor(const std::string& name) {
  const int i = index_of(name);
  GPT_CHECK(i >= 0, "no parameter " + name);
  return tensor(i);
}

int ParamStore::index_of(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

void ParamStore::zero_grad() { std::memset(grad_.data(), 0, total_floats_ * sizeof(float)); }

int64_t ParamStore::parameter_count() const {
  int64_t n = 0;
  for (const auto& s : slots_) n += s.shape.numel();
  return n;
}

}  // namespace gpt
