#include "cli/config_flags.h"

#include <nlohmann/json.hpp>

#include "train/train_config.h"

namespace gpt {

std::map<std::string, std::string> ConfigFlags::given() const {
  std::map<std::string, std::string> out;
  for (const auto& [key, flag] : flags)
    if (flag->count() > 0) out[key] = values.at(key);
  return out;
}

void add_config_flags(CLI::App* app, ConfigFlags& config_flags) {
  auto* group = app->add_option_group("config keys", "Every config key, overriding the file");
  TrainConfig defaults;
  const nlohmann::ordered_json default_values = to_json(defaults);
  for (const ConfigKey& key : config_keys()) {
    const char* type = std::visit(
        [&](auto field) {
          using T = std::remove_reference_t<decltype(field(defaults))>;
          if constexpr (std::is_same_v<T, int64_t>)
            return "INT";
          else if constexpr (std::is_same_v<T, double>)
            return "FLOAT";
          else if constexpr (std::is_same_v<T, bool>)
            return "BOOL";
          else if constexpr (std::is_same_v<T, Duration>)
            return "DURATION";
          else
            return "TEXT";
        },
        key.member);
    const std::string range = range_text(key);
    const std::string help = std::string(key.help) + " (default " + default_values[key.name].dump() +
                             (range.empty() ? "" : ", range " + range) + ")";
    config_flags.flags[key.name] = group->add_option(std::string("--") + key.name, config_flags.values[key.name], help)
                                       ->type_name(type)
                                       ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // the last one wins
  }
}

}  // namespace gpt
