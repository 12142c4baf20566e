// The files of a run's folder (out_dir), named once: every command that writes or reads one of
// them takes its name from here.
#pragma once

#include <filesystem>
#include <string>

#include "core/check.h"

namespace gpt {

inline constexpr const char* kModelFile = "model.safetensors";    // the best evaluation's weights, vocabulary
inline constexpr const char* kResumeFile = "resume.safetensors";  // the last saved iteration, for init_from resume
inline constexpr const char* kConfigFile = "config.json";         // the effective training config
inline constexpr const char* kMetricsFile = "metrics.jsonl";      // see train/metrics_record.h
inline constexpr const char* kReportFile = "report.html";         // see inspect/run_report.h

inline std::string run_file(const std::string& out_dir, const char* name) {
  return (std::filesystem::path(out_dir) / name).string();
}

inline void create_out_dir(const std::string& out_dir) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw UserError("cannot create out_dir " + out_dir + ": " + ec.message(), ExitCode::runtime);
}

}  // namespace gpt
