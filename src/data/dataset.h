// Dataset: the token ids of a run's training and validation splits, read window by window from a prepared
// dataset (see dataset_manifest.h), and nanoGPT's get_batch (random windows of block_size + 1).
// data_path may name a prepared dataset (used as it is), a text file or a folder of text files:
// those are prepared once into a cache folder and reused while the sources are unchanged.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/rng.h"
#include "data/dataset_manifest.h"
#include "data/prepare.h"
#include "data/token_file.h"
#include "data/vocab.h"

namespace gpt {

struct Batch {
  std::vector<int32_t> inputs;   // [B, T]
  std::vector<int32_t> targets;  // [B, T], inputs shifted by one
  int64_t B = 0, T = 0;
};

// $XDG_CACHE_HOME/gpt/datasets, else $HOME/.cache/gpt/datasets, else .gpt_cache/datasets.
std::string default_cache_dir();

class Dataset {
 public:
  // The dataset data_path names; text is prepared into (or reused from) cache_dir ("" = default),
  // stopping early (see prepare_dataset) when *stop_signal becomes non-zero.
  static Dataset open(const CorpusSpec& spec, const std::string& cache_dir,
                      const std::atomic<int>* stop_signal = nullptr);
  // A prepared dataset folder; UserError when it is missing or incomplete.
  static Dataset open_prepared(const std::string& folder);

  const Vocab& vocab() const { return manifest_.vocab; }
  TokenView train() const { return train_; }
  TokenView val() const { return val_; }
  const DatasetManifest& manifest() const { return manifest_; }
  const std::string& folder() const { return folder_; }

  // Reads the ids in `model_vocab`'s ids (a model trained on other text: fine-tuning, or resuming
  // it): the splits are remapped into memory (4 bytes per token) unless the vocabularies are the
  // same. UserError "<what>: character X at position N of the train split is not in the model's
  // vocabulary" for a character the model lacks.
  void use_vocab(const Vocab& model_vocab, const std::string& what);

  // UserError when a split (val only when it is used) is shorter than block_size + 1.
  void check_fits(int64_t block_size, bool needs_val) const;

  // Fills `batch` with B windows at offsets drawn from `rng` (uniform in [0, n - T - 1]).
  static void sample_batch(TokenView split, int64_t B, int64_t T, Rng& rng, Batch& batch);
  // Fills `batch` with rows first_row .. first_row + B - 1 of data_order "epochs"'s sequence of
  // windows for `seed` (row r is in epoch r / W).
  static void epoch_batch(TokenView split, int64_t B, int64_t T, uint64_t seed, int64_t first_row, Batch& batch);

 private:
  std::string folder_;
  DatasetManifest manifest_;
  TokenFile train_file_, val_file_;
  std::vector<int32_t> remapped_train_, remapped_val_;
  TokenView train_, val_;
};

// A text as a model's token ids, for evaluation and inspection: either a prepared dataset's split,
// viewed in place when its vocabulary is the model's, or ids encoded into `ids`.
struct ModelTokens {
  std::unique_ptr<Dataset> dataset;
  std::vector<int32_t> ids;
  TokenView view;
  std::string description;  // "the val split of DIR" or the path
};
// `path` is a prepared dataset (its `split`: "train", "val" or "all") or a text file or folder
// (all of it, files joined as for training). UserError naming the file and position for a
// character outside `vocab`.
ModelTokens tokens_in_vocab(const std::string& path, const Vocab& vocab, const std::string& split);

// The folder a text corpus is prepared into: named after the source, keyed by its absolute path
// and every setting that changes the tokens.
std::string cache_folder(const CorpusSpec& spec, const std::string& cache_dir);

// Why the dataset prepared in `folder` from `manifest` no longer matches the sources now listed,
// or "" when it does (a source whose time changed but whose content did not still matches).
std::string stale_reason(const std::string& folder, const DatasetManifest& manifest, const CorpusSources& now);

}  // namespace gpt
