// Graph: the autograd tape and the per-step memory it records into.
// Define-by-run: each op computes its output and records one backward closure; backward() runs
// the closures in reverse order of recording, which is a valid reverse topological order for free.
// Closures live in the arena (no heap allocation per op) and must capture only trivially
// destructible values (Tensors, sizes, pointers into the arena); reset() drops them all at once.
// Gradient buffers are allocated zeroed and ops accumulate (+=) into them, so fan-out
// (a tensor used twice, e.g. residual connections) sums its gradients correctly.
#pragma once

#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/arena.h"
#include "core/tensor.h"

namespace gpt {

class Graph {
 public:
  explicit Graph(Arena& arena) : arena_(arena) { tape_.reserve(1024); }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  Arena& arena() { return arena_; }
  bool grad_enabled() const { return grad_enabled_; }
  void set_grad_enabled(bool enabled) { grad_enabled_ = enabled; }

  // A new tensor with uninitialised data; it gets a zeroed gradient buffer only when gradients
  // are enabled and `needs_grad` (some input of the op that makes it requires a gradient).
  Tensor make(Shape shape, bool needs_grad) {
    Tensor t;
    t.shape = shape;
    t.data = arena_.allocate_floats(static_cast<std::size_t>(shape.numel()));
    if (needs_grad && grad_enabled_) t.grad = arena_.allocate_zeroed_floats(static_cast<std::size_t>(shape.numel()));
    return t;
  }
  // Scratch memory an op saves for its backward (e.g. layernorm statistics).
  float* scratch(std::size_t count) { return arena_.allocate_floats(count); }

  // Records `backward` to run during backward(); call only when the output requires a gradient.
  template <typename F>
  void record(F backward) {
    static_assert(std::is_trivially_destructible_v<F>, "backward closures must capture trivially destructible values");
    if (!grad_enabled_) return;
    void* memory = arena_.allocate_bytes(sizeof(F));
    new (memory) F(std::move(backward));
    tape_.push_back({memory, [](void* closure) { (*static_cast<F*>(closure))(); }});
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
  };
  Arena& arena_;
  std::vector<Entry> tape_;
  bool grad_enabled_ = true;
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
