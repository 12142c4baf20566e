#include "inspect/heads_analysis.h"

#include "core/check.h"
#include "sample/generator.h"

namespace gpt {

HeadsReportInput analyze_heads(Gpt& model, const Vocab& vocab, const std::vector<int32_t>& ids, int64_t L,
                               uint64_t seed, std::vector<float>* text_logits) {
  const GptConfig& c = model.config();
  const auto n = static_cast<int64_t>(ids.size());
  GPT_CHECK(n >= 2 && n <= c.block_size && L >= 2 && 2 * L <= c.block_size, "heads analysis sizes");
  HeadsReportInput report;
  report.n_layer = c.n_layer;
  report.n_head = c.n_head;
  report.induction_length = L;
  report.induction_seed = seed;
  for (int32_t id : ids) report.prompt_chars.push_back(vocab.decode(id));

  Generator generator(model);
  generator.set_capture_attention(true);
  generator.append(ids.data(), n, text_logits);
  report.prompt_attention = generator.captured_attention();

  Rng rng(seed);
  std::vector<int32_t> repeated(static_cast<std::size_t>(2 * L));
  for (int64_t i = 0; i < L; ++i)
    repeated[i] = repeated[i + L] = static_cast<int32_t>(rng.below(static_cast<uint64_t>(c.vocab_size)));
  for (int32_t id : repeated) report.induction_chars.push_back(vocab.decode(id));
  generator.reset();
  generator.append(repeated.data(), 2 * L);
  report.induction_attention = generator.captured_attention();

  for (int64_t l = 0; l < c.n_layer; ++l)
    for (int64_t h = 0; h < c.n_head; ++h) {
      const int64_t i = l * c.n_head + h;
      report.scores.push_back(head_scores(l, h, report.prompt_attention.data() + i * n * n, n,
                                          induction_score(report.induction_attention.data() + i * 4 * L * L, L)));
    }
  return report;
}

}  // namespace gpt
