// Runs a model on a text and on the induction test sequence with attention capture on, and
// scores every head (see head_scores.h). No gradients, dropout off.
#pragma once

#include <cstdint>
#include <vector>

#include "data/vocab.h"
#include "inspect/heads_report.h"
#include "model/gpt.h"

namespace gpt {

// ids: 2 .. block_size tokens; L in [2, block_size / 2]; the random sequence is drawn from Rng(seed).
// With `text_logits`, also the logits after every position of ids ([n, V]).
HeadsReportInput analyze_heads(Gpt& model, const Vocab& vocab, const std::vector<int32_t>& ids, int64_t L,
                               uint64_t seed, std::vector<float>* text_logits = nullptr);

}  // namespace gpt
