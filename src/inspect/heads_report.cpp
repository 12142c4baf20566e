#include "inspect/heads_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "inspect/html.h"

namespace gpt {

namespace {

// One heatmap as SVG. Weights are quantised to 20 levels (sqrt scale, so small weights stay
// visible) and equal neighbours in a row are drawn as one rectangle; level 0 is not drawn.
// Cells shrink with n so 256 positions fit in ~520 px; axis labels every `step` characters.
std::string heatmap_svg(const float* A, int64_t n, const std::vector<std::string>& chars, const std::string& title) {
  const double cell = std::max(2.0, std::min(14.0, 512.0 / static_cast<double>(n)));
  // A label on every row and column when the cells are at least 7 px (a 64-character prompt),
  // else on every few so that labels never overlap; the font fits the labelled span.
  const int64_t step = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(7.0 / cell)));
  const std::string font = fixed(std::min(9.0, cell * static_cast<double>(step)), 0);
  const double margin = 28, size = cell * static_cast<double>(n);
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fixed(size + margin + 4, 0) +
                    "\" height=\"" + fixed(size + margin + 4, 0) + "\" role=\"img\"><title>" + escape_html(title) +
                    "</title>";
  svg += "<rect x=\"" + fixed(margin, 1) + "\" y=\"" + fixed(margin, 1) + "\" width=\"" + fixed(size, 1) +
         "\" height=\"" + fixed(size, 1) + "\" fill=\"#fff\" stroke=\"#ccc\"/>";
  auto label = [&](int64_t i) {
    const std::string& c = chars[static_cast<std::size_t>(i)];
    return escape_html(c == "\n" ? "\u21b5" : c == " " ? "\u2423" : c);
  };
  for (int64_t i = 0; i < n; i += step) {
    const double p = margin + (static_cast<double>(i) + 0.5) * cell;
    svg += "<text x=\"" + fixed(p, 1) + "\" y=\"" + fixed(margin - 4, 1) + "\" font-size=\"" + font +
           "\" text-anchor=\"middle\">" + label(i) + "</text>";
    svg += "<text x=\"" + fixed(margin - 4, 1) + "\" y=\"" + fixed(p + 3, 1) + "\" font-size=\"" + font +
           "\" text-anchor=\"end\">" + label(i) + "</text>";
  }
  for (int64_t t = 0; t < n; ++t) {
    int64_t j = 0;
    while (j <= t) {
      const int level = static_cast<int>(std::lround(std::sqrt(std::max(0.0f, A[t * n + j])) * 20.0));
      int64_t end = j + 1;
      while (end <= t && static_cast<int>(std::lround(std::sqrt(std::max(0.0f, A[t * n + end])) * 20.0)) == level)
        ++end;
      if (level > 0) {
        const int shade = 255 - level * 255 / 20;
        char color[16];
        std::snprintf(color, sizeof color, "#%02x%02xff", shade, shade);
        svg += "<rect x=\"" + fixed(margin + static_cast<double>(j) * cell, 1) + "\" y=\"" +
               fixed(margin + static_cast<double>(t) * cell, 1) + "\" width=\"" +
               fixed(static_cast<double>(end - j) * cell, 1) + "\" height=\"" + fixed(cell, 1) + "\" fill=\"" + color +
               "\"/>";
      }
      j = end;
    }
  }
  return svg + "</svg>";
}

}  // namespace

std::string render_heads_report(const HeadsReportInput& in) {
  const auto n = static_cast<int64_t>(in.prompt_chars.size());
  const int64_t n2 = 2 * in.induction_length;
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>gpt heads: " +
      escape_html(in.model_path) +
      "</title><style>body{font-family:system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse;"
      "margin:12px 0}td,th{padding:3px 10px;border-bottom:1px solid #ddd;text-align:right}th{background:#f4f4f8}"
      "td.l{text-align:left;font-weight:600}.grid{display:flex;flex-wrap:wrap;gap:18px}figure{margin:0}"
      "figcaption{font-size:13px;margin-bottom:4px}pre{background:#f7f7f7;padding:8px;white-space:pre-wrap}"
      "</style></head><body>\n";
  html += "<h1>What each attention head attends to</h1>\n<p>Model <code>" + escape_html(in.model_path) +
          "</code>: " + std::to_string(in.n_layer) + " layers × " + std::to_string(in.n_head) +
          " heads. Rows are queries (each character), columns the keys it attends to; darker = more weight.</p>\n";
  html +=
      "<h2>Scores</h2>\n<table><tr><th>layer</th><th>head</th><th>label</th><th>previous</th><th>self</th><th>first</"
      "th>"
      "<th>entropy</th><th>distance</th><th>induction</th></tr>\n";
  for (const HeadScores& s : in.scores)
    html += "<tr><td>" + std::to_string(s.layer) + "</td><td>" + std::to_string(s.head) + "</td><td class=\"l\">" +
            s.label + "</td><td>" + fixed(s.previous_token, 3) + "</td><td>" + fixed(s.self, 3) + "</td><td>" +
            fixed(s.first_token, 3) + "</td><td>" + fixed(s.entropy, 3) + "</td><td>" + fixed(s.distance, 1) +
            "</td><td>" + fixed(s.induction, 3) + "</td></tr>\n";
  html +=
      "</table>\n<p>Labels: previous-token when its score ≥ 0.5, induction ≥ 0.4, self ≥ 0.5, first-token ≥ 0.5 (the "
      "strongest passing one); otherwise broad when normalised entropy ≥ 0.8, else mixed. Induction test: a random "
      "sequence of " +
      std::to_string(in.induction_length) + " characters (seed " + std::to_string(in.induction_seed) +
      ") repeated twice.</p>\n";
  std::string prompt_text;
  for (const auto& c : in.prompt_chars) prompt_text += c;
  html += "<h2>Attention on the prompt</h2>\n<pre>" + escape_html(prompt_text) + "</pre>\n";
  for (int64_t l = 0; l < in.n_layer; ++l) {
    html += "<h3>Layer " + std::to_string(l) + "</h3>\n<div class=\"grid\">\n";
    for (int64_t h = 0; h < in.n_head; ++h) {
      const HeadScores& s = in.scores[static_cast<std::size_t>(l * in.n_head + h)];
      const std::string title = "layer " + std::to_string(l) + " head " + std::to_string(h) + ": " + s.label;
      html += "<figure><figcaption>" + escape_html(title) + "</figcaption>" +
              heatmap_svg(in.prompt_attention.data() + (l * in.n_head + h) * n * n, n, in.prompt_chars, title) +
              "</figure>\n";
    }
    html += "</div>\n";
  }
  html +=
      "<h2>Induction test</h2>\n<p>An induction head attends from each character of the second copy to the character "
      "that followed its earlier occurrence: a diagonal stripe " +
      std::to_string(in.induction_length - 1) + " positions left of the main diagonal in the lower half.</p>\n";
  for (int64_t l = 0; l < in.n_layer; ++l) {
    html += "<h3>Layer " + std::to_string(l) + "</h3>\n<div class=\"grid\">\n";
    for (int64_t h = 0; h < in.n_head; ++h) {
      const HeadScores& s = in.scores[static_cast<std::size_t>(l * in.n_head + h)];
      const std::string title =
          "layer " + std::to_string(l) + " head " + std::to_string(h) + ": induction " + fixed(s.induction, 3);
      html +=
          "<figure><figcaption>" + escape_html(title) + "</figcaption>" +
          heatmap_svg(in.induction_attention.data() + (l * in.n_head + h) * n2 * n2, n2, in.induction_chars, title) +
          "</figure>\n";
    }
    html += "</div>\n";
  }
  return html + "</body></html>\n";
}

}  // namespace gpt
