#include "serve/server_metrics.h"

#include <spdlog/fmt/fmt.h>

namespace gpt {

namespace {

double per(double amount, double count) { return count > 0 ? amount / count : 0.0; }

}  // namespace

nlohmann::ordered_json timings_json(const CompletionTimings& t) {
  const auto prompt_n = static_cast<double>(t.prompt_n), predicted_n = static_cast<double>(t.predicted_n);
  return {{"prompt_n", t.prompt_n},
          {"prompt_ms", t.prompt_ms},
          {"prompt_per_token_ms", per(t.prompt_ms, prompt_n)},
          {"prompt_per_second", per(1e3 * prompt_n, t.prompt_ms)},
          {"predicted_n", t.predicted_n},
          {"predicted_ms", t.predicted_ms},
          {"predicted_per_token_ms", per(t.predicted_ms, predicted_n)},
          {"predicted_per_second", per(1e3 * predicted_n, t.predicted_ms)}};
}

void ServerMetrics::Sums::add(const CompletionTimings& t) {
  ++requests;
  prompt_n += t.prompt_n;
  predicted_n += t.predicted_n;
  prompt_ms += t.prompt_ms;
  predicted_ms += t.predicted_ms;
}

void ServerMetrics::record(const CompletionTimings& finished) {
  std::lock_guard lock(mutex_);
  total_.add(finished);
  since_scrape_.add(finished);
}

std::string ServerMetrics::prometheus_text(int64_t requests_processing, int64_t requests_deferred) {
  Sums total, recent;
  {
    std::lock_guard lock(mutex_);
    total = total_;
    recent = since_scrape_;
    since_scrape_ = {};
  }
  std::string out;
  const auto metric = [&out](const char* name, const char* type, const char* help, double value) {
    out += fmt::format("# HELP gpt_{0} {1}\n# TYPE gpt_{0} {2}\ngpt_{0} {3}\n", name, help, type, value);
  };
  metric("prompt_tokens_total", "counter", "Prompt characters processed.", static_cast<double>(total.prompt_n));
  metric("prompt_seconds_total", "counter", "Prompt processing time in seconds (a wait for a slot included).",
         total.prompt_ms / 1e3);
  metric("prompt_tokens_seconds", "gauge",
         "Average prompt throughput in characters/s, over the completions ended since the last scrape.",
         per(1e3 * static_cast<double>(recent.prompt_n), recent.prompt_ms));
  metric("tokens_predicted_total", "counter", "Characters generated.", static_cast<double>(total.predicted_n));
  metric("tokens_predicted_seconds_total", "counter", "Generation time in seconds.", total.predicted_ms / 1e3);
  metric("predicted_tokens_seconds", "gauge",
         "Average generation throughput in characters/s, over the completions ended since the last scrape.",
         per(1e3 * static_cast<double>(recent.predicted_n), recent.predicted_ms));
  metric("requests_total", "counter", "Completion requests ended (finished, stopped, cancelled).",
         static_cast<double>(total.requests));
  metric("requests_processing", "gauge", "Slots generating (one per choice).",
         static_cast<double>(requests_processing));
  metric("requests_deferred", "gauge", "Requests waiting for slots.", static_cast<double>(requests_deferred));
  return out;
}

}  // namespace gpt
