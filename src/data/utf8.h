// UTF-8 decoding and encoding of Unicode code points. Decoding is strict: overlong forms,
// surrogates, code points above U+10FFFF and truncated sequences are errors that name the byte
// offset, so a binary or mis-encoded file is reported rather than trained on.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpt {

struct Utf8Error {
  std::size_t byte_offset;
  std::string reason;
};

// Decodes all of `bytes`; returns false and fills `error` at the first invalid sequence.
bool decode_utf8(std::string_view bytes, std::vector<char32_t>& out, Utf8Error& error);
void append_utf8(char32_t code_point, std::string& out);
std::string encode_utf8(char32_t code_point);
// A printable description for messages: 'a', '\n', U+0007.
std::string describe_code_point(char32_t code_point);

}  // namespace gpt
