#include "train/train_step.h"

#include <cmath>

#include "ops/ops.h"

namespace gpt {

bool StepResult::finite() const { return std::isfinite(loss) && std::isfinite(grad_norm); }

StepResult train_step(Gpt& model, Graph& graph, AdamW& optimizer, const std::vector<int32_t>& split,
                      const StepSettings& s, double lr, Rng& rng, Batch& batch) {
  double loss_sum = 0.0;
  for (int64_t micro = 0; micro < s.accumulation_steps; ++micro) {
    Dataset::sample_batch(split, s.batch_size, s.block_size, rng, batch);
    Gpt::Output out = model.forward(graph, batch.inputs.data(), s.batch_size, s.block_size, batch.targets.data(), true, rng);
    loss_sum += out.loss.item();
    // Each micro-batch's loss is scaled so the accumulated gradient is the mean's gradient.
    graph.backward(s.accumulation_steps > 1 ? scale(graph, out.loss, 1.0f / static_cast<float>(s.accumulation_steps)) : out.loss);
    graph.reset();
  }
  StepResult result{loss_sum / static_cast<double>(s.accumulation_steps), clip_grad_norm(model.params(), s.grad_clip)};
  if (result.finite()) optimizer.step(lr);
  model.params().zero_grad();
  return result;
}

}  // namespace gpt
