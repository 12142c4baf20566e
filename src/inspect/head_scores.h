// What each attention head attends to: scores computed from captured attention weights, and a
// label for the dominant pattern. Used by `gpt heads`.
//
// On a text of n positions, with A[t][j] the weight query t puts on key j (j <= t):
//   previous_token  mean over t >= 1 of A[t][t-1]
//   self            mean over t of A[t][t]
//   first_token     mean over t >= 1 of A[t][0]
//   entropy         mean over t >= 1 of H(A[t]) / log2(t + 1): 1 = uniform, 0 = one key
//   distance        mean over t of sum_j A[t][j] (t - j), in positions
// On a random sequence of length L repeated twice:
//   induction       mean over i in [L, 2L) of A[i][i - L + 1], the token that followed the
//                   current token's earlier occurrence (Olsson et al. 2022)
// Labels (the strongest pattern whose score passes its threshold, else by entropy):
//   previous-token >= 0.5, induction >= 0.4, self >= 0.5, first-token >= 0.5;
//   otherwise broad when entropy >= 0.8, else mixed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpt {

struct HeadScores {
  int64_t layer = 0, head = 0;
  double previous_token = 0, self = 0, first_token = 0, entropy = 0, distance = 0, induction = 0;
  std::string label;
};

constexpr double kPreviousTokenThreshold = 0.5;
constexpr double kInductionThreshold = 0.4;
constexpr double kSelfThreshold = 0.5;
constexpr double kFirstTokenThreshold = 0.5;
constexpr double kBroadEntropyThreshold = 0.8;

// attention: [n][n] row-major for one head (zeros above the diagonal).
void score_text_attention(const float* attention, int64_t n, HeadScores& scores);
// attention: [2L][2L] for one head on a sequence repeated twice with period L.
double induction_score(const float* attention, int64_t L);
std::string label_for(const HeadScores& scores);
// Layer `layer`'s head `head`: its scores on a text (attention as score_text_attention's), its
// induction score, and its label.
HeadScores head_scores(int64_t layer, int64_t head, const float* attention, int64_t n, double induction);

}  // namespace gpt
