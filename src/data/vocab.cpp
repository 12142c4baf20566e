#include "data/vocab.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "data/utf8.h"

namespace gpt {

const char* to_string(VocabKind kind) { return kind == VocabKind::bytes ? "bytes" : "chars"; }

VocabKind parse_vocab_kind(const std::string& text, const std::string& what) {
  if (text == "chars") return VocabKind::chars;
  if (text == "bytes") return VocabKind::bytes;
  throw UserError(what + ": expected \"chars\" or \"bytes\", got \"" + text + "\"");
}

Vocab Vocab::from_text(const std::vector<char32_t>& text) {
  std::vector<char32_t> chars(text);
  std::sort(chars.begin(), chars.end());
  chars.erase(std::unique(chars.begin(), chars.end()), chars.end());
  return from_code_points(std::move(chars));
}

Vocab Vocab::from_code_points(std::vector<char32_t> sorted_unique) {
  Vocab v;
  v.symbols_ = std::move(sorted_unique);
  return v;
}

Vocab Vocab::bytes() {
  Vocab v;
  v.kind_ = VocabKind::bytes;
  for (char32_t b = 0; b < 256; ++b) v.symbols_.push_back(b);
  return v;
}

std::optional<int32_t> Vocab::id_of(char32_t symbol) const {
  auto it = std::lower_bound(symbols_.begin(), symbols_.end(), symbol);
  if (it == symbols_.end() || *it != symbol) return std::nullopt;
  return static_cast<int32_t>(it - symbols_.begin());
}

std::string Vocab::to_json() const {
  if (kind_ == VocabKind::bytes) return nlohmann::json("bytes").dump();
  nlohmann::json array = nlohmann::json::array();
  for (char32_t cp : symbols_) array.push_back(encode_utf8(cp));
  return array.dump();
}

Vocab Vocab::from_json(std::string_view json, const std::string& source) {
  nlohmann::json parsed = nlohmann::json::parse(json, nullptr, false);
  if (parsed.is_string() && parsed.get<std::string>() == "bytes") return bytes();
  if (!parsed.is_array())
    throw UserError(source + ": vocab metadata is neither a JSON array nor \"bytes\"", ExitCode::runtime);
  std::vector<char32_t> chars;
  for (const auto& item : parsed) {
    std::vector<char32_t> decoded;
    Utf8Error error;
    if (!item.is_string() || !decode_utf8(item.get<std::string>(), decoded, error) || decoded.size() != 1)
      throw UserError(source + ": vocab entry " + std::to_string(chars.size()) + " is not a single character",
                      ExitCode::runtime);
    chars.push_back(decoded[0]);
  }
  if (chars.empty()) throw UserError(source + ": vocab is empty", ExitCode::runtime);
  for (std::size_t i = 1; i < chars.size(); ++i)
    if (chars[i] <= chars[i - 1]) throw UserError(source + ": vocab is not sorted and unique", ExitCode::runtime);
  return from_code_points(std::move(chars));
}

std::vector<int32_t> Vocab::encode(std::string_view text, const std::string& what) const {
  if (kind_ == VocabKind::bytes) {
    std::vector<int32_t> ids(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
    return ids;
  }
  std::vector<char32_t> chars;
  Utf8Error error;
  if (!decode_utf8(text, chars, error))
    throw UserError(what + ": invalid UTF-8 at byte offset " + std::to_string(error.byte_offset) + " (" + error.reason +
                    ")");
  return encode(chars, what);
}

std::vector<int32_t> Vocab::encode(const std::vector<char32_t>& text, const std::string& what) const {
  GPT_CHECK(kind_ == VocabKind::chars, "code points given to a byte vocabulary");
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

std::string Vocab::decode(int32_t id) const {
  const char32_t symbol = symbols_.at(static_cast<std::size_t>(id));
  if (kind_ == VocabKind::bytes) return std::string(1, static_cast<char>(symbol));
  return encode_utf8(symbol);
}

std::string Vocab::listing() const {
  if (kind_ == VocabKind::bytes) return "all 256 byte values";
  std::string s;
  for (char32_t cp : symbols_) {
    if (!s.empty()) s += ' ';
    s += describe_code_point(cp);
  }
  return s;
}

}  // namespace gpt
