#include "inspect/head_scores.h"

#include <cmath>

namespace gpt {

void score_text_attention(const float* A, int64_t n, HeadScores& s) {
  double previous = 0, self = 0, first = 0, entropy = 0, distance = 0;
  for (int64_t t = 0; t < n; ++t) {
    const float* row = A + t * n;
    self += row[t];
    for (int64_t j = 0; j <= t; ++j) distance += static_cast<double>(row[j]) * static_cast<double>(t - j);
    if (t == 0) continue;
    previous += row[t - 1];
    first += row[0];
    double h = 0;
    for (int64_t j = 0; j <= t; ++j)
      if (row[j] > 0) h -= row[j] * std::log2(static_cast<double>(row[j]));
    entropy += h / std::log2(static_cast<double>(t + 1));
  }
  const auto all = static_cast<double>(n), after_first = static_cast<double>(n > 1 ? n - 1 : 1);
  s.previous_token = previous / after_first;
  s.self = self / all;
  s.first_token = first / after_first;
  s.entropy = entropy / after_first;
  s.distance = distance / all;
}

double induction_score(const float* A, int64_t L) {
  const int64_t n = 2 * L;
  double total = 0;
  for (int64_t i = L; i < n; ++i) total += A[i * n + (i - L + 1)];
  return total / static_cast<double>(L);
}

HeadScores head_scores(int64_t layer, int64_t head, const float* attention, int64_t n, double induction) {
  HeadScores s;
  s.layer = layer;
  s.head = head;
  score_text_attention(attention, n, s);
  s.induction = induction;
  s.label = label_for(s);
  return s;
}

std::string label_for(const HeadScores& s) {
  struct Candidate {
    const char* name;
    double score, threshold;
  };
  const Candidate candidates[] = {{"previous-token", s.previous_token, kPreviousTokenThreshold},
                                  {"induction", s.induction, kInductionThreshold},
                                  {"self", s.self, kSelfThreshold},
                                  {"first-token", s.first_token, kFirstTokenThreshold}};
  const Candidate* best = nullptr;
  for (const Candidate& c : candidates)
    if (c.score >= c.threshold && (!best || c.score > best->score)) best = &c;
  if (best) return best->name;
  return s.entropy >= kBroadEntropyThreshold ? "broad" : "mixed";
}

}  // namespace gpt
