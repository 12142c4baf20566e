#include "data/dataset.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/check.h"
#include "data/utf8.h"

namespace gpt {

std::vector<char32_t> read_text_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UserError(path + ": is a directory, expected a UTF-8 text file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open for reading (does it exist?)");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw UserError(path + ": read error", 1);
  const std::string bytes = buffer.str();
  if (bytes.empty()) throw UserError(path + ": file is empty");
  std::vector<char32_t> text;
  Utf8Error error;
  if (!decode_utf8(bytes, text, error))
    throw UserError(path + ": invalid UTF-8 at byte offset " + std::to_string(error.byte_offset) + " (" + error.reason +
                    ")");
  return text;
}

Dataset::Dataset(const std::string& path, double val_fraction, int64_t block_size) {
  const std::vector<char32_t> text = read_text_file(path);
  vocab_ = Vocab::from_text(text);
  const std::vector<int32_t> ids = vocab_.encode(text, path);
  const auto n = static_cast<int64_t>(ids.size());
  const auto n_train = static_cast<int64_t>(static_cast<double>(n) * (1.0 - val_fraction));
  train_.assign(ids.begin(), ids.begin() + n_train);
  val_.assign(ids.begin() + n_train, ids.end());
  auto check_split = [&](const std::vector<int32_t>& split, const char* name) {
    if (static_cast<int64_t>(split.size()) < block_size + 1)
      throw UserError(path + ": the " + std::string(name) + " split has " + std::to_string(split.size()) +
                      " characters, fewer than block_size + 1 = " + std::to_string(block_size + 1) +
                      "; use a smaller block_size" +
                      (std::string(name) == "val" ? " or a larger val_fraction" : " or a smaller val_fraction") +
                      ", or a longer text");
  };
  check_split(train_, "train");
  if (val_fraction > 0) check_split(val_, "val");
}

void Dataset::sample_batch(const std::vector<int32_t>& split, int64_t B, int64_t T, Rng& rng, Batch& batch) {
  const auto n = static_cast<int64_t>(split.size());
  GPT_CHECK(n >= T + 1, "split shorter than block_size + 1");
  batch.B = B;
  batch.T = T;
  batch.inputs.resize(B * T);
  batch.targets.resize(B * T);
  for (int64_t b = 0; b < B; ++b) {
    const auto offset = static_cast<int64_t>(rng.below(static_cast<uint64_t>(n - T)));
    for (int64_t t = 0; t < T; ++t) {
      batch.inputs[b * T + t] = split[offset + t];
      batch.targets[b * T + t] = split[offset + t + 1];
    }
  }
}

}  // namespace gpt
