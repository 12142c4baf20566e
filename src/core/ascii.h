// ASCII text helpers for names people and protocols write in any case or with spaces around them
// (header names, environment values, keys in a file). Bytes outside ASCII are left as they are:
// no locale is consulted.
#pragma once

#include <string>
#include <string_view>

namespace gpt {

inline std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// Without the spaces, tabs and line ends around it.
inline std::string_view ascii_trimmed(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n\v\f";
  const std::size_t begin = text.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(kSpace) - begin + 1);
}

}  // namespace gpt
