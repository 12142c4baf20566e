// gpt heads: scores and labels on models whose attention is set by hand, a well-formed report,
// and stable scores on a trained model.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "inspect/heads_analysis.h"
#include "inspect/heads_report.h"
#include "io/checkpoint.h"
#include "train/trainer.h"
#include "training_fixtures.h"

namespace gpt {
namespace {

// 1 layer, 2 heads of size 8 = block_size; positions one-hot in the first 8 dims, no token signal.
// Head 0: q_t = S * ln(x_t) shifted by one dim, k_j = ln(x_j), so q_t . k_j peaks at j = t - 1.
// Head 1: zero queries, so every visible key scores the same: uniform attention.
std::unique_ptr<Gpt> hand_set_model() {
  GptConfig c;
  c.n_layer = 1;
  c.n_head = 2;
  c.n_embd = 16;
  c.block_size = 8;
  c.vocab_size = 4;
  c.dropout = 0;
  c.bias = false;
  auto model = std::make_unique<Gpt>(c);
  ParamStore& p = model->params();
  std::fill(p.data(), p.data() + p.padded_floats(), 0.0f);
  Tensor wpe = model->weights().wpe;
  for (int t = 0; t < 8; ++t) wpe.data[t * 16 + t] = 1.0f;
  const BlockWeights& w = model->weights().blocks[0];
  for (int64_t i = 0; i < 16; ++i)
    w.ln_1.weight.data[i] = w.ln_2.weight.data[i] = model->weights().ln_f.weight.data[i] = 1.0f;
  float* c_attn = w.c_attn.weight.data;  // [48, 16]: rows 0..15 queries, 16..31 keys, 32..47 values
  const float S = 20.0f;
  for (int i = 0; i < 8; ++i) {
    c_attn[i * 16 + (i + 1)] = S;          // head 0 query dim i reads position dim i + 1
    c_attn[(16 + i) * 16 + i] = 1.0f;      // head 0 key dim i reads position dim i
    c_attn[(16 + 8 + i) * 16 + i] = 1.0f;  // head 1 keys (its queries stay zero)
  }
  return model;
}

TEST(HeadScores, HandSetPreviousTokenAndUniformHeads) {
  auto model = hand_set_model();
  const Vocab vocab = Vocab::from_code_points({U'a', U'b', U'c', U'd'});
  const HeadsReportInput r = analyze_heads(*model, vocab, {0, 1, 2, 3, 0, 1, 2, 3}, 4, 1);
  ASSERT_EQ(r.scores.size(), 2u);
  const HeadScores& prev = r.scores[0];
  EXPECT_NEAR(prev.previous_token, 1.0, 1e-4);
  EXPECT_NEAR(prev.self, 1.0 / 8, 1e-4);  // only position 0 attends to itself
  EXPECT_NEAR(prev.entropy, 0.0, 1e-3);
  EXPECT_NEAR(prev.distance, 7.0 / 8, 1e-3);
  EXPECT_EQ(prev.label, "previous-token");
  const HeadScores& uniform = r.scores[1];
  double expected_previous = 0, expected_distance = 0;
  for (int t = 1; t < 8; ++t) expected_previous += 1.0 / (t + 1);
  for (int t = 0; t < 8; ++t) expected_distance += t / 2.0;
  EXPECT_NEAR(uniform.previous_token, expected_previous / 7, 1e-5);
  EXPECT_NEAR(uniform.first_token, expected_previous / 7, 1e-5);
  EXPECT_NEAR(uniform.entropy, 1.0, 1e-5);
  EXPECT_NEAR(uniform.distance, expected_distance / 8, 1e-4);
  EXPECT_EQ(uniform.label, "broad");
}

TEST(HeadScores, InductionScoreAndLabels) {
  // A perfect induction pattern for L = 3: position i >= 3 attends to i - 2.
  const int64_t L = 3, n = 6;
  std::vector<float> A(n * n, 0.0f);
  for (int64_t i = 0; i < n; ++i) A[i * n + (i >= L ? i - L + 1 : 0)] = 1.0f;
  EXPECT_DOUBLE_EQ(induction_score(A.data(), L), 1.0);
  HeadScores s;
  s.induction = 0.9;
  s.previous_token = 0.45;
  EXPECT_EQ(label_for(s), "induction");
  s.previous_token = 0.95;
  EXPECT_EQ(label_for(s), "previous-token");
  HeadScores mixed;
  mixed.entropy = 0.5;
  EXPECT_EQ(label_for(mixed), "mixed");
  mixed.first_token = 0.7;
  EXPECT_EQ(label_for(mixed), "first-token");
}

// Checks that every element is closed in order (void elements aside) and attributes are quoted.
bool well_formed(const std::string& html, std::string& problem) {
  std::vector<std::string> stack;
  std::size_t i = 0;
  while ((i = html.find('<', i)) != std::string::npos) {
    const std::size_t end = html.find('>', i);
    if (end == std::string::npos) return problem = "unterminated tag", false;
    std::string tag = html.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.starts_with("!")) continue;  // doctype
    const bool closing = tag.starts_with("/"), self_closing = tag.ends_with("/");
    std::string name = tag.substr(closing ? 1 : 0);
    name = name.substr(0, name.find_first_of(" /"));
    if (std::count(tag.begin(), tag.end(), '"') % 2 != 0) return problem = "unbalanced quotes in <" + tag + ">", false;
    if (self_closing) continue;
    if (!closing) {
      stack.push_back(name);
    } else {
      if (stack.empty() || stack.back() != name)
        return problem = "</" + name + "> closes <" + (stack.empty() ? "" : stack.back()) + ">", false;
      stack.pop_back();
    }
  }
  if (!stack.empty()) return problem = "<" + stack.back() + "> never closed", false;
  return true;
}

TEST(HeadsReport, IsWellFormedAndSelfContained) {
  auto model = hand_set_model();
  const Vocab vocab = Vocab::from_code_points({U'\n', U' ', U'<', U'&'});
  HeadsReportInput r = analyze_heads(*model, vocab, {0, 1, 2, 3, 2, 1, 0, 3}, 4, 2);
  r.model_path = "hand <set> & model";
  const std::string html = render_heads_report(r);
  std::string problem;
  EXPECT_TRUE(well_formed(html, problem)) << problem;
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://www.w3.org/2000/svg"), html.find("http"));  // the SVG namespace is the only URL
  EXPECT_NE(html.find("hand &lt;set&gt; &amp; model"), std::string::npos);
  EXPECT_EQ(std::count(html.begin(), html.end(), '\0'), 0);
  // 2 prompt heatmaps + 2 induction heatmaps.
  std::size_t svgs = 0;
  for (std::size_t at = 0; (at = html.find("<svg", at)) != std::string::npos; ++at) ++svgs;
  EXPECT_EQ(svgs, 4u);
  EXPECT_FALSE(well_formed("<div><span></div>", problem));  // the checker can fail
}

TEST(HeadScores, StableAcrossTrainingRuns) {
  spdlog::set_level(spdlog::level::warn);
  testing::ScratchDir dir;
  const std::string corpus = dir.write("corpus.txt", testing::generated_corpus(20000));
  TrainConfig c = testing::tiny_config(dir, corpus);
  std::vector<double> first;
  for (int run = 0; run < 2; ++run) {
    run_training(c, nullptr);
    LoadedModel loaded = load_model(c.out_dir);
    const std::vector<int32_t> ids = testing::open_text(corpus).val().to_vector(0, 16);
    const HeadsReportInput r = analyze_heads(*loaded.model, loaded.vocab, ids, 8, 1337);
    std::vector<double> values;
    for (const HeadScores& s : r.scores)
      values.insert(values.end(), {s.previous_token, s.self, s.first_token, s.entropy, s.distance, s.induction});
    if (run == 0)
      first = values;
    else
      EXPECT_EQ(values, first);
  }
}

}  // namespace
}  // namespace gpt
