// Prints the Markdown table of `gpt train`'s config keys (key, type, default, range, description)
// that docs/training.md holds between its config-keys markers. Built from the same two sources as
// `gpt train --help` and config.json: config_keys() for the names, ranges and help texts, and
// to_json(TrainConfig{}) for the defaults, whose JSON type names the type, so it does not depend
// on the members' C++ types. Run by tools/config_keys_table.sh (a CMake target outside `all`).
//   config_keys_table
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "train/train_config.h"

namespace {

std::string json_type(const nlohmann::ordered_json& value) {
  if (value.is_boolean()) return "boolean";
  if (value.is_number_integer()) return "integer";
  if (value.is_number()) return "number";
  if (value.is_string()) return "string";
  return value.type_name();
}

// A table cell holds no raw `|` or line break.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

}  // namespace

int main() {
  const nlohmann::ordered_json defaults = gpt::to_json(gpt::TrainConfig{});
  std::printf("| key | type | default | range | description |\n| --- | --- | --- | --- | --- |\n");
  for (const gpt::ConfigKey& key : gpt::config_keys()) {
    if (!defaults.contains(key.name)) {
      std::fprintf(stderr, "config_keys_table: key \"%s\" has no default in to_json(TrainConfig{})\n", key.name);
      return 1;
    }
    const nlohmann::ordered_json& value = defaults.at(key.name);
    const std::string range = gpt::range_text(key);
    std::printf("| `%s` | %s | `%s` | %s | %s |\n", key.name, json_type(value).c_str(), cell(value.dump()).c_str(),
                range.empty() ? "" : ("`" + range + "`").c_str(), cell(key.help).c_str());
  }
  return 0;
}
