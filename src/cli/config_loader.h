// Loads a TrainConfig from a JSON file plus command-line overrides (every key is also a flag).
// Problems are caught before any work starts and reported as one UserError (exit 2) naming the
// file and key: invalid JSON (line and column), an unknown key (with the nearest valid name),
// a wrong type, an out-of-range value.
#pragma once

#include <map>
#include <string>

#include "train/train_config.h"

namespace gpt {

// `overrides` maps key -> the flag's text as typed (e.g. "max_iters" -> "100").
TrainConfig load_train_config(const std::string& path, const std::map<std::string, std::string>& overrides);

// Parses JSON text into a TrainConfig on top of defaults; `source` names the file in messages.
TrainConfig parse_train_config(const std::string& text, const std::string& source);

// The valid key closest to `name` by edit distance.
std::string nearest_config_key(const std::string& name);

}  // namespace gpt
