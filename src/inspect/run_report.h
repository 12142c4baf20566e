// The run report: one self-contained HTML file (inline SVG and CSS, no script, no network) with a
// run's curves (loss against iterations or wall time, linear or log; learning rate, gradient norm,
// tokens/s, MFU), its config (values that differ from the defaults highlighted), model, data,
// machine and times, and optionally a sample and the heads table. Several runs overlay their
// curves with a legend. Built from what training writes to out_dir: config.json, metrics.jsonl.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/metrics_record.h"

namespace gpt {

struct RunRecord {
  std::string out_dir;
  nlohmann::json config;         // config.json (null when absent)
  nlohmann::ordered_json start;  // the first start record's fields (null when absent)
  std::vector<TrainRecord> train;
  std::vector<EvalRecord> evals;
  // The evaluation with the lowest val loss (-1 when none).
  int64_t best_index() const;
  double elapsed_s() const;  // at the last record
};

// Reads out_dir's metrics.jsonl and config.json; a resumed run's repeated iterations keep their
// last record. UserError naming the file when there is no metrics.jsonl or a line is not JSON.
RunRecord read_run(const std::string& out_dir);

struct ReportExtras {
  std::string sample;       // text from the final model ("" = none)
  std::string sample_note;  // how it was drawn
  std::string heads_html;   // a table of the heads ("" = none)
  std::string heads_link;   // a page with their heatmaps ("" = none)
  int refresh_seconds = 0;  // > 0: the page reloads itself (a run in progress)
};

std::string render_run_report(const std::vector<RunRecord>& runs, const ReportExtras& extras);

}  // namespace gpt
