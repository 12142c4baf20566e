#include "core/param_store.h"

#include <algorithm>
#include <cstring>

#include "core/random_streams.h"

namespace gpt {

int ParamStore::add(const std::string& name, Shape shape, Init init) {
  GPT_CHECK(!finalized_, "add after finalize");
  GPT_CHECK(!by_name_.count(name), "duplicate parameter " + name);
  Slot slot{name, shape, init, total_floats_};
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
  return Tensor{data_.data() + s.offset, &grad_slots_[i], s.shape};
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

void ParamStore::initialize(uint64_t seed) {
  for (int i = 0; i < size(); ++i) {
    const Slot& s = slots_[i];
    float* values = data_.data() + s.offset;
    const int64_t n = s.shape.numel();
    switch (s.init.kind) {
      case Init::Kind::zeros:
        std::fill(values, values + n, 0.0f);
        break;
      case Init::Kind::ones:
        std::fill(values, values + n, 1.0f);
        break;
      case Init::Kind::normal: {
        Rng rng = init_stream(seed, s.name);
        for (int64_t k = 0; k < n; ++k) values[k] = static_cast<float>(rng.normal() * s.init.stddev);
        break;
      }
    }
  }
}

void ParamStore::zero_grad() { std::memset(grad_.data(), 0, total_floats_ * sizeof(float)); }

int64_t ParamStore::parameter_count() const {
  int64_t n = 0;
  for (const auto& s : slots_) n += s.shape.numel();
  return n;
}

}  // namespace gpt
