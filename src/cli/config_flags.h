// Every TrainConfig key as a command-line flag (--n_layer 4 ...) overriding the config file;
// shared by `gpt train` and `gpt bench`.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>

namespace gpt {

struct ConfigFlags {
  std::map<std::string, CLI::Option*> flags;
  std::map<std::string, std::string> values;
  // The flags the user gave, key -> text.
  std::map<std::string, std::string> given() const;
};

void add_config_flags(CLI::App* app, ConfigFlags& flags);

}  // namespace gpt
