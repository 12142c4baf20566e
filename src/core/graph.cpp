#include "core/graph.h"

#include <cstring>

namespace gpt {

float* Tensor::grad_accumulator() const {
  if (!grad_slot) return nullptr;
  if (!grad_slot->data) {
    GPT_CHECK(grad_slot->pool != nullptr, "a fixed gradient slot without a buffer");
    grad_slot->data = grad_slot->pool->acquire(grad_slot->count);
  }
  return grad_slot->data;
}

float* GradPool::acquire(std::size_t count) {
  for (std::size_t i = 0; i < free_.size(); ++i) {
    if (free_[i].count != count) continue;
    float* data = free_[i].data;
    free_[i] = free_.back();
    free_.pop_back();
    std::memset(data, 0, count * sizeof(float));
    return data;
  }
  return arena_.allocate_zeroed_floats(count);
}

void GradPool::release(GradSlot& slot) {
  if (!slot.pool || !slot.data) return;
  free_.push_back({slot.count, slot.data});
  slot.data = nullptr;
}

void Graph::backward(const Tensor& loss) {
  GPT_CHECK(loss.numel() == 1, "backward needs a scalar loss, got " + loss.shape.str());
  GPT_CHECK(loss.requires_grad(), "loss does not require a gradient");
  loss.grad_accumulator()[0] = 1.0f;
  run_backward();
}

void Graph::run_backward() {
  for (auto it = tape_.rbegin(); it != tape_.rend(); ++it) {
    if (!it->output->data) continue;  // no gradient reached this op's output
    it->run(it->closure);
    if (it->releases_output) grad_pool_.release(*it->output);
  }
}

void Graph::reset() {
  tape_.clear();
  grad_pool_.reset();
  arena_.reset();
}

}  // namespace gpt
