// Vocabulary. Two kinds:
//  - chars: the sorted set of Unicode code points of a text, id = rank in that order (nanoGPT's
//    shakespeare_char prepare.py does the same, so ids match); the text must be valid UTF-8.
//  - bytes: the 256 byte values, id = byte; any file, including invalid UTF-8 or binary data
//    (enwik8-style character models).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpt {

enum class VocabKind { chars, bytes };
const char* to_string(VocabKind kind);
// "chars" or "bytes"; UserError naming `what` otherwise.
VocabKind parse_vocab_kind(const std::string& text, const std::string& what);

class Vocab {
 public:
  Vocab() = default;
  static Vocab from_text(const std::vector<char32_t>& text);
  static Vocab from_code_points(std::vector<char32_t> sorted_unique);
  static Vocab bytes();

  VocabKind kind() const { return kind_; }
  int size() const { return static_cast<int>(symbols_.size()); }
  // The symbol of an id: a code point (chars) or a byte value (bytes).
  char32_t symbol(int id) const { return symbols_[id]; }
  const std::vector<char32_t>& symbols() const { return symbols_; }
  std::optional<int32_t> id_of(char32_t symbol) const;
  // "characters" or "bytes": what a token is, for messages.
  const char* token_noun() const { return kind_ == VocabKind::bytes ? "bytes" : "characters"; }
  const char* token_unit() const { return kind_ == VocabKind::bytes ? "byte" : "char"; }
  bool operator==(const Vocab& other) const { return kind_ == other.kind_ && symbols_ == other.symbols_; }

  // The checkpoint's "vocab" metadata: a JSON array of one-character strings in id order, or the
  // string "bytes".
  std::string to_json() const;
  // Throws UserError naming `source` when the JSON is neither.
  static Vocab from_json(std::string_view json, const std::string& source);

  // Encodes text (UTF-8 for chars, any bytes for bytes) to ids; invalid UTF-8 or the first
  // character outside the vocabulary throws UserError naming it and its position in `what`.
  std::vector<int32_t> encode(std::string_view text, const std::string& what) const;
  std::vector<int32_t> encode(const std::vector<char32_t>& text, const std::string& what) const;
  // An id's text: the UTF-8 of its character, or its byte.
  std::string decode(int32_t id) const;
  // The listing for an "is not in the vocabulary" message: 'a' 'b' '\n' ...
  std::string listing() const;

 private:
  VocabKind kind_ = VocabKind::chars;
  std::vector<char32_t> symbols_;  // sorted, unique
};

}  // namespace gpt
