// Vocabulary: the sorted set of Unicode code points of a text, id = rank in that order
// (nanoGPT's shakespeare_char prepare.py does the same, so ids match).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpt {

class Vocab {
 public:
  Vocab() = default;
  static Vocab from_text(const std::vector<char32_t>& text);
  static Vocab from_code_points(std::vector<char32_t> sorted_unique);

  int size() const { return static_cast<int>(chars_.size()); }
  char32_t code_point(int id) const { return chars_[id]; }
  std::optional<int32_t> id_of(char32_t cp) const;
  const std::vector<char32_t>& code_points() const { return chars_; }

  // JSON array of one-character strings in id order (the checkpoint's "vocab" metadata).
  std::string to_json() const;
  // Throws UserError naming `source` when the JSON is not an array of distinct single characters.
  static Vocab from_json(std::string_view json, const std::string& source);

  // Encodes text to ids; the first character outside the vocabulary throws UserError naming it
  // and its position (character index) in `what`.
  std::vector<int32_t> encode(const std::vector<char32_t>& text, const std::string& what) const;
  std::string decode(int32_t id) const;

 private:
  std::vector<char32_t> chars_;  // sorted, unique
};

}  // namespace gpt
