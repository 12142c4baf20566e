#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"

namespace gpt {

void setup_logging(bool quiet) {
  auto logger = spdlog::stderr_color_mt("gpt");
  logger->set_pattern("%^[%T] %v%$");
  logger->set_level(quiet ? spdlog::level::warn : spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace gpt
