#include "core/graph.h"

#include <cstring>

namespace gpt {

float* Tensor::grad_accumulator() const {
  if (!grad_slot) return nullptr;
  if (!grad_slot->data) {
    GPT_CHECK(grad_slot->pool != nullptr, "a fixed gradient slot without a buffer");
    grad_slot->data = grad_slot->pool->acquire_zeroed(grad_slot->count);
  }
  return grad_slot->data;
}

float* Tensor::grad_to_overwrite() const {
  GPT_CHECK(grad_can_be_overwritten(), "grad_to_overwrite needs a pooled, still empty gradient");
  grad_slot->data = grad_slot->pool->acquire(grad_slot->count);
  return grad_slot->data;
}

Tensor::GradTarget Tensor::grad_target() const {
  if (!grad_slot) return {};
  if (grad_can_be_overwritten()) return {grad_to_overwrite(), false};
  return {grad_accumulator(), true};
}

float* BufferPool::acquire(std::size_t count) {
  for (std::size_t i = 0; i < free_.size(); ++i) {
    if (free_[i].count != count) continue;
    float* data = free_[i].data;
    free_[i] = free_.back();
    free_.pop_back();
    return data;
  }
  return arena_.allocate_floats(count);
}

float* BufferPool::acquire_zeroed(std::size_t count) {
  float* data = acquire(count);
  std::memset(data, 0, count * sizeof(float));
  return data;
}

void BufferPool::release(GradSlot& slot) {
  if (!slot.pool || !slot.data) return;
  release(slot.data, slot.count);
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
    if (it->releases_output) buffer_pool_.release(*it->output);
  }
}

void Graph::reset() {
  tape_.clear();
  buffer_pool_.reset();
  arena_.reset();
}

}  // namespace gpt
