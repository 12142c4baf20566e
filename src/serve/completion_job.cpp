#include "serve/completion_job.h"

#include <algorithm>

namespace gpt {

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::length:
      return "length";
    case FinishReason::stop:
      return "stop";
    case FinishReason::none:
      break;
  }
  return nullptr;
}

CompletionJob::CompletionJob(CompletionRequest request, std::vector<int32_t> prompt, uint64_t seed,
                             ServerMetrics* metrics)
    : request_(std::move(request)),
      prompt_(std::move(prompt)),
      seed_(seed),
      metrics_(metrics),
      open_choices_(request_.n),
      generated_(static_cast<std::size_t>(request_.n), 0) {}

void CompletionJob::publish(ChoiceEvent event) {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    const Clock::time_point now = Clock::now();
    if (!any_text_ && event.generated > 0) {
      any_text_ = true;
      first_text_ = now;
    }
    last_text_ = now;
    generated_[static_cast<std::size_t>(event.choice)] =
        std::max(generated_[static_cast<std::size_t>(event.choice)], event.generated);
    // Counted before the client can see the end: a client that then asks /metrics finds it.
    event.last = event.finish != FinishReason::none && --open_choices_ == 0;
    if (event.last && metrics_) metrics_->record(timings_locked());
    wake = taking_ || event.last;
    events_.push_back(std::move(event));
  }
  if (wake) ready_.notify_all();
}

CompletionTimings CompletionJob::timings() const {
  std::lock_guard lock(mutex_);
  return timings_locked();
}

CompletionTimings CompletionJob::timings_locked() const {
  using Ms = std::chrono::duration<double, std::milli>;
  CompletionTimings t;
  t.prompt_n = static_cast<int64_t>(prompt_.size());
  const Clock::time_point prompt_done = any_text_ ? first_text_ : last_text_;
  t.prompt_ms = Ms(std::max(prompt_done, created_) - created_).count();
  for (const int64_t g : generated_) t.predicted_n += g;
  t.predicted_ms = any_text_ ? Ms(last_text_ - first_text_).count() : 0.0;
  return t;
}

bool CompletionJob::take(std::vector<ChoiceEvent>& out, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  taking_ = true;
  ready_.wait_for(lock, timeout, [&] { return !events_.empty() || open_choices_ == 0; });
  taking_ = false;
  const bool more = open_choices_ > 0 || !events_.empty();
  for (ChoiceEvent& e : events_) out.push_back(std::move(e));
  events_.clear();
  return more;
}

bool CompletionJob::wait_finished(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return ready_.wait_for(lock, timeout, [&] { return open_choices_ == 0; });
}

}  // namespace gpt
