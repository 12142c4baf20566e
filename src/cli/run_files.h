// What a run's out_dir tells other commands: the passage of its validation split that gpt heads
// (and the run report) analyse by default.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/vocab.h"

namespace gpt {

// Up to block_size ids of the run's validation split from its first line start, read from the
// run's dataset (prepared or cached) without loading the rest. UserError when out_dir has no
// config.json or its data no longer has `vocab`.
std::vector<int32_t> validation_passage(const std::string& out_dir, const Vocab& vocab, int64_t block_size);

// Writes out_dir/report.html (see inspect/run_report.h): in progress, the curves and config,
// reloading itself every 30 s; stopped, the same without reloading; finished, also a sample from
// the final model and its heads.
enum class RunStage { in_progress, stopped, finished };
void write_run_report(const std::string& out_dir, RunStage stage);

}  // namespace gpt
