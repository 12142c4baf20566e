// Small helpers shared by the HTML pages gpt writes.
#pragma once

#include <cstdio>
#include <string>

namespace gpt {

inline std::string escape_html(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// v with `decimals` digits after the point ("%.*f").
inline std::string fixed(double v, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, v);
  return text;
}

// A duration for people: "90 s", "12.5 min", "2.0 h".
inline std::string duration_label(double seconds) {
  if (seconds < 120) return fixed(seconds, 0) + " s";
  if (seconds < 7200) return fixed(seconds / 60, seconds < 600 ? 1 : 0) + " min";
  return fixed(seconds / 3600, 1) + " h";
}

}  // namespace gpt
