// One completion request in flight: what the engine thread generates for it and what the HTTP
// thread serving it takes, passed through a queue of events under a mutex. The engine publishes,
// the client side takes; a client that goes away cancels, and the engine frees its slots at
// its next step. The job stamps its times (timings(), and the server's metrics when it ends).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "serve/completion_request.h"
#include "serve/server_metrics.h"

namespace gpt {

enum class FinishReason { none, length, stop };
const char* finish_reason_name(FinishReason reason);

struct TokenLogprob {
  std::string token;  // the character's text (a byte vocabulary's byte may not be UTF-8 on its own)
  double logprob = 0;
  std::vector<std::pair<std::string, double>> top;  // the most likely characters, most likely first
};

// Text released to one choice (possibly none), the log-probabilities of the tokens it covers,
// and whether the choice ended with it.
struct ChoiceEvent {
  int64_t choice = 0;
  std::string text;
  std::vector<TokenLogprob> logprobs;
  FinishReason finish = FinishReason::none;
  int64_t generated = 0;  // the choice's tokens so far
  bool last = false;      // the job's last event (set by the job): every choice has finished
};

class CompletionJob {
 public:
  // `metrics` (may be null, else outliving the job) records the job's timings when it ends.
  CompletionJob(CompletionRequest request, std::vector<int32_t> prompt, uint64_t seed,
                ServerMetrics* metrics = nullptr);

  const CompletionRequest& request() const { return request_; }
  const std::vector<int32_t>& prompt() const { return prompt_; }  // cropped to block_size
  uint64_t seed() const { return seed_; }

  // Engine side.
  void publish(ChoiceEvent event);

  // Client side: waits up to `timeout` for events and appends them to `out`; false once every
  // choice has finished and all its events were taken.
  bool take(std::vector<ChoiceEvent>& out, std::chrono::milliseconds timeout);
  // Waits up to `timeout` for every choice to finish; whether they have. Not woken by the events
  // before the last (a whole completion's thread sleeps while its text is generated).
  bool wait_finished(std::chrono::milliseconds timeout);
  void cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }
  // Complete once take() has returned false.
  CompletionTimings timings() const;

 private:
  CompletionTimings timings_locked() const;

  const CompletionRequest request_;
  const std::vector<int32_t> prompt_;
  const uint64_t seed_;
  ServerMetrics* const metrics_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<ChoiceEvent> events_;
  bool taking_ = false;  // a take() waits: every event wakes it
  int64_t open_choices_;
  std::vector<int64_t> generated_;  // [n] each choice's tokens so far
  using Clock = std::chrono::steady_clock;
  const Clock::time_point created_ = Clock::now();
  Clock::time_point first_text_{}, last_text_{};  // the first event with text; the last event
  bool any_text_ = false;
  std::atomic<bool> cancelled_{false};
};

}  // namespace gpt
