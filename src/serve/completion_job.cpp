#include "serve/completion_job.h"

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

void CompletionJob::publish(ChoiceEvent event) {
  {
    std::lock_guard lock(mutex_);
    if (event.finish != FinishReason::none) --open_choices_;
    events_.push_back(std::move(event));
  }
  ready_.notify_all();
}

bool CompletionJob::take(std::vector<ChoiceEvent>& out, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  ready_.wait_for(lock, timeout, [&] { return !events_.empty() || open_choices_ == 0; });
  const bool more = open_choices_ > 0 || !events_.empty();
  for (ChoiceEvent& e : events_) out.push_back(std::move(e));
  events_.clear();
  return more;
}

}  // namespace gpt
