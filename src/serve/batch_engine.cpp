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
  bool runs_prompt = false;               // its feed is its request's prompt, for all its choices
  bool awaits_prompt = false;             // another slot runs the prompt; its cache is copied here
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
  GPT_CHECK(options.slots >= 1 && options.max_waiting >= 0 && options.step_rows >= 1, "engine sizes");
  generator_.set_team_sizer(&team_sizer_);
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
  return {busy_slots_, options_.slots, static_cast<int64_t>(waiting_.size()), forwards_, prompt_rows_};
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
    int64_t leader = -1;
    for (int64_t s = 0, choice = 0; s < options_.slots && choice < request.n; ++s) {
      Slot& slot = *slots_[s];
      if (slot.job) continue;
      slot.job = job;
      slot.choice = choice++;
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
      slot.runs_prompt = leader < 0;
      slot.awaits_prompt = leader >= 0;
      if (leader < 0) leader = s;
      generator_.reset(s);
      if (request.max_tokens == 0) finish(slot, FinishReason::length, {});
    }
  }
}

// Whether slot s runs in this step; counts the prompt and window rows it adds to long_rows. The
// first prompt or window always goes, others while they fit in step_rows.
bool BatchEngine::takes_part(int64_t s, int64_t& long_rows) {
  Slot& slot = *slots_[s];
  if (!slot.job) return false;
  if (slot.job->cancelled()) {
    finish(slot, FinishReason::stop, {});
    return false;
  }
  if (slot.awaits_prompt) return false;
  if (slot.feed_size == 1) return true;
  if (long_rows > 0 && long_rows + slot.feed_size > options_.step_rows) return false;
  long_rows += slot.feed_size;
  return true;
}

// One forward for every busy slot's pending rows. The search for prompts and windows to run
// starts after the last slot that took one, so every slot gets its turn under step_rows.
void BatchEngine::step() {
  feed_slots_.clear();
  feed_counts_.clear();
  feed_tokens_.clear();
  int64_t long_rows = 0, last_long = -1;
  for (int64_t i = 0; i < options_.slots; ++i) {
    const int64_t s = (first_slot_ + i) % options_.slots;
    if (!takes_part(s, long_rows)) continue;
    const Slot& slot = *slots_[s];
    if (slot.feed_size > 1) last_long = s;
    feed_slots_.push_back(s);
    feed_counts_.push_back(slot.feed_size);
    feed_tokens_.insert(feed_tokens_.end(), slot.tokens.begin() + slot.feed_begin,
                        slot.tokens.begin() + slot.feed_begin + slot.feed_size);
  }
  if (feed_slots_.empty()) return;
  if (last_long >= 0) first_slot_ = (last_long + 1) % options_.slots;
  const float* logits = generator_.append_ragged(feed_slots_, feed_counts_, feed_tokens_.data());
  {
    std::lock_guard lock(mutex_);
    ++forwards_;
  }
  const int64_t V = model_.config().vocab_size;
  for (std::size_t i = 0; i < feed_slots_.size(); ++i) {
    const float* own = logits + static_cast<int64_t>(i) * V;
    if (slots_[feed_slots_[i]]->runs_prompt) share_prompt(feed_slots_[i], own);
    after_logits(feed_slots_[i], own);
  }
}

// The leader of a request's choices has run its prompt: the others get a copy of its keys and
// values and draw their first character from the same logits with their own random streams (the
// bits of running the prompt in every slot: a row's arithmetic does not depend on the rows beside
// it). Before the leader draws: a moved window would reset its cache.
void BatchEngine::share_prompt(int64_t leader, const float* logits) {
  Slot& slot = *slots_[leader];
  slot.runs_prompt = false;
  {
    std::lock_guard lock(mutex_);
    prompt_rows_ += slot.feed_size;
  }
  for (int64_t s = 0; s < options_.slots; ++s) {
    Slot& other = *slots_[s];
    if (other.job != slot.job || !other.awaits_prompt) continue;
    other.awaits_prompt = false;
    generator_.copy_sequence(leader, s);
    after_logits(s, logits);
  }
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
