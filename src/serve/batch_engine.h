// The one thread that runs the model for a server: continuous batching over a fixed number of
// slots, like llama-server's. Each choice of each request holds a slot (a sequence of one
// Generator, with its own KV cache, position and random stream) from its prompt to its last
// character. A step is one forward (Generator::append_ragged) of every busy slot's pending rows:
// its next character, or a new request's prompt, or a window re-encoded after it moved past
// block_size. Prompts and windows are run whole (a prompt cut in two would not give gpt sample's
// bits), at most `step_rows` of their rows per step beyond the first one, so that a burst of new
// requests delays the running ones by a bounded amount. Requests that do not fit wait in order;
// more than `max_waiting` waiting is a 503. What a choice generates depends only on its request
// and seed, never on which other requests share its steps. A request's n choices share one run
// of its prompt: the first slot's keys and values are copied to the others.
// Other model work (/inspect) runs on the same thread, at most one task between two steps, so a
// stream of it slows completions by a bounded amount but cannot stop them.
//
// Memory is fixed when the engine starts: `slots` KV caches and one for /inspect, the Generator's
// arena; a request adds its prompt (at most block_size tokens) and its events (at most
// n * max_tokens), an inspection its bounded answer (serve/inspection.h).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/rng.h"
#include "data/utf8.h"
#include "data/vocab.h"
#include "model/gpt.h"
#include "sample/generator.h"
#include "sample/sampling.h"
#include "serve/completion_job.h"
#include "serve/inspection.h"
#include "serve/stop_matcher.h"

namespace gpt {

struct EngineOptions {
  int64_t slots = 32;
  int64_t max_waiting = 32;
  int64_t context_shift = 0;                             // as gpt sample's: 0 = exact
  int64_t step_rows = 512;                               // prompt and window rows in one step (see above)
  int64_t max_inspect_attention = kMaxInspectAttention;  // attention weights in one /inspect answer
};

class BatchEngine {
 public:
  BatchEngine(Gpt& model, const Vocab& vocab, EngineOptions options);
  ~BatchEngine();
  BatchEngine(const BatchEngine&) = delete;
  BatchEngine& operator=(const BatchEngine&) = delete;

  // Queues a request; RequestError 503 when too many are waiting or the engine is shutting down.
  void submit(const std::shared_ptr<CompletionJob>& job);
  // Runs `task` on the engine's thread between two steps and returns when it is done (model work
  // other than generation, such as /inspect); RequestError 503 when shutting down.
  void run(const std::function<void()>& task);
  // POST /inspect's answer for a body (serve/inspection.h): parsed and written on the calling
  // thread, the forward run as a task. RequestError for a bad body, 503 when shutting down.
  nlohmann::json inspect(const std::string& body);
  int64_t inspect_max_length() const { return inspector_.max_length(); }
  // Ends every running and waiting request (finish_reason "stop"), then the thread; idempotent.
  void shutdown();

  struct Load {
    int64_t busy_slots = 0, slots = 0, waiting = 0;
    int64_t forwards = 0;     // steps run so far: one forward each
    int64_t prompt_rows = 0;  // prompt characters run through the model so far (a request's n choices: once)
  };
  Load load() const;

 private:
  struct Slot;
  struct Task;
  void loop();
  bool has_work() const;
  void admit_waiting();
  void step();
  void run_task(Task& task);
  bool takes_part(int64_t slot_index, int64_t& long_rows);
  void share_prompt(int64_t leader, const float* logits);
  void after_logits(int64_t slot_index, const float* logits);
  TokenLogprob token_logprob(const std::string& text, int32_t token, const float* logits, int64_t top);
  void publish(Slot& slot, const StopMatcher::Released& released, FinishReason finish);
  void finish(Slot& slot, FinishReason reason, StopMatcher::Released released);
  void end_everything();

  Gpt& model_;
  const Vocab& vocab_;
  const EngineOptions options_;
  TeamSizer team_sizer_;  // before the generator that points to it
  Generator generator_;   // sequences 0 .. slots-1: the slots; sequence `slots`: the inspector's
  Inspector inspector_;
  std::vector<std::unique_ptr<Slot>> slots_;
  // Scratch of the engine thread, reused from step to step.
  std::vector<double> log_probs_;  // [V]
  std::vector<int32_t> order_;     // [V]
  std::vector<int32_t> feed_tokens_;
  std::vector<int64_t> feed_slots_, feed_counts_;
  int64_t first_slot_ = 0;  // where the next step starts looking for prompts and windows to run

  mutable std::mutex mutex_;  // guards what follows
  std::condition_variable wake_;
  std::deque<std::shared_ptr<CompletionJob>> waiting_;
  std::deque<Task*> tasks_;
  int64_t busy_slots_ = 0;
  int64_t prompt_rows_ = 0;
  int64_t forwards_ = 0;
  bool stopping_ = false;

  std::thread thread_;
};

}  // namespace gpt
