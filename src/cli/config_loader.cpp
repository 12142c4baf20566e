#include "cli/config_loader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/check.h"

namespace gpt {

namespace {

const ConfigKey* find_key(const std::string& name) {
  for (const ConfigKey& key : config_keys())
    if (name == key.name) return &key;
  return nullptr;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string type_name(const nlohmann::json& v) {
  if (v.is_number_integer()) return "integer " + v.dump();
  if (v.is_number()) return "number " + v.dump();
  if (v.is_string()) return "string " + v.dump();
  if (v.is_boolean()) return "boolean " + v.dump();
  if (v.is_null()) return "null";
  return std::string(v.type_name());
}

// A typed setting from its text, or the error naming the key and what it takes.
template <class T>
T parse_typed(const ConfigKey& key, const std::string& text, const std::string& source) {
  std::optional<T> value = Setting<T>::parse(text);
  if (!value)
    throw UserError(source + ": key \"" + key.name + "\": expected " + Setting<T>::expected + ", got \"" + text + "\"");
  return *value;
}

void set_from_json(TrainConfig& config, const ConfigKey& key, const nlohmann::json& v, const std::string& source) {
  auto wrong = [&](const char* expected) {
    throw UserError(source + ": key \"" + key.name + "\": expected " + expected + ", got " + type_name(v));
  };
  std::visit(
      [&](auto field) {
        auto& target = field(config);
        using T = std::remove_reference_t<decltype(target)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          if (v.is_number_integer())
            target = v.get<int64_t>();
          else if (v.is_number_float() && std::nearbyint(v.get<double>()) == v.get<double>() &&
                   std::fabs(v.get<double>()) < 9e15)
            target = static_cast<int64_t>(v.get<double>());  // 5000.0 is fine, 0.5 is not
          else
            wrong("an integer");
        } else if constexpr (std::is_same_v<T, double>) {
          if (!v.is_number()) wrong("a number");
          target = v.get<double>();
        } else if constexpr (std::is_same_v<T, bool>) {
          if (!v.is_boolean()) wrong("true or false");
          target = v.get<bool>();
        } else if constexpr (std::is_same_v<T, std::string>) {
          if (!v.is_string()) wrong("a string");
          target = v.get<std::string>();
        } else {
          if (!v.is_string()) wrong(Setting<T>::expected);
          target = parse_typed<T>(key, v.get<std::string>(), source);
        }
      },
      key.member);
  if (const std::string problem = range_problem(key, config); !problem.empty())
    throw UserError(source + ": key \"" + key.name + "\": " + problem + ", got " + type_name(v));
}

void set_from_text(TrainConfig& config, const ConfigKey& key, const std::string& text) {
  const std::string source = std::string("command line: --") + key.name;
  auto wrong = [&](const char* expected) {
    throw UserError(source + ": key \"" + key.name + "\": expected " + expected + ", got \"" + text + "\"");
  };
  std::visit(
      [&](auto field) {
        auto& target = field(config);
        using T = std::remove_reference_t<decltype(target)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          int64_t value = 0;
          auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
          if (ec != std::errc() || end != text.data() + text.size()) wrong("an integer");
          target = value;
        } else if constexpr (std::is_same_v<T, double>) {
          char* end = nullptr;
          const double value = std::strtod(text.c_str(), &end);
          if (text.empty() || *end != '\0' || !std::isfinite(value)) wrong("a number");
          target = value;
        } else if constexpr (std::is_same_v<T, bool>) {
          if (text == "true" || text == "1")
            target = true;
          else if (text == "false" || text == "0")
            target = false;
          else
            wrong("true or false");
        } else if constexpr (std::is_same_v<T, std::string>) {
          target = text;
        } else {
          std::optional<T> value = Setting<T>::parse(text);
          if (!value) wrong(Setting<T>::expected);
          target = *value;
        }
      },
      key.member);
  if (const std::string problem = range_problem(key, config); !problem.empty())
    throw UserError(source + ": key \"" + key.name + "\": " + problem + ", got \"" + text + "\"");
}

// Line and column (1-based) of a byte offset, for JSON syntax errors.
std::pair<std::size_t, std::size_t> line_and_column(const std::string& text, std::size_t offset) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < std::min(offset, text.size()); ++i) {
    if (text[i] == '\n')
      ++line, column = 1;
    else
      ++column;
  }
  return {line, column};
}

}  // namespace

std::string nearest_config_key(const std::string& name) {
  std::string best;
  std::size_t best_distance = SIZE_MAX;
  for (const ConfigKey& key : config_keys()) {
    const std::size_t d = edit_distance(name, key.name);
    if (d < best_distance) best_distance = d, best = key.name;
  }
  return best;
}

TrainConfig parse_train_config(const std::string& text, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is one past the offending character.
    const auto [line, column] = line_and_column(text, e.byte > 0 ? e.byte - 1 : 0);
    std::string what = e.what();
    const auto colon = what.rfind(": ");
    throw UserError(source + ":" + std::to_string(line) + ":" + std::to_string(column) +
                    ": invalid JSON: " + (colon == std::string::npos ? what : what.substr(colon + 2)));
  } catch (const nlohmann::json::exception& e) {
    // Found by fuzzing: a number too large for a double (1e99999) is out_of_range, not a
    // parse_error, and carries no position.
    std::string what = e.what();
    const auto bracket = what.find("] ");
    throw UserError(source + ": invalid JSON: " + (bracket == std::string::npos ? what : what.substr(bracket + 2)));
  }
  if (!j.is_object())
    throw UserError(source + ": expected a JSON object of settings, got " + std::string(j.type_name()));
  TrainConfig config;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const ConfigKey* key = find_key(it.key());
    if (!key)
      throw UserError(source + ": unknown key \"" + it.key() + "\" (did you mean \"" + nearest_config_key(it.key()) +
                      "\"?)");
    set_from_json(config, *key, it.value(), source);
  }
  return config;
}

TrainConfig load_train_config(const std::string& path, const std::map<std::string, std::string>& overrides) {
  TrainConfig config;
  if (!path.empty()) {
    std::string text;
    try {
      text = read_whole_file(path);
    } catch (const UserError& e) {
      throw UserError(e.what());  // a config the user named is input: exit 2
    }
    config = parse_train_config(text, path);
  }
  std::map<std::string, std::string> origin;
  for (const ConfigKey& key : config_keys()) origin[key.name] = path.empty() ? "defaults" : path;
  for (const auto& [name, text] : overrides) {
    const ConfigKey* key = find_key(name);
    GPT_CHECK(key != nullptr, "flag for unknown key " + name);
    set_from_text(config, *key, text);
    origin[name] = "command line: --" + name;
  }
  const ConfigProblem problem = find_config_problem(config);
  if (!problem.key.empty()) {
    nlohmann::ordered_json all = to_json(config);
    throw UserError(origin[problem.key] + ": key \"" + problem.key + "\" = " + all[problem.key].dump() + " " +
                    problem.message);
  }
  return config;
}

}  // namespace gpt
