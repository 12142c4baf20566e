#include "data/utf8.h"

#include <cstdio>

namespace gpt {

bool decode_utf8(std::string_view bytes, std::vector<char32_t>& out, Utf8Error& error) {
  out.clear();
  out.reserve(bytes.size());
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      out.push_back(c);
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
      return false;
    }
    if (i + length > n) {
      error = {i, "truncated sequence at end of file"};
      return false;
    }
    for (int k = 1; k < length; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) {
        error = {i, "missing continuation byte"};
        return false;
      }
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if (cp < min) {
      error = {i, "overlong encoding"};
      return false;
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      error = {i, "not a Unicode scalar value"};
      return false;
    }
    out.push_back(cp);
    i += length;
  }
  return true;
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
