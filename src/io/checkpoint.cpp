#include "io/checkpoint.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>

#include "core/atomic_file.h"
#include "core/check.h"
#include "io/run_folder.h"
#include "io/safetensors.h"
#include "kernels/gemm.h"

namespace gpt {

namespace fs = std::filesystem;

namespace {

constexpr const char* kStatePrefix = "train_state-";

std::string hex64(uint64_t x) {
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(x));
  return buffer;
}

int64_t parse_count(const std::string& s, const std::string& source) {
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos)
    throw UserError(source + ": malformed optimizer step \"" + s + "\"", ExitCode::runtime);
  return std::stoll(s);
}

// A name no earlier save of this or another process used: iteration, time, pid.
std::string new_state_file_name(int64_t iter_num) {
  const auto ns = std::chrono::steady_clock::now().time_since_epoch().count();
  return std::string(kStatePrefix) + std::to_string(iter_num) + "-" +
         hex64(static_cast<uint64_t>(ns) ^ (static_cast<uint64_t>(::getpid()) << 48)) + ".safetensors";
}

void add_weights(SafetensorsWriter& writer, Gpt& model) {
  ParamStore& params = model.params();
  for (int i = 0; i < params.size(); ++i) writer.add(params.slot(i).name, params.slot(i).shape, params.tensor(i).data);
}

// `arithmetic`: the bfloat16 arithmetic the weights were trained with; automatic (unknown) is
// left unrecorded.
void add_model_metadata(SafetensorsWriter& writer, const Gpt& model, const Vocab& vocab, Dtype dtype,
                        Bf16Arithmetic arithmetic) {
  writer.set_metadata("format", "pt");
  writer.set_metadata("config", model.config().to_json().dump());
  writer.set_metadata("vocab", vocab.to_json());
  writer.set_metadata("dtype", dtype_name(dtype));
  if (dtype == Dtype::bfloat16 && arithmetic != Bf16Arithmetic::automatic)
    writer.set_metadata("bf16_arithmetic", bf16_arithmetic_name(arithmetic));
}
// The weights and metadata both checkpoint files of a run hold, at iteration `iter_num`.
SafetensorsWriter run_weights_writer(const SavedModel& saved, int64_t iter_num) {
  SafetensorsWriter weights;
  add_weights(weights, saved.model);
  add_model_metadata(weights, saved.model, saved.vocab, saved.model.matmul_dtype(), saved.arithmetic);
  weights.set_metadata("iter_num", std::to_string(iter_num));
  return weights;
}

}  // namespace

std::string model_path(const std::string& out_dir) { return run_file(out_dir, kModelFile); }

void save_best_model(const std::string& out_dir, const SavedModel& saved, int64_t iter_num, double val_loss) {
  create_out_dir(out_dir);
  SafetensorsWriter weights = run_weights_writer(saved, iter_num);
  weights.set_metadata("val_loss", nlohmann::json(val_loss).dump());
  weights.write_file(model_path(out_dir));
}

void save_resume_point(const std::string& out_dir, const SavedModel& saved, const TrainingState& state,
                       const OptimizerState& optimizer_state) {
  create_out_dir(out_dir);
  SafetensorsWriter optimizer;
  ParamStore& params = saved.model.params();
  for (int i = 0; i < params.size(); ++i) {
    const auto& slot = params.slot(i);
    for (std::size_t b = 0; b < optimizer_state.buffers.size(); ++b) {
      const NamedBuffer& buffer = optimizer_state.buffers[b];
      const std::string name = buffer.name + "." + slot.name;
      if (optimizer_state.fetch)
        optimizer.add(name, slot.shape, [&fetch = optimizer_state.fetch, b, i] { return fetch(b, i); });
      else
        optimizer.add(name, slot.shape, buffer.data + slot.offset);
    }
  }
  const nlohmann::json loop = {{"iter_num", state.iter_num},
                               {"eval_done", state.eval_done},
                               {"best_val_loss", state.best_val_loss},
                               {"best_iter", state.best_iter},
                               {"evals_since_best", state.evals_since_best},
                               {"planned_iters", state.planned_iters},
                               {"elapsed_seconds", state.elapsed_seconds}};
  optimizer.set_metadata("training", loop.dump());
  optimizer.set_metadata("optimizer", optimizer_state.name);
  optimizer.set_metadata("optimizer_step", std::to_string(optimizer_state.step));
  optimizer.set_metadata("train_config", state.train_config.dump());
  const std::string state_name = new_state_file_name(state.iter_num);
  optimizer.write_file((fs::path(out_dir) / state_name).string());

  SafetensorsWriter weights = run_weights_writer(saved, state.iter_num);
  weights.set_metadata("train_state", state_name);
  // The manifest goes last; only then are older state files unreferenced and removed.
  weights.write_file(run_file(out_dir, kResumeFile));
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(out_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(kStatePrefix) && name != state_name) fs::remove(entry.path(), ec);
  }
}

void export_model(Gpt& model, const Vocab& vocab, Dtype dtype, Bf16Arithmetic arithmetic, const std::string& path) {
  std::set<const float*> product_only;
  if (dtype == Dtype::bfloat16)
    for (const LinearWeights* linear : model.weights().linears())
      if (linear->weight.data != model.weights().wte.data) product_only.insert(linear->weight.data);
  SafetensorsWriter writer;
  ParamStore& params = model.params();
  for (int i = 0; i < params.size(); ++i) {
    const float* data = params.tensor(i).data;
    if (product_only.count(data))
      writer.add_bfloat16(params.slot(i).name, params.slot(i).shape, data);
    else
      writer.add(params.slot(i).name, params.slot(i).shape, data);
  }
  add_model_metadata(writer, model, vocab, dtype == Dtype::bfloat16 ? dtype : model.matmul_dtype(), arithmetic);
  writer.write_file(path);
}

LoadedModel load_model(const std::string& path_or_dir) {
  std::error_code ec;
  const std::string path = fs::is_directory(path_or_dir, ec) ? model_path(path_or_dir) : path_or_dir;
  if (!fs::exists(path, ec))
    throw UserError("no checkpoint at " + path +
                    " (train a model first with gpt train, or pass --out_dir/--checkpoint)");
  SafetensorsReader reader = SafetensorsReader::open(path);
  nlohmann::json config_json = nlohmann::json::parse(reader.metadata("config"), nullptr, false);
  if (config_json.is_discarded()) throw UserError(path + ": metadata \"config\" is not valid JSON", ExitCode::runtime);
  const GptConfig config = GptConfig::from_json(config_json, path);
  Vocab vocab = Vocab::from_json(reader.metadata("vocab"), path);
  if (vocab.size() != config.vocab_size)
    throw UserError(path + ": the vocabulary has " + std::to_string(vocab.size()) +
                        " characters but the config says vocab_size " + std::to_string(config.vocab_size),
                    ExitCode::runtime);
  auto model = std::make_unique<Gpt>(config);
  if (reader.has_metadata("dtype")) {
    const std::optional<Dtype> dtype = parse_dtype(reader.metadata("dtype"));
    if (!dtype) throw UserError(path + ": metadata \"dtype\" must be \"float32\" or \"bfloat16\"", ExitCode::runtime);
    model->set_matmul_dtype(*dtype);
  }
  Bf16Arithmetic arithmetic = Bf16Arithmetic::automatic;
  if (reader.has_metadata("bf16_arithmetic")) {
    const std::optional<Bf16Arithmetic> recorded = parse_bf16_arithmetic(reader.metadata("bf16_arithmetic"));
    if (!recorded)
      throw UserError(path + ": metadata \"bf16_arithmetic\" must be \"sequential\" or \"tiles\"", ExitCode::runtime);
    arithmetic = *recorded;
  }
  ParamStore& params = model->params();
  for (int i = 0; i < params.size(); ++i)
    reader.read_into(params.slot(i).name, params.slot(i).shape, params.tensor(i).data);
  for (const auto& [name, entry] : reader.entries())
    if (params.index_of(name) < 0)
      throw UserError(path + ": unexpected tensor \"" + name + "\" for this config", ExitCode::runtime);
  return {std::move(model), std::move(vocab), path, arithmetic};
}

std::string resume_path(const std::string& out_dir) {
  const std::string path = run_file(out_dir, kResumeFile);
  std::error_code ec;
  return fs::exists(path, ec) || !fs::exists(model_path(out_dir), ec) ? path : model_path(out_dir);
}

TrainingState load_training_state(const std::string& out_dir, Gpt& model, OptimizerState& optimizer_state) {
  const std::string path = resume_path(out_dir);
  SafetensorsReader weights = SafetensorsReader::open(path);
  if (!weights.has_metadata("train_state"))
    throw UserError(path + ": has no training state to resume from, and " + out_dir + " has no " + kResumeFile +
                        " (a run writes it at every evaluation that saves, at its end and when stopped)",
                    ExitCode::runtime);
  const std::string state_name = weights.metadata("train_state");
  if (state_name.find('/') != std::string::npos || !state_name.starts_with(kStatePrefix))
    throw UserError(path + ": malformed train_state reference", ExitCode::runtime);
  const std::string state_path = (fs::path(out_dir) / state_name).string();
  SafetensorsReader optimizer = SafetensorsReader::open(state_path);
  // Train states from before named optimizers hold AdamW's moments and "adam_step".
  const bool named = optimizer.has_metadata("optimizer");
  const std::string saved_name = named ? optimizer.metadata("optimizer") : "adamw";
  if (saved_name != optimizer_state.name)
    throw UserError("cannot resume: " + state_path + " holds the state of optimizer \"" + saved_name +
                    "\" but the config says \"" + optimizer_state.name +
                    "\" (set optimizer to match, or start a new run with init_from \"scratch\")");
  ParamStore& params = model.params();
  for (const NamedBuffer& buffer : optimizer_state.buffers)
    if (params.size() > 0 && optimizer.entries().count(buffer.name + "." + params.slot(0).name) == 0)
      throw UserError("cannot resume: " + state_path + " has no \"" + buffer.name +
                      "\" state, which this config's optimizer keeps" +
                      (buffer.name == "ema" ? " (the run that wrote it had no weight average, ema_decay 0)" : "") +
                      "; resume with that run's settings, or start a new run with init_from \"scratch\"");
  for (int i = 0; i < params.size(); ++i) {
    const auto& slot = params.slot(i);
    for (const NamedBuffer& buffer : optimizer_state.buffers)
      optimizer.read_into(buffer.name + "." + slot.name, slot.shape, buffer.data + slot.offset);
  }
  nlohmann::json loop = nlohmann::json::parse(optimizer.metadata("training"), nullptr, false);
  TrainingState state;
  try {
    state.iter_num = loop.at("iter_num").get<int64_t>();
    state.eval_done = loop.at("eval_done").get<bool>();
    state.best_val_loss = loop.at("best_val_loss").get<double>();
    state.best_iter = loop.value("best_iter", int64_t{-1});               // absent before resume points
    state.evals_since_best = loop.value("evals_since_best", int64_t{0});  // absent before patience existed
    state.planned_iters = loop.value("planned_iters", int64_t{0});
    state.elapsed_seconds = loop.value("elapsed_seconds", 0.0);
    optimizer_state.step =
        named ? parse_count(optimizer.metadata("optimizer_step"), state_path) : loop.at("adam_step").get<int64_t>();
  } catch (const nlohmann::json::exception&) {
    throw UserError(state_path + ": metadata \"training\" is malformed", ExitCode::runtime);
  }
  if (weights.has_metadata("iter_num") && weights.metadata("iter_num") != std::to_string(state.iter_num))
    throw UserError(state_path + ": iteration does not match " + path, ExitCode::runtime);
  state.train_config = nlohmann::json::parse(optimizer.metadata("train_config"), nullptr, false);
  return state;
}

}  // namespace gpt
