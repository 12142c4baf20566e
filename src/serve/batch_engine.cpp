#include "serve/batch_engine.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <numeric>

#include <spdlog/spdlog.h>

#include "core/check.h"
#include "core/random_streams.h"
#include "sample/text_generation.h"

namespace gpt {

struct BatchEngine::Slot {
  std::shared_ptr<CompletionJob> job;  // null: free
  int64_t choice = 0;
  Rng rng;
  std::optional<TokenSampler> sampler;
  std::vector<int32_t> tokens;  // prompt + generated
  int64_t window_begin = 0;     // the first token in the KV cache
  int64_t generated = 0;
  std::optional<StopMatcher> stops;
  std::deque<TokenLogprob> held;          // the log-probabilities of the tokens whose text `stops` holds
  Utf8Repair utf8;                        // byte vocabularies: text goes out as UTF-8
  int64_t feed_begin = 0, feed_size = 0;  // the tokens the next step feeds
};

struct BatchEngine::Task {
  const std::function<void()>* work;
  std::exception_ptr error;
  bool done = false;
};

BatchEngine::BatchEngine(Gpt& model, const Vocab& vocab, EngineOptions options)
    : model_(model),
      vocab_(vocab),
      options_(options),
      generator_(model, options.slots + 1),
      inspector_(model, generator_, options.slots, options.max_inspect_attention) {
  GPT_CHECK(options.slots >= 1 && options.max_waiting >= 0, "engine sizes");
  for (int64_t s = 0; s < options.slots; ++s) slots_.push_back(std::make_unique<Slot>());
  log_probs_.resize(static_cast<std::size_t>(model.config().vocab_size));
  order_.resize(log_probs_.size());
  const int threads = omp_get_max_threads();  // a new thread starts from OpenMP's default, not this one's
  thread_ = std::thread([this, threads] {
    omp_set_num_threads(threads);
    loop();
  });
}

BatchEngine::~BatchEngine() { shutdown(); }

void BatchEngine::submit(const std::shared_ptr<CompletionJob>& job) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) throw RequestError(503, "the server is shutting down");
    if (static_cast<int64_t>(waiting_.size()) >= options_.max_waiting)
      throw RequestError(503, "the server is busy: " + std::to_string(waiting_.size()) +
                                  " requests are already waiting for a slot; retry later");
    waiting_.push_back(job);
  }
  wake_.notify_all();
}

void BatchEngine::run(const std::function<void()>& work) {
  Task task{&work, nullptr, false};
  std::unique_lock lock(mutex_);
  if (stopping_) throw RequestError(503, "the server is shutting down");
  tasks_.push_back(&task);
  wake_.notify_all();
  wake_.wait(lock, [&] { return task.done; });
  if (task.error) std::rethrow_exception(task.error);
}

nlohmann::json BatchEngine::inspect(const std::string& body) {
  InspectRequest request = parse_inspect_request(vocab_, body, inspector_.max_length());
  Inspection inspection;
  run([&] { inspection = inspector_.run(std::move(request)); });
  return inspection_json(vocab_, model_.config(), inspection);
}

void BatchEngine::shutdown() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

BatchEngine::Load BatchEngine::load() const {
  std::lock_guard lock(mutex_);
  return {busy_slots_, options_.slots, static_cast<int64_t>(waiting_.size()), prompt_rows_};
}

// Under mutex_.
bool BatchEngine::has_work() const {
  if (busy_slots_ > 0 || !tasks_.empty()) return true;
  return !waiting_.empty() &&
         (waiting_.front()->cancelled() || waiting_.front()->request().n <= options_.slots - busy_slots_);
}

void BatchEngine::loop() {
  for (;;) {
    Task* task = nullptr;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || has_work(); });
      if (stopping_) break;
      if (!tasks_.empty()) {
        task = tasks_.front();
        tasks_.pop_front();
      }
    }
    // At most one task between two steps: a stream of tasks delays each step by one task at
    // most, and cannot stop the completions running.
    if (task) run_task(*task);
    try {
      admit_waiting();
      step();
    } catch (const std::exception& e) {
      // A bug of ours, not a client's: its requests end, the server goes on.
      spdlog::error("generation failed, ending the running completions: {}", e.what());
      for (const auto& slot : slots_)
        if (slot->job) finish(*slot, FinishReason::stop, {});
    }
  }
  end_everything();
}

void BatchEngine::run_task(Task& task) {
  try {
    (*task.work)();
  } catch (...) {
    task.error = std::current_exception();
  }
  {
    std::lock_guard lock(mutex_);
    task.done = true;
  }
  wake_.notify_all();
}

void BatchEngine::admit_waiting() {
  for (;;) {
    std::shared_ptr<CompletionJob> job;
    {
      std::lock_guard lock(mutex_);
      if (waiting_.empty()) return;
      job = waiting_.front();
      const int64_t n = job->request().n;
      if (!job->cancelled() && n > options_.slots - busy_slots_) return;
      waiting_.pop_front();
      if (job->cancelled()) continue;
      busy_slots_ += n;
    }
    const CompletionRequest& request = job->request();
    feed_slots_.clear();
    for (int64_t s = 0; s < options_.slots && static_cast<int64_t>(feed_slots_.size()) < request.n; ++s) {
      Slot& slot = *slots_[s];
      if (slot.job) continue;
      slot.job = job;
      slot.choice = static_cast<int64_t>(feed_slots_.size());
      slot.rng = sample_stream(job->seed(), slot.choice);
      slot.sampler.emplace(request.sampling);
      slot.tokens = job->prompt();
      slot.tokens.reserve(job->prompt().size() + static_cast<std::size_t>(request.max_tokens));
      slot.window_begin = slot.generated = 0;
      slot.stops.emplace(request.stop);
      slot.held.clear();
      slot.utf8 = Utf8Repair();
      slot.feed_begin = 0;
      slot.feed_size = static_cast<int64_t>(slot.tokens.size());
      generator_.reset(s);
      feed_slots_.push_back(s);
    }
    if (request.max_tokens == 0) {
      for (const int64_t s : feed_slots_) finish(*slots_[s], FinishReason::length, {});
      continue;
    }
    const std::vector<int64_t> admitted = feed_slots_;
    prefill(admitted, job->prompt());
  }
}

// A request's choices share its prompt: it runs once, for the first slot, whose keys and values
// are then copied to the others' caches; each draws its first character from the same logits with
// its own random stream. The same bits as running it in every slot (a row's arithmetic does not
// depend on the rows beside it: Generator::append_to).
void BatchEngine::prefill(const std::vector<int64_t>& slots, const std::vector<int32_t>& prompt) {
  const auto n = static_cast<int64_t>(prompt.size());
  const float* logits = generator_.append_to({slots.front()}, prompt.data(), n);
  for (std::size_t i = 1; i < slots.size(); ++i) generator_.copy_sequence(slots.front(), slots[i]);
  {
    std::lock_guard lock(mutex_);
    prompt_rows_ += n;
  }
  for (const int64_t s : slots) after_logits(s, logits);
}

// One token (or one moved window) for every busy slot, in as few forwards as there are feed sizes.
void BatchEngine::step() {
  std::vector<std::pair<int64_t, int64_t>>& by_size = feed_order_;  // (feed size, slot)
  by_size.clear();
  for (int64_t s = 0; s < options_.slots; ++s) {
    Slot& slot = *slots_[s];
    if (!slot.job) continue;
    if (slot.job->cancelled()) {
      finish(slot, FinishReason::stop, {});
      continue;
    }
    by_size.emplace_back(slot.feed_size, s);
  }
  std::sort(by_size.begin(), by_size.end());
  for (std::size_t begin = 0; begin < by_size.size();) {
    std::size_t end = begin;
    feed_group_.clear();
    while (end < by_size.size() && by_size[end].first == by_size[begin].first)
      feed_group_.push_back(by_size[end++].second);
    feed(feed_group_, by_size[begin].first);
    begin = end;
  }
}

void BatchEngine::feed(const std::vector<int64_t>& slots, int64_t n) {
  feed_tokens_.clear();
  for (const int64_t s : slots) {
    const Slot& slot = *slots_[s];
    GPT_CHECK(slot.feed_size == n, "a feed group of one size");
    feed_tokens_.insert(feed_tokens_.end(), slot.tokens.begin() + slot.feed_begin,
                        slot.tokens.begin() + slot.feed_begin + n);
  }
  const float* logits = generator_.append_to(slots, feed_tokens_.data(), n);
  const int64_t V = model_.config().vocab_size;
  for (std::size_t i = 0; i < slots.size(); ++i) after_logits(slots[i], logits + static_cast<int64_t>(i) * V);
}

TokenLogprob BatchEngine::token_logprob(const std::string& text, int32_t token, const float* logits, int64_t top) {
  log_softmax(logits, model_.config().vocab_size, log_probs_);
  top_ids(log_probs_, top, order_);
  TokenLogprob out{text, log_probs_[token], {}};
  for (int64_t i = 0; i < std::min<int64_t>(top, static_cast<int64_t>(order_.size())); ++i)
    out.top.emplace_back(vocab_.decode(order_[i]), log_probs_[order_[i]]);
  return out;
}

// Draws a slot's next token from its logits, publishes what text that releases, and ends the
// choice or sets up what the next step feeds it.
void BatchEngine::after_logits(int64_t slot_index, const float* logits) {
  Slot& slot = *slots_[slot_index];
  const CompletionRequest& request = slot.job->request();
  const int32_t token = slot.sampler->next(logits, model_.config().vocab_size, slot.rng);
  ++slot.generated;
  slot.tokens.push_back(token);
  const std::string text = vocab_.decode(token);
  if (request.logprobs) slot.held.push_back(token_logprob(text, token, logits, *request.logprobs));
  StopMatcher::Released released = slot.stops->push(text);
  if (released.stopped || slot.generated == request.max_tokens) {
    finish(slot, released.stopped ? FinishReason::stop : FinishReason::length, std::move(released));
    return;
  }
  publish(slot, released, FinishReason::none);
  const int64_t length = static_cast<int64_t>(slot.tokens.size());
  const Window w = context_window(length, model_.config().block_size, options_.context_shift, slot.window_begin);
  if (w.begin == slot.window_begin) {
    slot.feed_begin = length - 1;
    slot.feed_size = 1;
  } else {
    generator_.reset(slot_index);
    slot.window_begin = slot.feed_begin = w.begin;
    slot.feed_size = w.end - w.begin;
  }
}

void BatchEngine::publish(Slot& slot, const StopMatcher::Released& released, FinishReason finish) {
  ChoiceEvent event;
  event.choice = slot.choice;
  event.finish = finish;
  event.generated = slot.generated;
  event.text = vocab_.kind() == VocabKind::bytes ? slot.utf8.push(released.text) : released.text;
  if (finish != FinishReason::none && vocab_.kind() == VocabKind::bytes) event.text += slot.utf8.finish();
  for (int64_t i = 0; i < released.tokens && !slot.held.empty(); ++i) {
    event.logprobs.push_back(std::move(slot.held.front()));
    slot.held.pop_front();
  }
  if (event.text.empty() && event.logprobs.empty() && finish == FinishReason::none) return;
  slot.job->publish(std::move(event));
}

// Ends a slot's choice: what the stop matcher still holds goes out unless a stop sequence ended
// it, then the slot is free.
void BatchEngine::finish(Slot& slot, FinishReason reason, StopMatcher::Released released) {
  if (!released.stopped) {
    StopMatcher::Released rest = slot.stops ? slot.stops->flush() : StopMatcher::Released{};
    released.text += rest.text;
    released.tokens += rest.tokens;
  }
  publish(slot, released, reason);
  slot.job.reset();
  slot.held.clear();
  std::lock_guard lock(mutex_);
  --busy_slots_;
}

void BatchEngine::end_everything() {
  for (const auto& slot : slots_)
    if (slot->job) finish(*slot, FinishReason::stop, {});
  std::lock_guard lock(mutex_);
  for (const auto& job : waiting_)
    for (int64_t c = 0; c < job->request().n; ++c) job->publish({c, "", {}, FinishReason::stop, 0});
  waiting_.clear();
  for (Task* task : tasks_) {
    task->error = std::make_exception_ptr(RequestError(503, "the server is shutting down"));
    task->done = true;
  }
  tasks_.clear();
  wake_.notify_all();
}

}  // namespace gpt
