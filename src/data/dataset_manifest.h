// A prepared dataset is a folder of three files: train.bin and val.bin (token ids, see
// token_file.h) and meta.json, this manifest: the vocabulary, the token type and counts, how the
// split was made and the sources it was made from. meta.json is written last, so a folder
// without it (or whose .bin sizes disagree with it) is an unfinished preparation, never used.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/text_sources.h"
#include "data/token_file.h"
#include "data/vocab.h"

namespace gpt {

inline constexpr int kDatasetFormatVersion = 1;
inline constexpr const char* kManifestName = "meta.json";
inline constexpr const char* kTrainTokensName = "train.bin";
inline constexpr const char* kValTokensName = "val.bin";

struct DatasetManifest {
  Vocab vocab;
  TokenType token_type = TokenType::u8;
  int64_t train_tokens = 0, val_tokens = 0;
  double val_fraction = 0.1;  // how the split was made; unused when val_sources is not empty
  std::vector<SourceFile> train_sources, val_sources;
  std::string content_hash;  // XXH64 over the sources' hashes, in order
  std::string prepared_at;   // UTC, ISO 8601

  std::string to_json() const;
  // UserError (exit 2) naming `path` when it is not a manifest of this format version.
  static DatasetManifest from_json(const std::string& text, const std::string& path);
};

// True when `folder` holds a meta.json (a prepared dataset, complete or not).
bool is_prepared_dataset(const std::string& folder);
DatasetManifest read_manifest(const std::string& folder);

}  // namespace gpt
