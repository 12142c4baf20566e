// World: the processes of one run and the few collectives training needs. Under mpirun (Open MPI
// or any launcher that sets the usual rank variables) it is MPI_COMM_WORLD; otherwise, or in a
// build without MPI, a world of one process whose collectives are copies. No collective here
// reduces floating-point values: results that must not depend on the process count are summed by
// our own code in a fixed order, so only exact operations (copies, integer max) go through MPI.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/check.h"

namespace gpt {

// One per process, made by main and passed to what needs it; a default World is a world of one
// (what tests and single-process callers use).
class World {
 public:
  // The process's world: MPI_COMM_WORLD, initialised, when launched by an MPI launcher;
  // otherwise a world of one.
  static World start(int* argc, char*** argv);
  void stop();  // MPI_Finalize when MPI was initialised

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_root() const { return rank_ == 0; }
  bool distributed() const { return size_ > 1; }
  int ranks_on_this_host() const { return ranks_on_host_; }
  int hosts() const { return hosts_; }
  std::string describe() const;  // "rank 1 of 2 on host-a" (for messages)

  // all[r * count .. (r+1) * count) = rank r's `mine`.
  void all_gather(const double* mine, int count, double* all) const;
  // Rank r's part of `all` is mine (count = counts[r], at offsets[r]), gathered into every rank.
  void all_gather_v(const float* mine, float* all, const std::vector<int>& counts,
                    const std::vector<int>& offsets) const;
  void all_gather_v(const double* mine, double* all, const std::vector<int>& counts,
                    const std::vector<int>& offsets) const;
  // The root's part only: gathers like all_gather_v, into `all` on the root.
  void gather_v(const float* mine, float* all, const std::vector<int>& counts, const std::vector<int>& offsets) const;
  // From the root's `all` (read only there) to each process's `mine`: the inverse of gather_v.
  void scatter_v(const float* all, float* mine, const std::vector<int>& counts, const std::vector<int>& offsets) const;
  // Sends send[send_offsets[r] ..] (send_counts[r] floats) to rank r, receives into recv likewise.
  void all_to_all_v(const float* send, const std::vector<int>& send_counts, const std::vector<int>& send_offsets,
                    float* recv, const std::vector<int>& recv_counts, const std::vector<int>& recv_offsets) const;
  void broadcast(void* data, std::size_t bytes) const;  // from the root
  int64_t max(int64_t value) const;
  int64_t min(int64_t value) const { return -max(-value); }
  void barrier() const;
  [[noreturn]] void abort(int exit_code) const;  // ends every process of the run

 private:
  void start_mpi(int* argc, char*** argv);
  // Throws MpiFailure unless `code` is MPI_SUCCESS; `function`: the MPI call's name.
  void check_mpi(int code, const char* function) const;

  template <class T>
  void all_gather_v_of(const T* mine, T* all, const std::vector<int>& counts, const std::vector<int>& offsets) const;

  int rank_ = 0, size_ = 1, ranks_on_host_ = 1, hosts_ = 1;
  bool mpi_ = false;
  std::string host_;
};

// A failed MPI call: a runtime error (exit code 1) whose message names the call, MPI's error string
// and the process ("MPI_Bcast failed on rank 1 of 2 on host-a: MPI_ERR_TRUNCATE: message
// truncated"). It is not agreed on (run_agreeing): the other processes may be anywhere, so the
// failing process ends the run (main's MPI_Abort).
class MpiFailure : public UserError {
 public:
  explicit MpiFailure(const std::string& message) : UserError(message, ExitCode::runtime) {}
};

// An error every rank of the run raises at the same point, so none is left waiting in a collective:
// one rank reports it (`report`), the others exit quietly with the same code.
struct AgreedFailure {
  std::string message;
  int exit_code;
  bool report;
};

// Runs `step` on every rank, then agrees on the outcome: when it threw a UserError on any rank,
// every rank throws an AgreedFailure carrying the lowest failing rank's message (prefixed with
// that rank when it is not the root). A config or data error is thus reported once, not N times.
// In a world of one, `step`'s errors pass through unchanged, and so does an MpiFailure anywhere.
template <class Step>
void run_agreeing(const World& world, const Step& step);

template <class Step>
void run_agreeing(const World& world, const Step& step) {
  if (!world.distributed()) return step();  // nobody to agree with: its errors go out as they are
  std::string message;
  int code = 0;
  try {
    step();
  } catch (const MpiFailure&) {
    throw;  // agreeing would take more collectives, with processes that may never reach them
  } catch (const UserError& e) {
    message = e.what();
    code = e.exit_code();
  }
  const int64_t first = world.min(code != 0 ? world.rank() : world.size());
  if (first == world.size()) return;
  const auto exit_code = static_cast<int>(world.max(world.rank() == first ? code : 0));
  if (world.rank() == first && world.rank() != 0) message = world.describe() + ": " + message;
  throw AgreedFailure{message, exit_code, world.rank() == first};
}

}  // namespace gpt
