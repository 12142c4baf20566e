// PyTorch parity: our GPT against nanoGPT's model run by PyTorch on the same weights and batch
// (reference files written by tools/make_parity_reference.py, committed in tests/data/).
// Logits and loss to 1e-5, gradients to 1e-4 of each tensor's largest magnitude, then the loss
// trajectory and final weights of six AdamW steps with clipping and the lr schedule.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "model/gpt.h"
#include "train/lr_schedule.h"
#include "train/optimizer.h"
#include "train/train_config.h"

namespace gpt {
namespace {

std::string data_path(const std::string& name) {
  const char* root = std::getenv("GPT_SOURCE_DIR");
  return std::string(root ? root : ".") + "/tests/data/" + name;
}

std::vector<float> read_tensor(const SafetensorsReader& file, const std::string& name) {
  const auto& entry = file.entries().at(name);
  Shape shape;
  for (int64_t d : entry.shape) shape.dims[shape.rank++] = d;
  std::vector<float> out(static_cast<std::size_t>(shape.numel()));
  file.read_into(name, shape, out.data());
  return out;
}

float max_abs(const std::vector<float>& v) {
  float m = 0;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

void expect_relative(const float* ours, const std::vector<float>& theirs, double tolerance, const std::string& what) {
  const double bound = tolerance * std::max(1e-12f, max_abs(theirs));
  double worst = 0;
  for (std::size_t i = 0; i < theirs.size(); ++i) worst = std::max(worst, std::fabs(double(ours[i]) - theirs[i]));
  EXPECT_LE(worst, bound) << what << ": worst difference " << worst << " vs bound " << bound;
}

void check_parity(const std::string& file_name) {
  SafetensorsReader file = SafetensorsReader::open(data_path(file_name));
  const GptConfig config = GptConfig::from_json(nlohmann::json::parse(file.metadata("config")), file_name);
  const nlohmann::json train = nlohmann::json::parse(file.metadata("train"));
  Gpt model(config);
  ParamStore& params = model.params();
  for (int i = 0; i < params.size(); ++i)
    file.read_into("param." + params.slot(i).name, params.slot(i).shape, params.tensor(i).data);

  const auto idx_f = read_tensor(file, "batch.idx"), targets_f = read_tensor(file, "batch.targets");
  std::vector<int32_t> idx(idx_f.begin(), idx_f.end()), targets(targets_f.begin(), targets_f.end());
  const int64_t B = file.entries().at("batch.idx").shape[0], T = file.entries().at("batch.idx").shape[1];

  Arena arena;
  Graph graph(arena);
  Rng rng(0);
  Gpt::Output out = model.forward(graph, idx.data(), B, T, targets.data(), true, rng);
  const auto logits = read_tensor(file, "logits");
  ASSERT_EQ(static_cast<std::size_t>(out.logits.numel()), logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i) ASSERT_NEAR(out.logits.data[i], logits[i], 1e-5) << "logit " << i;
  EXPECT_NEAR(out.loss.item(), read_tensor(file, "loss")[0], 1e-5);
  graph.backward(out.loss);
  graph.reset();
  for (int i = 0; i < params.size(); ++i) {
    const std::string& name = params.slot(i).name;
    expect_relative(params.tensor(i).grad(), read_tensor(file, "grad." + name), 1e-4, "gradient of " + name);
  }
  params.zero_grad();

  // AdamW steps with clipping and the schedule, on the same batch each step.
  TrainConfig settings;
  settings.optimizer = OptimizerKind::adamw;
  settings.beta1 = train["beta1"];
  settings.beta2 = train["beta2"];
  settings.weight_decay = train["weight_decay"];
  settings.learning_rate = train["learning_rate"];
  settings.min_lr = train["min_lr"];
  settings.warmup_iters = train["warmup_iters"];
  settings.lr_decay_iters = train["lr_decay_iters"];
  settings.decay_lr = true;
  const std::unique_ptr<Optimizer> optimizer = make_optimizer(settings, params);
  const LrSchedule schedule = lr_schedule(settings);
  const auto losses = read_tensor(file, "steps.losses");
  const auto norms = read_tensor(file, "steps.grad_norms");
  for (std::size_t step = 0; step < losses.size(); ++step) {
    Gpt::Output o = model.forward(graph, idx.data(), B, T, targets.data(), true, rng);
    EXPECT_NEAR(o.loss.item(), losses[step], 1e-4) << "loss at step " << step;
    graph.backward(o.loss);
    graph.reset();
    const double norm = clip_grad_norm(params, train["grad_clip"]);
    EXPECT_NEAR(norm, norms[step], 1e-4 * norms[step]) << "gradient norm at step " << step;
    optimizer->step(schedule.at(static_cast<int64_t>(step)));
    params.zero_grad();
  }
  for (int i = 0; i < params.size(); ++i) {
    const std::string& name = params.slot(i).name;
    std::vector<float> theirs = read_tensor(file, "final." + name);
    std::vector<float> ours(params.tensor(i).data, params.tensor(i).data + theirs.size());
    if (name.ends_with("attn.c_attn.bias")) {
      // The key bias adds q.b_k to every score of a query row, which softmax ignores: its
      // gradient is exactly zero, so both engines see only round-off there, which Adam
      // normalises into arbitrary +-lr steps. Compare the query and value parts only.
      const auto C = static_cast<std::ptrdiff_t>(config.n_embd);
      theirs.erase(theirs.begin() + C, theirs.begin() + 2 * C);
      ours.erase(ours.begin() + C, ours.begin() + 2 * C);
    }
    expect_relative(ours.data(), theirs, 1e-4, "weights after steps: " + name);
  }
}

TEST(PytorchParity, WithBiases) { check_parity("parity_bias.safetensors"); }
TEST(PytorchParity, WithoutBiases) { check_parity("parity_nobias.safetensors"); }
// The modern-architecture keys (docs/training.md): norm "rmsnorm", mlp "relu2".
TEST(PytorchParity, ModernArchitecture) { check_parity("parity_modern.safetensors"); }
// RoPE (no wpe), grouped-query attention (2 query heads sharing 1 kv head), QK-norm, rmsnorm.
TEST(PytorchParity, RopeGroupedQueryAndQkNorm) { check_parity("parity_rope.safetensors"); }
// bigram_embedding and value_embeddings (randomised tables, so the forward reads the rows it
// picks), with RoPE and one kv head of two.
TEST(PytorchParity, BigramAndValueEmbeddings) { check_parity("parity_embeddings.safetensors"); }

// The MLP and head keys: mlp "swiglu" (c_fc = [W_gate; W_up]), an untied lm_head.weight and
// logit_softcap 2 (which bends these logits), with norm "rmsnorm".
TEST(PytorchParity, SwigluUntiedHeadSoftcap) { check_parity("parity_mlp.safetensors"); }

}  // namespace
}  // namespace gpt
