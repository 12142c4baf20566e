#include "core/graph.h"

namespace gpt {

void Graph::backward(const Tensor& loss) {
  GPT_CHECK(loss.numel() == 1, "backward needs a scalar loss, got " + loss.shape.str());
  GPT_CHECK(loss.grad != nullptr, "loss does not require a gradient");
  loss.grad[0] = 1.0f;
  run_backward();
}

void Graph::run_backward() {
  for (auto it = tape_.rbegin(); it != tape_.rend(); ++it) it->run(it->closure);
}

void Graph::reset() {
  tape_.clear();
  arena_.reset();
}

}  // namespace gpt
