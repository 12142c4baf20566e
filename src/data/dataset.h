// Dataset: a UTF-8 text file as token ids, split into train (first 1 - val_fraction of the
// characters) and val (the rest), and nanoGPT's get_batch: random windows of block_size + 1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"
#include "data/vocab.h"

namespace gpt {

// Reads a whole UTF-8 text file; UserError (exit 2) when missing, a directory, empty or invalid.
std::vector<char32_t> read_text_file(const std::string& path);

struct Batch {
  std::vector<int32_t> inputs;   // [B, T]
  std::vector<int32_t> targets;  // [B, T], inputs shifted by one
  int64_t B = 0, T = 0;
};

class Dataset {
 public:
  // Builds the vocabulary from the whole text (as nanoGPT's prepare.py) and splits it.
  Dataset(const std::string& path, double val_fraction, int64_t block_size);

  const Vocab& vocab() const { return vocab_; }
  const std::vector<int32_t>& train() const { return train_; }
  const std::vector<int32_t>& val() const { return val_; }

  // Fills `batch` with B windows at offsets drawn from `rng` (uniform in [0, n - T - 1]).
  static void sample_batch(const std::vector<int32_t>& split, int64_t B, int64_t T, Rng& rng, Batch& batch);

 private:
  Vocab vocab_;
  std::vector<int32_t> train_, val_;
};

}  // namespace gpt
