#include "data/dataset.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/atomic_file.h"
#include "core/check.h"
#include "core/keyed_permutation.h"
#include "core/random_streams.h"
#include "data/content_hash.h"
#include "data/utf8.h"

namespace gpt {

namespace fs = std::filesystem;

std::string default_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return (fs::path(xdg) / "gpt" / "datasets").string();
  if (const char* home = std::getenv("HOME"); home && *home)
    return (fs::path(home) / ".cache" / "gpt" / "datasets").string();
  return (fs::path(".gpt_cache") / "datasets").string();
}

namespace {

std::string absolute_path(const std::string& path) {
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(fs::absolute(path), ec);
  return ec ? fs::absolute(path).string() : canonical.string();
}

std::string describe_sizes(uint64_t before, uint64_t now) {
  return std::to_string(before) + " bytes, now " + std::to_string(now);
}

// Compares one group of sources; refreshes the recorded times of files whose content is unchanged.
std::string stale_group(std::vector<SourceFile>& recorded, const std::vector<SourceFile>& now, const char* key) {
  for (std::size_t i = 0; i < std::max(recorded.size(), now.size()); ++i) {
    if (i >= recorded.size()) return "new file " + now[i].path + " under " + key;
    if (i >= now.size() || recorded[i].path != now[i].path) return recorded[i].path + " is gone";
    SourceFile& before = recorded[i];
    if (before.size != now[i].size) return before.path + " changed (" + describe_sizes(before.size, now[i].size) + ")";
    if (before.mtime_ns == now[i].mtime_ns) continue;
    if (hash_source_file(now[i]) != before.hash) return before.path + " changed (same size, different content)";
    before.mtime_ns = now[i].mtime_ns;
  }
  return "";
}

}  // namespace

std::string cache_folder(const CorpusSpec& spec, const std::string& cache_dir) {
  nlohmann::ordered_json key = {{"format_version", kDatasetFormatVersion},
                                {"data_path", absolute_path(spec.data_path)},
                                {"val_data_path", spec.val_data_path.empty() ? "" : absolute_path(spec.val_data_path)},
                                {"vocab", to_string(spec.vocab)},
                                {"val_fraction", spec.val_fraction},
                                {"skip_invalid_files", spec.skip_invalid_files}};
  ContentHash hash;
  hash.update(key.dump());
  std::string name = fs::path(absolute_path(spec.data_path)).filename().string();
  if (name.empty()) name = "corpus";
  return (fs::path(cache_dir.empty() ? default_cache_dir() : cache_dir) /
          (name + "-" + to_string(spec.vocab) + "-" + hash.hex()))
      .string();
}

std::string stale_reason(const std::string& folder, const DatasetManifest& manifest, const CorpusSources& now) {
  DatasetManifest refreshed = manifest;
  std::string reason = stale_group(refreshed.train_sources, now.train, "data_path");
  if (reason.empty()) reason = stale_group(refreshed.val_sources, now.val, "val_data_path");
  if (reason.empty() && refreshed.to_json() != manifest.to_json())
    write_file_atomically((fs::path(folder) / kManifestName).string(), refreshed.to_json());
  return reason;
}

Dataset Dataset::open_prepared(const std::string& folder) {
  Dataset d;
  d.folder_ = folder;
  d.manifest_ = read_manifest(folder);
  const int bytes = token_bytes(d.manifest_.token_type);
  auto open_split = [&](const char* name, int64_t tokens, TokenFile& file, TokenView& view) {
    const std::string path = (fs::path(folder) / name).string();
    file = TokenFile(path);
    // Dividing, not multiplying: a hostile count times the width could wrap to the file's size.
    if (tokens < 0 || file.size() % bytes != 0 || file.size() / bytes != static_cast<uint64_t>(tokens))
      throw UserError(path + ": " + std::to_string(file.size()) + " bytes, but " + kManifestName + " says " +
                      std::to_string(tokens) + " " + to_string(d.manifest_.token_type) +
                      " tokens; the dataset is incomplete or was modified: prepare it again");
    view = TokenView(file, d.manifest_.token_type, tokens, d.manifest_.vocab.size());
  };
  open_split(kTrainTokensName, d.manifest_.train_tokens, d.train_file_, d.train_);
  open_split(kValTokensName, d.manifest_.val_tokens, d.val_file_, d.val_);
  return d;
}

Dataset Dataset::open(const CorpusSpec& spec, const std::string& cache_dir, const std::atomic<int>* stop_signal) {
  if (is_prepared_dataset(spec.data_path)) {
    if (!spec.val_data_path.empty())
      throw UserError("val_data_path: " + spec.data_path +
                      " is a prepared dataset, which has its validation split already; give val_data_path when "
                      "preparing it instead");
    return open_prepared(spec.data_path);
  }
  const CorpusSources sources = list_corpus_sources(spec);
  const std::string folder = cache_folder(spec, cache_dir);
  std::string reason = "not prepared yet";
  if (is_prepared_dataset(folder)) {
    try {
      reason = stale_reason(folder, read_manifest(folder), sources);
      if (reason.empty()) return open_prepared(folder);
    } catch (const UserError& e) {
      reason = e.what();
    }
  }
  spdlog::info("preparing {} into {} ({})", spec.data_path, folder, reason);
  prepare_dataset(spec, sources, folder, stop_signal);
  return open_prepared(folder);
}

namespace {

// Dataset ids to model ids, by symbol; UserError at the first symbol the model does not have.
void remap_tokens(TokenView from, const Vocab& from_vocab, const Vocab& to_vocab, const std::string& what,
                  std::vector<int32_t>& out) {
  std::vector<int32_t> map(static_cast<std::size_t>(from_vocab.size()));
  for (int id = 0; id < from_vocab.size(); ++id) {
    const std::optional<int32_t> to =
        from_vocab.kind() == to_vocab.kind() ? to_vocab.id_of(from_vocab.symbol(id)) : std::nullopt;
    map[static_cast<std::size_t>(id)] = to.value_or(-1);
  }
  out.resize(static_cast<std::size_t>(from.size()));
  from.copy(0, from.size(), out.data());
  for (std::size_t i = 0; i < out.size(); ++i) {
    GPT_CHECK(static_cast<uint32_t>(out[i]) < map.size(), "an unchecked id reached the vocabulary map");
    const int32_t to = map[static_cast<std::size_t>(out[i])];
    if (to < 0)
      throw UserError(what + ": " + (from_vocab.kind() == VocabKind::bytes ? "byte " : "character ") +
                      describe_code_point(from_vocab.symbol(out[i])) + " at position " + std::to_string(i) +
                      " is not in the model's vocabulary of " + std::to_string(to_vocab.size()) + " " +
                      to_vocab.token_noun());
    out[i] = to;
  }
}

}  // namespace

ModelTokens tokens_in_vocab(const std::string& path, const Vocab& vocab, const std::string& split) {
  ModelTokens tokens;
  if (is_prepared_dataset(path)) {
    tokens.dataset = std::make_unique<Dataset>(Dataset::open_prepared(path));
    const Dataset& d = *tokens.dataset;
    TokenView chosen;
    if (split == "train") {
      chosen = d.train();
    } else if (split == "val") {
      chosen = d.val();
    } else if (split == "all" && d.val().empty()) {
      chosen = d.train();
    } else if (split == "all") {
      // The two files are separate maps: join them in memory.
      std::vector<int32_t> joined = d.train().to_vector(0, d.train().size());
      const std::vector<int32_t> val = d.val().to_vector(0, d.val().size());
      joined.insert(joined.end(), val.begin(), val.end());
      tokens.ids = std::move(joined);
      chosen = TokenView(tokens.ids);
    } else {
      throw UserError("--split: expected train, val or all, got \"" + split + "\"");
    }
    tokens.description = "the " + split + " split of " + path;
    if (d.vocab() == vocab) {
      tokens.view = chosen;
      return tokens;
    }
    std::vector<int32_t> remapped;
    remap_tokens(chosen, d.vocab(), vocab, tokens.description, remapped);
    tokens.ids = std::move(remapped);
    tokens.view = TokenView(tokens.ids);
    return tokens;
  }
  for (const SourceFile& file : list_source_files(path, "--data")) {
    if (!tokens.ids.empty()) {
      const std::optional<int32_t> separator =
          vocab.kind() == VocabKind::bytes ? std::optional<int32_t>(kFileSeparator) : vocab.id_of(U'\n');
      if (!separator) throw UserError(path + ": files are joined with newlines, which the model's vocabulary lacks");
      tokens.ids.push_back(*separator);
    }
    const std::vector<int32_t> ids = vocab.encode(read_whole_file(file.path), file.path);
    tokens.ids.insert(tokens.ids.end(), ids.begin(), ids.end());
  }
  tokens.description = path;
  tokens.view = TokenView(tokens.ids);
  return tokens;
}

void Dataset::use_vocab(const Vocab& model_vocab, const std::string& what) {
  if (model_vocab == manifest_.vocab) return;
  remap_tokens(train_, manifest_.vocab, model_vocab, what + ": the train split", remapped_train_);
  remap_tokens(val_, manifest_.vocab, model_vocab, what + ": the val split", remapped_val_);
  train_ = TokenView(remapped_train_);
  val_ = TokenView(remapped_val_);
  manifest_.vocab = model_vocab;
}

void Dataset::check_fits(int64_t block_size, bool needs_val) const {
  auto check = [&](TokenView split, const char* name) {
    if (split.size() >= block_size + 1) return;
    const bool val = std::string(name) == "val";
    throw UserError(folder_ + ": the " + name + " split has " + std::to_string(split.size()) + " " +
                    vocab().token_noun() + ", fewer than block_size + 1 = " + std::to_string(block_size + 1) +
                    "; use a smaller block_size" + (val ? " or a larger val_fraction" : " or a smaller val_fraction") +
                    ", or a longer text");
  };
  check(train_, "train");
  if (needs_val) check(val_, "val");
}

namespace {

void size_batch(TokenView split, int64_t B, int64_t T, Batch& batch) {
  GPT_CHECK(split.size() >= T + 1, "split shorter than block_size + 1");
  batch.B = B;
  batch.T = T;
  batch.inputs.resize(static_cast<std::size_t>(B * T));
  batch.targets.resize(static_cast<std::size_t>(B * T));
}

void copy_window(TokenView split, int64_t offset, int64_t row, Batch& batch) {
  split.copy(offset, batch.T, batch.inputs.data() + row * batch.T);
  split.copy(offset + 1, batch.T, batch.targets.data() + row * batch.T);
}

}  // namespace

void Dataset::sample_batch(TokenView split, int64_t B, int64_t T, Rng& rng, Batch& batch) {
  size_batch(split, B, T, batch);
  for (int64_t b = 0; b < B; ++b)
    copy_window(split, static_cast<int64_t>(rng.below(static_cast<uint64_t>(split.size() - T))), b, batch);
}

void Dataset::epoch_batch(TokenView split, int64_t B, int64_t T, uint64_t seed, int64_t first_row, Batch& batch) {
  size_batch(split, B, T, batch);
  const int64_t windows = (split.size() - 1) / T;
  const int64_t slack = split.size() - 1 - windows * T;  // (n - 1) mod T: the grid's offsets are 0 .. slack
  for (int64_t b = 0; b < B; ++b) {
    const int64_t row = first_row + b, epoch = row / windows;
    const auto grid =
        static_cast<int64_t>(train_epoch_grid_stream(seed, epoch).below(static_cast<uint64_t>(slack + 1)));
    const KeyedPermutation order(train_epoch_order_key(seed, epoch), static_cast<uint64_t>(windows));
    copy_window(split, grid + static_cast<int64_t>(order(static_cast<uint64_t>(row % windows))) * T, b, batch);
  }
}

}  // namespace gpt
