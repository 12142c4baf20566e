#include "data/vocab.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "data/utf8.h"

namespace gpt {

Vocab Vocab::from_text(const std::vector<char32_t>& text) {
  std::vector<char32_t> chars(text);
  std::sort(chars.begin(), chars.end());
  chars.erase(std::unique(chars.begin(), chars.end()), chars.end());
  return from_code_points(std::move(chars));
}

Vocab Vocab::from_code_points(std::vector<char32_t> sorted_unique) {
  Vocab v;
  v.chars_ = std::move(sorted_unique);
  return v;
}

std::optional<int32_t> Vocab::id_of(char32_t cp) const {
  auto it = std::lower_bound(chars_.begin(), chars_.end(), cp);
  if (it == chars_.end() || *it != cp) return std::nullopt;
  return static_cast<int32_t>(it - chars_.begin());
}

std::string Vocab::to_json() const {
  nlohmann::json array = nlohmann::json::array();
  for (char32_t cp : chars_) array.push_back(encode_utf8(cp));
  return array.dump();
}

Vocab Vocab::from_json(std::string_view json, const std::string& source) {
  nlohmann::json parsed = nlohmann::json::parse(json, nullptr, false);
  if (!parsed.is_array()) throw UserError(source + ": vocab metadata is not a JSON array", 1);
  std::vector<char32_t> chars;
  for (const auto& item : parsed) {
    std::vector<char32_t> decoded;
    Utf8Error error;
    if (!item.is_string() || !decode_utf8(item.get<std::string>(), decoded, error) || decoded.size() != 1)
      throw UserError(source + ": vocab entry " + std::to_string(chars.size()) + " is not a single character", 1);
    chars.push_back(decoded[0]);
  }
  if (chars.empty()) throw UserError(source + ": vocab is empty", 1);
  for (std::size_t i = 1; i < chars.size(); ++i)
    if (chars[i] <= chars[i - 1]) throw UserError(source + ": vocab is not sorted and unique", 1);
  return from_code_points(std::move(chars));
}

std::vector<int32_t> Vocab::encode(const std::vector<char32_t>& text, const std::string& what) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto id = id_of(text[i]);
    if (!id)
      throw UserError(what + ": character " + describe_code_point(text[i]) + " at position " + std::to_string(i) +
                      " is not in the model's vocabulary of " + std::to_string(size()) + " characters");
    ids.push_back(*id);
  }
  return ids;
}

std::string Vocab::decode(int32_t id) const { return encode_utf8(chars_.at(static_cast<std::size_t>(id))); }

}  // namespace gpt
