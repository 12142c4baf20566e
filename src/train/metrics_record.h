// The records of out_dir/metrics.jsonl: one JSON object per line, {"type": "start" | "train" |
// "eval", ...}. Defined once, here, for the writer (the training loop's reporter) and every reader
// (gpt report): each record's keys are listed in one table that both directions use.
#pragma once

#include <cstdint>
#include <variant>

#include <nlohmann/json.hpp>

namespace gpt {

struct TrainRecord {  // an iteration's log line
  int64_t iter = 0;
  double loss = 0, lr = 0, grad_norm = 0, ms_per_iter = 0, tokens_per_s = 0, mfu = 0, elapsed_s = 0;
  double exchange_ms = 0;  // between processes; written only when > 0
};

struct EvalRecord {  // an evaluation's
  int64_t iter = 0;
  double train_loss = 0, val_loss = 0, lr = 0, eval_s = 0, elapsed_s = 0;
};

// When and where the run (or a resumed part of it) began, and what it trains: a JSON object
// whose keys the reporter's caller chooses (they are shown as they are).
struct StartRecord {
  nlohmann::ordered_json fields;
};

nlohmann::ordered_json to_json(const TrainRecord& record);
nlohmann::ordered_json to_json(const EvalRecord& record);
nlohmann::ordered_json to_json(const StartRecord& record);

// A line's record; monostate for a type this version does not know (skipped by readers).
using MetricsRecord = std::variant<std::monostate, StartRecord, TrainRecord, EvalRecord>;
MetricsRecord parse_metrics_record(const nlohmann::json& line);

}  // namespace gpt
