// libFuzzer target: opening a prepared dataset (meta.json, train.bin, val.bin) and reading its
// tokens, as training, evaluation and fine-tuning on another vocabulary do. Input layout:
// [u16 meta length][meta.json][u16 train.bin length][train.bin][val.bin: the rest]. Any input
// must either open and read or raise UserError; never crash or read outside the files.
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "core/check.h"
#include "data/dataset.h"

namespace {

// One folder per process, rewritten for every input.
const std::string& fuzz_folder() {
  static const std::string folder = [] {
    spdlog::set_level(spdlog::level::off);
    char name[] = "/tmp/gpt-fuzz-dataset-XXXXXX";
    return std::string(::mkdtemp(name));
  }();
  return folder;
}

// The next field: a little-endian u16 length, then that many bytes (fewer at the input's end).
std::string take_field(const uint8_t*& data, size_t& size) {
  size_t length = size;
  if (size >= 2) {
    length = std::min<size_t>(data[0] | (data[1] << 8), size - 2);
    data += 2;
    size -= 2;
  }
  std::string field(reinterpret_cast<const char*>(data), length);
  data += length;
  size -= length;
  return field;
}

void write(const std::string& name, const std::string& bytes) {
  std::ofstream(fuzz_folder() + "/" + name, std::ios::binary | std::ios::trunc) << bytes;
}

void read_everything(const gpt::Dataset& d) {
  d.train().to_vector(0, d.train().size());
  d.val().to_vector(0, d.val().size());
  if (d.train().size() < 9) return;
  gpt::Rng rng(1);
  gpt::Batch batch;
  gpt::Dataset::sample_batch(d.train(), 2, 8, rng, batch);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string meta = take_field(data, size);
  write(gpt::kTrainTokensName, take_field(data, size));
  write(gpt::kValTokensName, std::string(reinterpret_cast<const char*>(data), size));
  write(gpt::kManifestName, meta);
  try {
    gpt::Dataset d = gpt::Dataset::open_prepared(fuzz_folder());
    read_everything(d);
    // Fine-tuning a model with one more character: every id goes through the remapping table.
    std::vector<char32_t> symbols = d.vocab().symbols();
    symbols.push_back(symbols.empty() ? U'a' : symbols.back() + 1);
    if (d.vocab().kind() == gpt::VocabKind::chars) d.use_vocab(gpt::Vocab::from_code_points(symbols), "fuzz");
    read_everything(d);
  } catch (const gpt::UserError&) {
  }
  return 0;
}
