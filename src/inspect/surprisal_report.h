// The surprisal view: a text with each token shaded by its loss under the model (in bits), a
// legend and the mean, and for each token, on hover, the model's five likeliest predictions
// (the title attribute: no script). One self-contained HTML file.
#pragma once

#include <string>
#include <vector>

#include "data/vocab.h"
#include "train/evaluate.h"

namespace gpt {

struct SurprisalPage {
  std::string model_path, source;
  int64_t block_size = 0;
  int32_t first_token = 0;  // the text's first token: context only, never predicted
  std::vector<TokenSurprise> tokens;
};

std::string render_surprisal_report(const SurprisalPage& page, const Vocab& vocab);

}  // namespace gpt
