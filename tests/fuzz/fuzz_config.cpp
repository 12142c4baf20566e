// libFuzzer target: the training config parser and validator on arbitrary text.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cli/config_loader.h"
#include "core/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const gpt::TrainConfig config =
        gpt::parse_train_config(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    gpt::find_config_problem(config);
  } catch (const gpt::UserError&) {
  }
  return 0;
}
