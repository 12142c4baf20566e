#include "train/stop_saver.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "core/check.h"

namespace gpt {

StopSaver::StopSaver(const std::atomic<int>* stop_signal, std::function<void(const StopSnapshot&)> save)
    : stop_signal_(stop_signal), save_(std::move(save)) {
  snapshot_.iter_num = 0;
  if (stop_signal_) thread_ = std::thread([this] { wait_and_save(); });
}

StopSaver::~StopSaver() {
  finished_.store(true);
  if (thread_.joinable()) thread_.join();
}

void StopSaver::publish(StopSnapshot snapshot) {
  const std::lock_guard lock(mutex_);
  failure_.rethrow();
  snapshot_ = std::move(snapshot);
}

void StopSaver::save_now(int64_t iter_num, const std::function<void()>& save) {
  const std::lock_guard lock(mutex_);
  failure_.rethrow();
  last_saved_iter_ = iter_num;
  save();
}

int64_t StopSaver::last_saved_iter() {
  const std::lock_guard lock(mutex_);
  failure_.rethrow();
  return last_saved_iter_;
}

// Polls rather than waits on a condition: the signal handler can only store to an atomic.
void StopSaver::wait_and_save() {
  while (!finished_.load() && stop_signal_->load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (finished_.load()) return;
  const std::lock_guard lock(mutex_);
  const int64_t completed = snapshot_.iter_num;
  if (completed == last_saved_iter_ || completed == 0) return;  // nothing new to keep
  failure_.capture([&] {
    try {
      save_(snapshot_);
      last_saved_iter_ = completed;
      spdlog::warn("stop requested: saved the state after iteration {}; finishing the current iteration",
                   completed - 1);
    } catch (const std::exception& e) {
      spdlog::error("stop requested, but the checkpoint could not be saved: {}", e.what());
      // Any failure but a UserError ends the run. It is said here as well as by main: under
      // mpirun, SIGKILL may come before the main thread next calls the saver.
      if (!dynamic_cast<const UserError*>(&e)) throw;
    }
  });
}

}  // namespace gpt
