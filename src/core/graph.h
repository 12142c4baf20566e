// Graph: the autograd tape and the per-step memory it records into.
// Define-by-run: each op computes its output and records one backward closure; backward() runs
// the closures in reverse order of recording, which is a valid reverse topological order for free.
// Closures live in the arena (no heap allocation per op) and must capture only trivially
// destructible values (Tensors, sizes, pointers into the arena); reset() drops them all at once.
// Gradient buffers are handed out zeroed and ops accumulate (+=) into them, so fan-out
// (a tensor used twice, e.g. residual connections) sums its gradients correctly.
// Memory: each tape entry names the tensor its op produced. Every consumer of that tensor was
// recorded later, so ran earlier in backward; once the entry has run, nothing reads the tensor's
// gradient again and its buffer goes back to the BufferPool for the next gradient of the same size.
// An entry whose output received no gradient is skipped: all it could add is zeros.
#pragma once

#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/arena.h"
#include "core/tensor.h"

namespace gpt {

// Per-step buffers that live shorter than the step, recycled by exact size (a model has a handful
// of distinct sizes): activation gradients, and the transient values fused ops compute and
// recompute instead of keeping (see Graph::borrow). Buffers come from the arena, so they too are
// freed by the step's reset.
class BufferPool {
 public:
  explicit BufferPool(Arena& arena) : arena_(arena) { free_.reserve(64); }
  float* acquire(std::size_t count);  // uninitialised
  float* acquire_zeroed(std::size_t count);
  void release(float* data, std::size_t count) { free_.push_back({count, data}); }
  void release(GradSlot& slot);
  void reset() { free_.clear(); }

 private:
  struct FreeBuffer {
    std::size_t count;
    float* data;
  };
  Arena& arena_;
  std::vector<FreeBuffer> free_;
};

class Graph {
 public:
  explicit Graph(Arena& arena) : arena_(arena), buffer_pool_(arena) { tape_.reserve(1024); }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  Arena& arena() { return arena_; }
  bool grad_enabled() const { return grad_enabled_; }
  void set_grad_enabled(bool enabled) { grad_enabled_ = enabled; }

  // A new tensor with uninitialised data; it gets a gradient slot (its buffer comes later, in
  // backward) only when gradients are enabled and `needs_grad` (some input of the op that makes it
  // requires a gradient).
  Tensor make(Shape shape, bool needs_grad) {
    Tensor t;
    t.shape = shape;
    t.data = arena_.allocate_floats(static_cast<std::size_t>(shape.numel()));
    if (needs_grad && grad_enabled_)
      t.grad_slot = new (arena_.allocate_bytes(sizeof(GradSlot)))
          GradSlot{nullptr, static_cast<std::size_t>(shape.numel()), &buffer_pool_};
    return t;
  }
  // Scratch memory an op saves for its backward (e.g. layernorm statistics).
  float* scratch(std::size_t count) { return arena_.allocate_floats(count); }
  // A buffer for a value an op needs only while it runs (forward or backward), uninitialised;
  // hold it in a Borrowed so it goes back to the pool when the op is done with it.
  float* borrow(std::size_t count) { return buffer_pool_.acquire(count); }
  void give_back(float* data, std::size_t count) { buffer_pool_.release(data, count); }

  // Records `backward`, the backward of the op that produced `output`, to run during backward();
  // call only when `output` requires a gradient. An op may record several entries for one output
  // (one per input, recorded back to back); the first recorded, which runs last, releases it.
  template <typename F>
  void record(const Tensor& output, F backward) {
    static_assert(std::is_trivially_destructible_v<F>, "backward closures must capture trivially destructible values");
    if (!grad_enabled_) return;
    GPT_CHECK(output.grad_slot != nullptr, "recording a backward for an output without a gradient");
    void* memory = arena_.allocate_bytes(sizeof(F));
    new (memory) F(std::move(backward));
    const bool releases_output = tape_.empty() || tape_.back().output != output.grad_slot;
    tape_.push_back({memory, [](void* closure) { (*static_cast<F*>(closure))(); }, output.grad_slot, releases_output});
  }

  // Seeds d(loss)/d(loss) = 1 and runs the tape in reverse. `loss` must be a scalar with a grad.
  void backward(const Tensor& loss);
  // Runs the tape in reverse for a caller that has seeded the output gradients itself.
  void run_backward();
  // Drops the tape and every per-step tensor (the arena is reset).
  void reset();
  std::size_t tape_size() const { return tape_.size(); }

 private:
  struct Entry {
    void* closure;
    void (*run)(void*);
    GradSlot* output;
    bool releases_output;
  };
  Arena& arena_;
  BufferPool buffer_pool_;
  std::vector<Entry> tape_;
  bool grad_enabled_ = true;
};

// A borrowed transient buffer, given back when the scope ends (none when count is 0).
class Borrowed {
 public:
  Borrowed(Graph& graph, std::size_t count)
      : graph_(graph), data_(count ? graph.borrow(count) : nullptr), count_(count) {}
  ~Borrowed() {
    if (data_) graph_.give_back(data_, count_);
  }
  Borrowed(const Borrowed&) = delete;
  Borrowed& operator=(const Borrowed&) = delete;
  float* data() const { return data_; }

 private:
  Graph& graph_;
  float* data_;
  std::size_t count_;
};

// Scoped no-grad mode: ops record nothing and allocate no gradient buffers (evaluation, sampling).
class NoGradGuard {
 public:
  explicit NoGradGuard(Graph& graph) : graph_(graph), previous_(graph.grad_enabled()) { graph.set_grad_enabled(false); }
  ~NoGradGuard() { graph_.set_grad_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  Graph& graph_;
  bool previous_;
};

}  // namespace gpt
