#include "inspect/surprisal_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>

#include "inspect/html.h"

namespace gpt {

namespace {

constexpr double kDarkestBits = 8.0;  // losses from here up get the darkest shade

// How a token reads on the page; `quoted` for the hover text.
std::string shown(const Vocab& vocab, int32_t id, bool quoted) {
  const char32_t symbol = vocab.symbol(id);
  std::string text;
  if (vocab.kind() == VocabKind::bytes && (symbol >= 0x80 || (symbol < 0x20 && symbol != '\n'))) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02X", static_cast<unsigned>(symbol));
    text = hex;
  } else if (symbol == '\n') {
    text = quoted ? "\\n" : "\u21b5\n";
  } else {
    text = vocab.decode(id);
  }
  return escape_html(quoted ? "'" + text + "'" : text);
}

std::string shade(double bits) {
  const double x = std::clamp(bits / kDarkestBits, 0.0, 1.0);
  char color[48];
  std::snprintf(color, sizeof color, "hsl(8,85%%,%.0f%%)", 100.0 - 52.0 * x);
  return color;
}

}  // namespace

std::string render_surprisal_report(const SurprisalPage& page, const Vocab& vocab) {
  double total = 0;
  for (const TokenSurprise& t : page.tokens) total += t.loss_nats;
  const double mean_bits =
      page.tokens.empty() ? 0.0 : total / static_cast<double>(page.tokens.size()) / std::numbers::ln2;
  std::string html =
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>Surprisal: " +
      escape_html(page.source) +
      "</title><style>"
      "body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1000px;padding:12px 16px;color:#222}"
      "h1{font-size:1.3em}.text{font:15px/1.7 ui-monospace,monospace;white-space:pre-wrap;word-break:break-all}"
      ".text span{border-radius:2px}.legend span{display:inline-block;padding:2px 8px;font-size:13px}"
      "</style></head><body><h1>Where the model is surprised</h1><p>Model <code>" +
      escape_html(page.model_path) + "</code>, text <code>" + escape_html(page.source) +
      "</code>: " + std::to_string(page.tokens.size()) + " " + vocab.token_noun() + " scored in windows of " +
      std::to_string(page.block_size) + " as <code>gpt eval</code> scores them; mean <b>" + fixed(mean_bits, 3) +
      " bits per " + vocab.token_unit() +
      "</b>. Each is shaded by its loss, &minus;log<sub>2</sub> p; hover over one for the model's five likeliest "
      "predictions.</p><p class=\"legend\">";
  for (double bits = 0; bits <= kDarkestBits; bits += 2)
    html += "<span style=\"background:" + shade(bits) + "\">" + fixed(bits, 0) +
            (bits == kDarkestBits ? "+ bits" : " bits") + "</span>";
  html += "</p><div class=\"text\">" + shown(vocab, page.first_token, false);
  for (const TokenSurprise& t : page.tokens) {
    const double bits = t.loss_nats / std::numbers::ln2;
    std::string title = shown(vocab, t.target, true) + ": " + fixed(bits, 2) + " bits&#10;likeliest:";
    for (const auto& [id, p] : t.top)
      if (p > 0) {
        title += ' ';
        title += shown(vocab, id, true);
        title += ' ';
        title += fixed(100.0 * p, 1);
        title += '%';
      }
    html += "<span style=\"background:" + shade(bits) + "\" title=\"" + title + "\">" + shown(vocab, t.target, false) +
            "</span>";
  }
  return html + "</div></body></html>\n";
}

}  // namespace gpt
