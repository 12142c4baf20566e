// Saving the state a stop signal finds, while the iteration goes on. Under mpirun, Ctrl-C reaches
// the processes as SIGCONT, then SIGTERM and SIGKILL a second apart each (Open MPI's
// odls_base_sigkill_timeout): too soon to finish a long iteration and agree on the stop. So rank 0,
// which holds the whole state unless it is sharded, saves the last completed iteration from a
// thread of its own the moment a stop signal arrives.
//
// The saver thread reads nothing of the run but a StopSnapshot: the loop state the main thread
// published, under the saver's lock, after the update it describes. Weights and optimizer state
// are changed only inside apply() (under the same lock), so a save is one iteration's state.
//
// A save that fails with a UserError is logged, and the loop's own save at the stop tries again;
// any other failure (out of memory, a filesystem_error, a broken check) is kept and thrown on the
// main thread by its next call here, so it ends the run with main's message and exit code.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "core/first_failure.h"
#include "io/checkpoint.h"

namespace gpt {

// What a checkpoint records of the loop: the state with iter_num the next iteration to run.
using StopSnapshot = TrainingState;

class StopSaver {
 public:
  // `save` writes a checkpoint of the weights, the optimizer state and the snapshot it is given;
  // it runs on the saver's thread, under the lock. `stop_signal` may be null (then no thread).
  StopSaver(const std::atomic<int>* stop_signal, std::function<void(const StopSnapshot&)> save);
  ~StopSaver();
  StopSaver(const StopSaver&) = delete;
  StopSaver& operator=(const StopSaver&) = delete;

  // Runs `update` (the step that changes weights and optimizer state) and publishes `snapshot`,
  // the state after it, both under the lock. Each call here first throws a failure of the saver's.
  template <class Update>
  void apply(Update&& update, StopSnapshot snapshot) {
    const std::lock_guard lock(mutex_);
    failure_.rethrow();
    update();
    snapshot_ = std::move(snapshot);
  }
  // Publishes a snapshot without an update (the loop state changed, e.g. the schedule's length).
  void publish(StopSnapshot snapshot);
  // A save of the main thread's (every process takes part): runs under the lock, and marks the
  // iteration saved so the saver does not save it again.
  void save_now(int64_t iter_num, const std::function<void()>& save);
  int64_t last_saved_iter();

 private:
  void wait_and_save();

  const std::atomic<int>* stop_signal_;
  std::function<void(const StopSnapshot&)> save_;
  std::mutex mutex_;
  StopSnapshot snapshot_;  // iter_num 0: nothing completed yet
  int64_t last_saved_iter_ = -1;
  FirstFailure failure_;  // the saver's, captured and rethrown under the lock
  std::atomic<bool> finished_{false};
  std::thread thread_;
};

}  // namespace gpt
