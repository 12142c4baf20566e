// The self-contained HTML report of `gpt heads`: the score table and an SVG heatmap of every
// head's attention on the prompt (characters on both axes), grouped by layer, plus the heatmaps
// of the induction test. No scripts, no network: one file that opens in any browser.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "inspect/head_scores.h"

namespace gpt {

struct HeadsReportInput {
  std::string model_path;
  std::vector<std::string> prompt_chars;     // one display string per position
  std::vector<std::string> induction_chars;  // the repeated random sequence
  int64_t n_layer = 0, n_head = 0;
  int64_t induction_length = 0;
  uint64_t induction_seed = 0;
  std::vector<HeadScores> scores;          // n_layer * n_head, layer-major
  std::vector<float> prompt_attention;     // [L][H][n][n]
  std::vector<float> induction_attention;  // [L][H][2L][2L]
};

std::string render_heads_report(const HeadsReportInput& input);

}  // namespace gpt
