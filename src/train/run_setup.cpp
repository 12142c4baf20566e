#include "train/run_setup.h"

#include <spdlog/spdlog.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/check.h"
#include "core/copy_values.h"
#include "io/run_folder.h"
#include "kernels/gemm.h"
#include "train/distributed_state.h"

namespace gpt {

namespace {

void check_resume_matches(const GptConfig& saved, const GptConfig& config, const std::string& path) {
  const std::pair<const char*, std::pair<int64_t, int64_t>> sizes[] = {
      {"n_layer", {saved.n_layer, config.n_layer}},
      {"n_head", {saved.n_head, config.n_head}},
      {"n_embd", {saved.n_embd, config.n_embd}},
      {"block_size", {saved.block_size, config.block_size}}};
  for (const auto& [key, values] : sizes)
    if (values.first != values.second)
      throw UserError("cannot resume: " + path + " has " + key + " " + std::to_string(values.first) +
                      " but the config says " + std::to_string(values.second));
  if (saved.bias != config.bias) throw UserError("cannot resume: " + path + " and the config disagree on \"bias\"");
  if (saved.norm != config.norm)
    throw UserError("cannot resume: " + path + " has norm \"" + norm_name(saved.norm) + "\" but the config says \"" +
                    norm_name(config.norm) + "\"");
  auto text = [](const nlohmann::json& value) { return value.dump(); };
  const std::pair<const char*, std::pair<std::string, std::string>> attention[] = {
      {"pos_encoding", {text(pos_encoding_name(saved.pos_encoding)), text(pos_encoding_name(config.pos_encoding))}},
      {"rope_theta", {text(saved.rope_theta), text(config.rope_theta)}},
      {"n_kv_head", {text(saved.kv_heads()), text(config.kv_heads())}},
      {"qk_norm", {text(saved.qk_norm), text(config.qk_norm)}}};
  for (const auto& [key, values] : attention)
    if (values.first != values.second)
      throw UserError("cannot resume: " + path + " has " + key + " " + values.first + " but the config says " +
                      values.second);
  if (saved.mlp != config.mlp)
    throw UserError("cannot resume: " + path + " has mlp \"" + activation_name(saved.mlp) +
                    "\" but the config says \"" + activation_name(config.mlp) + "\"");
  if (saved.mlp_width() != config.mlp_width())
    throw UserError("cannot resume: " + path + " has an MLP of width (mlp_hidden) " +
                    std::to_string(saved.mlp_width()) + " but the config's is " + std::to_string(config.mlp_width()));
  if (saved.tie_embeddings != config.tie_embeddings)
    throw UserError("cannot resume: " + path + " and the config disagree on \"tie_embeddings\"");
  if (saved.bigram_embedding != config.bigram_embedding)
    throw UserError("cannot resume: " + path + " and the config disagree on \"bigram_embedding\"");
  if (saved.value_embeddings != config.value_embeddings)
    throw UserError("cannot resume: " + path + " and the config disagree on \"value_embeddings\"");
  if (saved.logit_softcap != config.logit_softcap)
    throw UserError("cannot resume: " + path + " has logit_softcap " + std::to_string(saved.logit_softcap) +
                    " but the config says " + std::to_string(config.logit_softcap));
}

// The root's text on every process.
std::string broadcast_text(const World& world, std::string text) {
  if (!world.distributed()) return text;
  int64_t size = static_cast<int64_t>(text.size());
  world.broadcast(&size, sizeof size);
  text.resize(static_cast<std::size_t>(size));
  if (size > 0) world.broadcast(text.data(), text.size());
  return text;
}

// The run's folder, without the temporary files of earlier runs interrupted mid-write.
void open_out_dir(const std::string& out_dir) {
  create_out_dir(out_dir);
  if (const int removed = remove_stale_temporaries(out_dir))
    spdlog::info("removed {} temporary file(s) that an interrupted run left in {}", removed, out_dir);
}

class RunSetup {
 public:
  RunSetup(const TrainConfig& config, const World& world, const std::atomic<int>* stop_signal)
      : world_(world),
        stop_signal_(stop_signal),
        kind_(config.init_from.kind),
        dtype_auto_(config.dtype == DtypeSetting::automatic) {
    parts_.config = config;
  }

  // Rank 0 prepares text first; the others then find it prepared (on a shared file system) or
  // prepare their host's copy. Rank 0 also reads the model the run continues from: its
  // vocabulary and architecture go to every process, its weights once the model is built.
  RunParts run() && {
    std::string continued;
    run_agreeing(world_, [&] {
      if (!world_.is_root()) return;
      open_data();
      continued = read_continued_model();
    });
    continued = broadcast_text(world_, continued);
    // "auto" is the same on every process: the tiles arithmetic only when every one runs it on
    // AMX (a process without would emulate it, many times slower), else the sequential one.
    const bool tiles_everywhere = world_.min(fastest_bf16_arithmetic() == Bf16Arithmetic::tiles ? 1 : 0) == 1;
    common_fastest_ = tiles_everywhere ? Bf16Arithmetic::tiles : Bf16Arithmetic::sequential;
    TrainConfig& c = parts_.config;
    resolve_dtype(c, world_, c.bf16_arithmetic == Bf16Arithmetic::automatic ? common_fastest_ : c.bf16_arithmetic);
    run_agreeing(world_, [&] {
      if (!world_.is_root()) open_data();
      set_up_locally(continued);
    });
    ParamStore& params = parts_.model->params();
    if (kind_ == InitKind::resume)
      share_resumed_state(world_, params, parts_.state, *parts_.optimizer, resumed_, resumed_step_);
    if (kind_ == InitKind::checkpoint) world_.broadcast(params.data(), params.padded_floats() * sizeof(float));
    return std::move(parts_);
  }

 private:
  void open_data() {
    const TrainConfig& c = parts_.config;
    parts_.data = std::make_unique<Dataset>(Dataset::open(c.corpus(), c.cache_dir, stop_signal_));
  }

  // Rank 0: {"vocab", "model"} of the checkpoint the run continues (resume) or starts from
  // (fine-tuning, which keeps it in base_ for its weights); "" for a run from scratch.
  std::string read_continued_model() {
    const TrainConfig& c = parts_.config;
    if (kind_ == InitKind::scratch) return "";
    std::error_code ec;
    if (kind_ == InitKind::checkpoint && !std::filesystem::exists(c.init_from.checkpoint, ec))
      throw UserError("\"init_from\": \"" + c.init_from.checkpoint +
                      "\" is neither \"scratch\", \"resume\" nor an existing checkpoint to fine-tune (a "
                      "model.safetensors file or a run's out_dir)");
    base_ = std::make_unique<LoadedModel>(load_model(continued_source()));
    return nlohmann::json{{"vocab", base_->vocab.to_json()},
                          {"model", base_->model->config().to_json()},
                          {"bf16_arithmetic", bf16_arithmetic_name(base_->bf16_arithmetic)}}
        .dump();
  }

  std::string continued_source() const {
    const TrainConfig& c = parts_.config;
    return kind_ == InitKind::resume ? resume_path(c.out_dir) : c.init_from.checkpoint;
  }

  // Fine-tuning: the checkpoint's architecture (the config's is overridden, with a note) and
  // vocabulary; the corpus must be written in that vocabulary.
  void adopt_continued_model(const std::string& continued) {
    TrainConfig& c = parts_.config;
    const nlohmann::json j = nlohmann::json::parse(continued);
    const std::string source = continued_source();
    const Vocab vocab = Vocab::from_json(j["vocab"].get<std::string>(), source);
    if (kind_ == InitKind::resume) {
      parts_.data->use_vocab(vocab,
                             "cannot resume: the vocabulary of " + c.data_path + " differs from the one in " + source);
      keep_recorded_arithmetic(*parse_bf16_arithmetic(j["bf16_arithmetic"].get<std::string>()));
      return;
    }
    GptConfig architecture = GptConfig::from_json(j["model"], source);
    architecture.dropout = c.model.dropout;  // a training setting: the run's
    if (world_.is_root() && architecture.to_json() != c.model_config(architecture.vocab_size).to_json())
      spdlog::info(
          "fine-tuning {}: its architecture ({} layers, {} heads, n_embd {}, block_size {}) replaces the config's",
          source, architecture.n_layer, architecture.n_head, architecture.n_embd, architecture.block_size);
    c.model = architecture;
    parts_.data->use_vocab(vocab, "cannot fine-tune " + source + " on " + c.data_path);
  }

  void set_up_locally(const std::string& continued) {
    const TrainConfig& c = parts_.config;
    if (!continued.empty()) adopt_continued_model(continued);
    parts_.data->check_fits(c.model.block_size, true);
    if (c.gradient_accumulation_steps % world_.size() != 0)
      throw UserError("gradient_accumulation_steps (" + std::to_string(c.gradient_accumulation_steps) +
                      ") must be divisible by the number of processes (" + std::to_string(world_.size()) +
                      "): it counts the micro-batches of an iteration over all of them");
    if (world_.is_root()) open_out_dir(c.out_dir);
    build_model();
    if (kind_ == InitKind::resume && world_.is_root()) load_checkpoint();
    base_.reset();
  }

  // A resumed bfloat16 run under "auto" continues with the arithmetic it was trained with, so its
  // bits continue too (emulated, slowly, when it was AMX's and this machine has none). Under dtype
  // "auto" the run asked for this machine's fastest products instead: it takes them.
  void keep_recorded_arithmetic(Bf16Arithmetic recorded) {
    TrainConfig& c = parts_.config;
    if (c.dtype != DtypeSetting::bfloat16 || c.bf16_arithmetic != Bf16Arithmetic::automatic ||
        recorded == Bf16Arithmetic::automatic)
      return;
    if (dtype_auto_) {
      if (world_.is_root() && recorded != common_fastest_)
        spdlog::info(
            "dtype auto: resuming with the \"{}\" bfloat16 arithmetic, the fastest here, where the run "
            "was trained with \"{}\": the bits differ from here on",
            bf16_arithmetic_name(common_fastest_), bf16_arithmetic_name(recorded));
      return;
    }
    c.bf16_arithmetic = recorded;
    if (!world_.is_root() || recorded == common_fastest_) return;
    const char* emulated =
        world_.distributed() ? ", which the CPUs of some processes can only emulate (exact, and about 100 times slower)"
                             : ", which this CPU can only emulate (exact, and about 100 times slower)";
    spdlog::warn(
        "resuming with the \"{}\" bfloat16 arithmetic the run was trained with{}; set bf16_arithmetic to "
        "\"{}\" to continue faster, with other bits",
        bf16_arithmetic_name(recorded), recorded == Bf16Arithmetic::tiles ? emulated : "",
        bf16_arithmetic_name(common_fastest_));
  }

  void build_model() {
    const TrainConfig& c = parts_.config;
    parts_.model = std::make_unique<Gpt>(c.model_config(parts_.data->vocab().size()));
    Gpt& model = *parts_.model;
    if (kind_ == InitKind::scratch) model.init_weights(static_cast<uint64_t>(c.seed));
    if (kind_ == InitKind::checkpoint && world_.is_root())
      copy_values(model.params().data(), base_->model->params().data(),
                  static_cast<int64_t>(model.params().padded_floats()));
    model.set_matmul_dtype(c.matmul_dtype());
    if (c.matmul_dtype() == Dtype::bfloat16)
      set_bf16_arithmetic(c.bf16_arithmetic == Bf16Arithmetic::automatic ? common_fastest_ : c.bf16_arithmetic);
    if (world_.distributed())
      parts_.sync = std::make_unique<DataParallelSync>(world_, model.params(), c.zero_stage == 1);
    else
      parts_.sync = std::make_unique<LocalGradientSync>();
    parts_.optimizer = make_optimizer(c, model.params(), parts_.sync->optimizer_shard(model.params()));
    const bool loads_state = kind_ == InitKind::resume && world_.is_root();
    resumed_ = whole_state_buffers(*parts_.optimizer, loads_state ? model.params().padded_floats() : 0);
  }

  // Rank 0: the checkpoint's weights into the model, its optimizer state into resumed_.
  void load_checkpoint() {
    const LoadedModel& loaded = *base_;
    check_resume_matches(loaded.model->config(), parts_.config.model, loaded.path);
    const Dtype trained = loaded.model->matmul_dtype(), now = parts_.config.matmul_dtype();
    if (trained != now)
      spdlog::info("{} was trained with {} matrix products; the run continues with {} ones{}", loaded.path,
                   dtype_name(trained), dtype_name(now), dtype_auto_ ? " (dtype auto on this machine)" : "");
    ParamStore& params = parts_.model->params();
    std::memcpy(params.data(), loaded.model->params().data(), params.padded_floats() * sizeof(float));
    Optimizer& optimizer = *parts_.optimizer;
    OptimizerState restored{optimizer.name(), 0, {}};
    const std::vector<NamedBuffer> names = optimizer.state();
    for (std::size_t i = 0; i < names.size(); ++i) restored.buffers.push_back({names[i].name, resumed_[i].data()});
    parts_.state = load_training_state(parts_.config.out_dir, *parts_.model, restored);
    resumed_step_ = restored.step;
    spdlog::info("resuming from {} at iteration {} (best val loss {:.4f})", loaded.path, parts_.state.iter_num,
                 parts_.state.best_val_loss);
  }

  const World& world_;
  Bf16Arithmetic common_fastest_ = Bf16Arithmetic::sequential;  // what "auto" means on every process
  const std::atomic<int>* stop_signal_;
  const InitKind kind_;
  const bool dtype_auto_;  // the config's dtype was "auto" (parts_.config's is resolved)
  RunParts parts_;
  std::unique_ptr<LoadedModel> base_;          // rank 0, during setup: the checkpoint the run continues
  std::vector<AlignedBuffer<float>> resumed_;  // rank 0, resume: the whole optimizer state loaded
  int64_t resumed_step_ = 0;
};

}  // namespace

void resolve_dtype(TrainConfig& config, const World& world, Bf16Arithmetic arithmetic) {
  if (config.dtype != DtypeSetting::automatic) return;
  AutoDtype chosen = auto_dtype(arithmetic);
  if (world.min(chosen.dtype == Dtype::bfloat16 ? 1 : 0) == 0 && chosen.dtype == Dtype::bfloat16)
    chosen = {Dtype::float32, "the CPUs of some processes have no native bfloat16 products"};
  config.dtype = dtype_setting(chosen.dtype);
  if (world.is_root()) spdlog::info("dtype auto: {} ({})", dtype_name(chosen.dtype), chosen.reason);
}

RunParts set_up_run(const TrainConfig& config, const World& world, const std::atomic<int>* stop_signal) {
  return RunSetup(config, world, stop_signal).run();
}

}  // namespace gpt
