#include "data/utf8.h"

#include <cstdio>

namespace gpt {

bool decode_utf8(std::string_view bytes, std::vector<char32_t>& out, Utf8Error& error) {
  out.clear();
  out.reserve(bytes.size());
  return decode_utf8_sequences(
             bytes, 0, bytes.size(), [&](char32_t cp) { out.push_back(cp); }, error) != kUtf8Invalid;
}

std::string Utf8Repair::push(std::string_view bytes) {
  pending_.append(bytes);
  std::string out;
  std::size_t i = 0;
  Utf8Error error;
  while (i < pending_.size()) {
    const std::size_t stop = decode_utf8_sequences(
        pending_, i, pending_.size(), [&](char32_t cp) { append_utf8(cp, out); }, error);
    if (stop != kUtf8Invalid) {
      i = stop;
      break;
    }
    i = error.byte_offset;
    if (error.truncated) {
      bool continuations_so_far = true;  // the rest may still become a valid sequence
      for (std::size_t k = i + 1; k < pending_.size(); ++k)
        continuations_so_far &= (static_cast<unsigned char>(pending_[k]) & 0xC0) == 0x80;
      if (continuations_so_far) break;
    }
    out += "\xEF\xBF\xBD";  // U+FFFD for the first byte; decoding resumes after it
    ++i;
  }
  pending_.erase(0, i);
  return out;
}

std::string Utf8Repair::finish() {
  std::string out;
  for (std::size_t i = 0; i < pending_.size(); ++i) out += "\xEF\xBF\xBD";
  pending_.clear();
  return out;
}

void append_utf8(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string encode_utf8(char32_t cp) {
  std::string s;
  append_utf8(cp, s);
  return s;
}

std::string describe_code_point(char32_t cp) {
  char buffer[32];
  switch (cp) {
    case '\n':
      return "'\\n'";
    case '\t':
      return "'\\t'";
    case '\r':
      return "'\\r'";
    default:
      break;
  }
  if (cp < 0x20 || cp == 0x7F) {
    std::snprintf(buffer, sizeof buffer, "U+%04X", static_cast<unsigned>(cp));
    return buffer;
  }
  std::string text(1, '\'');
  append_utf8(cp, text);
  text += '\'';
  if (cp >= 0x80) {
    std::snprintf(buffer, sizeof buffer, " (U+%04X)", static_cast<unsigned>(cp));
    text += buffer;
  }
  return text;
}

}  // namespace gpt
