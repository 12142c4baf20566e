// What gpt serve counts for GET /metrics: llama-server's metrics (prompt and generated characters
// and their times, requests processing and deferred, the average rates since the last scrape)
// under the prefix gpt_, in Prometheus's text format. A completion is counted when it ends; the
// counts are one mutex away from any thread. Also each completion's own timings (llama-server's
// `timings` block).
#pragma once

#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

namespace gpt {

// One completion's times, as llama-server's: the prompt from the request's arrival to its first
// character out (a wait for a slot included), generation from there to its last character.
struct CompletionTimings {
  int64_t prompt_n = 0;  // prompt characters (after cropping to block_size)
  double prompt_ms = 0;
  int64_t predicted_n = 0;  // characters generated, every choice's
  double predicted_ms = 0;
};

// {prompt_n, prompt_ms, prompt_per_token_ms, prompt_per_second, predicted_n, predicted_ms,
// predicted_per_token_ms, predicted_per_second}; a rate of nothing (no characters, or no time) is 0.
nlohmann::ordered_json timings_json(const CompletionTimings& t);

class ServerMetrics {
 public:
  void record(const CompletionTimings& finished);  // a completion ended (whatever ended it)

  // The exposition text (`text/plain; version=0.0.4`), each metric with # HELP and # TYPE.
  // requests_processing: slots generating; requests_deferred: requests waiting for slots. The
  // *_seconds gauges are over the completions ended since the previous call, as llama-server's.
  std::string prometheus_text(int64_t requests_processing, int64_t requests_deferred);

 private:
  struct Sums {
    int64_t requests = 0, prompt_n = 0, predicted_n = 0;
    double prompt_ms = 0, predicted_ms = 0;
    void add(const CompletionTimings& t);
  };
  std::mutex mutex_;
  Sums total_, since_scrape_;
};

}  // namespace gpt
