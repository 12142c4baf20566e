// The run report: what read_run takes from metrics.jsonl (a resumed run's repeated iterations
// once), and the page's structure: one curve point per logged record, one val dot per
// evaluation in each of the four loss charts, the best val marked, every run present, no script.
#include <gtest/gtest.h>

#include <fstream>

#include "core/check.h"
#include "inspect/run_report.h"
#include "inspect/surprisal_report.h"
#include "io/checkpoint.h"
#include "train/evaluate.h"
#include "train/trainer.h"
#include "training_fixtures.h"

namespace gpt {
namespace {

using namespace gpt::testing;

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class Report : public CorpusTest {};

TEST_F(Report, HasOnePointPerLoggedRecordTheBestMarkedAndEveryRun) {
  TrainConfig c = tiny_config(dir, corpus);  // 20 iterations, every one logged, evaluations every 5
  run_training(c, nullptr);
  const RunRecord run = read_run(c.out_dir);
  ASSERT_EQ(run.train.size(), 20u);
  ASSERT_EQ(run.evals.size(), 5u);  // 0, 5, 10, 15, 20
  EXPECT_EQ(run.config["n_layer"], c.model.n_layer);
  EXPECT_TRUE(run.start.is_object());

  const std::string html = render_run_report({run}, {});
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(count_of(html, "r=\"3\""), 4 * 5) << "a val dot per evaluation in each of the four loss charts";
  // The raw train curve: 20 points, "M" then 19 "L", in each loss chart; its title names it.
  const std::size_t raw = html.find("stroke-opacity=\"0.25\"");
  ASSERT_NE(raw, std::string::npos);
  const std::size_t path_start = html.rfind("<path d=\"", raw);
  const std::string path = html.substr(path_start, raw - path_start);
  EXPECT_EQ(count_of(path, "L"), 19) << path;
  const EvalRecord& best = run.evals[static_cast<std::size_t>(run.best_index())];
  char label[64];
  std::snprintf(label, sizeof label, "best %.4f", best.val_loss);
  EXPECT_EQ(count_of(html, label), 4) << label;
  // "Loss" is said once, by the section's heading; the charts under it show no title of their own.
  EXPECT_EQ(count_of(html, "<h2>Loss</h2>"), 1);
  EXPECT_EQ(count_of(html, ">Loss</text>"), 0);
  EXPECT_EQ(count_of(html, ">Learning rate</text>"), 1) << "the other charts keep theirs";

  TrainConfig other = c;
  other.out_dir = dir.file("other");
  other.learning_rate = 2e-3;
  run_training(other, nullptr);
  const std::string both = render_run_report({run, read_run(other.out_dir)}, {});
  for (const std::string& name : {c.out_dir, other.out_dir}) {
    EXPECT_EQ(count_of(both, "<title>" + name + " train (smoothed)</title>"), 4) << name;
    EXPECT_NE(both.find("</span>" + name + "</td>"), std::string::npos) << name << " in the summary";
  }
  EXPECT_EQ(count_of(both, "r=\"3\""), 4 * 10);
  EXPECT_NE(both.find("<td class=\"chg\">0.002</td>"), std::string::npos) << "the changed learning rate";
}

TEST_F(Report, AResumedRunsRepeatedIterationsCountOnceAndAPageInProgressReloads) {
  TrainConfig c = tiny_config(dir, corpus);
  run_training(c, nullptr);
  std::ofstream(c.out_dir + "/metrics.jsonl", std::ios::app)
      << R"({"type":"train","iter":12,"loss":9.0,"lr":0.001,"grad_norm":1,"tokens_per_s":1,"mfu":0})"
      << "\n";
  const RunRecord run = read_run(c.out_dir);
  ASSERT_EQ(run.train.size(), 13u);  // 0..11 kept, then the resumed 12
  EXPECT_EQ(run.train.back().loss, 9.0);
  ReportExtras extras;
  extras.refresh_seconds = 30;
  EXPECT_NE(render_run_report({run}, extras).find("http-equiv=\"refresh\" content=\"30\""), std::string::npos);
  EXPECT_THROW(read_run(dir.file("nowhere")), UserError);
}

// The surprisal page shades exactly the tokens gpt eval scores, with their losses: the mean over
// them equals evaluate_windows' loss (float logits, summed in double: to rounding).
TEST_F(Report, SurprisalShadesEvalsTokensWithTheirLosses) {
  TrainConfig c = tiny_config(dir, corpus);
  run_training(c, nullptr);
  LoadedModel loaded = load_model(c.out_dir);
  const std::vector<int32_t> ids = loaded.vocab.encode(std::string_view(generated_corpus(1000, 9)), "text");
  Arena arena;
  Graph graph(arena);
  const TokenView view(ids);
  const WindowEval eval = evaluate_windows(*loaded.model, graph, view, c.model.block_size);
  const std::vector<TokenSurprise> tokens = surprisal_windows(*loaded.model, graph, view, c.model.block_size, 1 << 20);
  ASSERT_EQ(static_cast<int64_t>(tokens.size()), eval.tokens);
  double total = 0;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    EXPECT_EQ(tokens[i].target, ids[i + 1]);
    EXPECT_GE(tokens[i].top[0].second, tokens[i].top[1].second);
    total += tokens[i].loss_nats;
  }
  EXPECT_NEAR(total / static_cast<double>(tokens.size()), eval.loss_nats, 1e-5 * eval.loss_nats);
  const std::string html =
      render_surprisal_report({loaded.path, "text", c.model.block_size, ids[0], tokens}, loaded.vocab);
  EXPECT_EQ(count_of(html, "\" title=\""), static_cast<int>(tokens.size()));  // a shaded span per token
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(surprisal_windows(*loaded.model, graph, view, c.model.block_size, 3 * c.model.block_size + 1).size(),
            3u * static_cast<std::size_t>(c.model.block_size));  // --max_chars
}

}  // namespace
}  // namespace gpt
