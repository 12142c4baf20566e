// libFuzzer target: the safetensors reader and the checkpoint metadata parsers on arbitrary bytes.
// Any input must either load or raise UserError; never crash, hang or touch memory it should not.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/check.h"
#include "data/vocab.h"
#include "io/safetensors.h"
#include "model/gpt_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    gpt::SafetensorsReader reader(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    for (const auto& [name, entry] : reader.entries()) {
      if (entry.shape.size() > gpt::Shape::kMaxRank) continue;
      gpt::Shape shape;
      for (int64_t d : entry.shape) shape.dims[shape.rank++] = d;
      std::vector<float> out(static_cast<std::size_t>(shape.numel()));
      reader.read_into(name, shape, out.data());
    }
    if (reader.has_metadata("vocab")) gpt::Vocab::from_json(reader.metadata("vocab"), "fuzz");
    if (reader.has_metadata("config")) {
      auto j = nlohmann::json::parse(reader.metadata("config"), nullptr, false);
      if (!j.is_discarded()) gpt::GptConfig::from_json(j, "fuzz");
    }
  } catch (const gpt::UserError&) {
  }
  return 0;
}
