// UTF-8 decoding and encoding of Unicode code points. Decoding is strict: overlong forms,
// surrogates, code points above U+10FFFF and truncated sequences are errors that name the byte
// offset, so a binary or mis-encoded file is reported rather than trained on.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace gpt {

struct Utf8Error {
  std::size_t byte_offset;
  std::string reason;
  bool truncated = false;  // the input ended before the sequence its lead byte announced
};

// Decodes the sequences of `bytes` that start in [begin, cut), calling visit(code_point) for each;
// the last may end past `cut` (so input read in blocks is decoded a block at a time: cut = size - 3
// except at the end of the input). Returns where decoding stopped (the first sequence start at or
// after `cut`), or kUtf8Invalid with `error` at the first invalid sequence.
inline constexpr std::size_t kUtf8Invalid = static_cast<std::size_t>(-1);
template <class Visit>
std::size_t decode_utf8_sequences(std::string_view bytes, std::size_t begin, std::size_t cut, Visit&& visit,
                                  Utf8Error& error);

// Decodes all of `bytes`; returns false and fills `error` at the first invalid sequence.
bool decode_utf8(std::string_view bytes, std::vector<char32_t>& out, Utf8Error& error);

// Makes a byte stream printable: valid UTF-8 passes through, each byte of an invalid sequence
// becomes U+FFFD, and a sequence split between pieces waits for its end.
class Utf8Repair {
 public:
  std::string push(std::string_view bytes);
  std::string finish();  // what is still waiting, as U+FFFD

 private:
  std::string pending_;
};
void append_utf8(char32_t code_point, std::string& out);
std::string encode_utf8(char32_t code_point);
// A printable description for messages: 'a', '\n', U+0007.
std::string describe_code_point(char32_t code_point);

template <class Visit>
std::size_t decode_utf8_sequences(std::string_view bytes, std::size_t begin, std::size_t cut, Visit&& visit,
                                  Utf8Error& error) {
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  std::size_t i = begin;
  while (i < cut) {
    if (i + 8 <= cut) {  // eight ASCII bytes at once: most text is mostly ASCII
      uint64_t word;
      std::memcpy(&word, s + i, 8);
      if ((word & 0x8080808080808080ULL) == 0) {
        for (int k = 0; k < 8; ++k) visit(static_cast<char32_t>(s[i + k]));
        i += 8;
        continue;
      }
    }
    const unsigned char c = s[i];
    if (c < 0x80) {
      visit(static_cast<char32_t>(c));
      ++i;
      continue;
    }
    int length;
    char32_t cp, min;
    if ((c & 0xE0) == 0xC0) {
      length = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      length = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      length = 4, cp = c & 0x07, min = 0x10000;
    } else {
      error = {i, (c & 0xC0) == 0x80 ? "unexpected continuation byte" : "invalid lead byte"};
      return kUtf8Invalid;
    }
    if (i + length > n) {
      error = {i, "truncated sequence at end of file", true};
      return kUtf8Invalid;
    }
    for (int k = 1; k < length; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) {
        error = {i, "missing continuation byte"};
        return kUtf8Invalid;
      }
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if (cp < min) {
      error = {i, "overlong encoding"};
      return kUtf8Invalid;
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      error = {i, "not a Unicode scalar value"};
      return kUtf8Invalid;
    }
    visit(cp);
    i += length;
  }
  return i;
}

}  // namespace gpt
