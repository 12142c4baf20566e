#include "train/train_step.h"

#include <cmath>

#include "core/random_streams.h"
#include "ops/ops.h"

namespace gpt {

StepSettings step_settings(const TrainConfig& c) {
  return {c.batch_size, c.model.block_size, c.gradient_accumulation_steps, c.grad_clip, static_cast<uint64_t>(c.seed),
          c.data_order};
}

bool StepResult::finite() const { return std::isfinite(loss) && std::isfinite(grad_norm); }

double accumulate_micro_batch(Gpt& model, Graph& graph, TokenView split, const StepSettings& s, int64_t iter,
                              int64_t micro, Batch& batch) {
  if (s.order == DataOrder::epochs) {
    Dataset::epoch_batch(split, s.batch_size, s.block_size, s.seed,
                         (iter * s.accumulation_steps + micro) * s.batch_size, batch);
  } else {
    Rng rows = train_batch_stream(s.seed, iter, micro);
    Dataset::sample_batch(split, s.batch_size, s.block_size, rows, batch);
  }
  Rng dropout = dropout_stream(s.seed, iter, micro);
  Gpt::Output out =
      model.forward(graph, batch.inputs.data(), s.batch_size, s.block_size, batch.targets.data(), true, dropout);
  const double loss = out.loss.item();
  // Each micro-batch's loss is scaled so the accumulated gradient is the mean's gradient.
  graph.backward(s.accumulation_steps > 1 ? scale(graph, out.loss, 1.0f / static_cast<float>(s.accumulation_steps))
                                          : out.loss);
  graph.reset();
  return loss;
}

StepResult compute_step_gradient(Gpt& model, Graph& graph, GradientSync& sync, TokenView split, const StepSettings& s,
                                 int64_t iter, Batch& batch) {
  ParamStore& params = model.params();
  const MicroBatchRange mine = sync.micro_batches(s.accumulation_steps);
  for (int64_t micro = mine.begin; micro < mine.end; ++micro)
    sync.collect(micro, params, accumulate_micro_batch(model, graph, split, s, iter, micro, batch));
  const double loss_sum = sync.synchronize(params);
  return {loss_sum / static_cast<double>(s.accumulation_steps), sync.clip(params, s.grad_clip)};
}

void apply_step(Gpt& model, Optimizer& optimizer, GradientSync& sync, const StepResult& result, double lr) {
  ParamStore& params = model.params();
  // Loss and norm are the same in every process, so all skip a non-finite step together.
  if (result.finite()) {
    optimizer.step(lr);
    sync.share_parameters(params);
  }
  params.zero_grad();
}

StepResult train_step(Gpt& model, Graph& graph, Optimizer& optimizer, GradientSync& sync, TokenView split,
                      const StepSettings& s, int64_t iter, double lr, Batch& batch) {
  const StepResult result = compute_step_gradient(model, graph, sync, split, s, iter, batch);
  apply_step(model, optimizer, sync, result, lr);
  return result;
}

}  // namespace gpt
