// The files of a run's folder (out_dir), named once: every command that writes or reads one of
// them takes its name from here.
#pragma once

#include <filesystem>
#include <string>

namespace gpt {

inline constexpr const char* kModelFile = "model.safetensors";  // weights, vocabulary, training state
inline constexpr const char* kConfigFile = "config.json";       // the effective training config
inline constexpr const char* kMetricsFile = "metrics.jsonl";    // see train/metrics_record.h
inline constexpr const char* kReportFile = "report.html";       // see inspect/run_report.h

inline std::string run_file(const std::string& out_dir, const char* name) {
  return (std::filesystem::path(out_dir) / name).string();
}

}  // namespace gpt
