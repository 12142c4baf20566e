// How many threads a short parallel step should use on a machine other processes may also keep
// busy. A step split over threads that meet at barriers runs at the pace of its slowest thread:
// when the cores are oversubscribed, a thread waits a scheduler time slice for a descheduled peer
// at every barrier, and two threads ran a sampler step many times slower than one. So the team
// shrinks to the cores the other processes leave free (and grows back when they leave), judged
// from the kernel's counters: the machine's busy time less this process's CPU time. The team size
// changes speed only: every step gives the same bits on any thread count.
#pragma once

#include <optional>

namespace gpt {

// The team for a machine of `cores` cores on which other processes keep `others_busy` cores busy
// (a time average): the free cores, rounded up from three quarters, between 1 and max_threads.
int team_size_for(double others_busy, int cores, int max_threads);

class TeamSizer {
 public:
  TeamSizer();
  // The team for the next step of up to max_threads threads: max_threads until a reading says
  // otherwise. Reads the counters at most every kInterval seconds; where they cannot be read (not
  // Linux), max_threads.
  int threads(int max_threads);

  static constexpr double kInterval = 0.1;

 private:
  struct Reading {
    double wall = 0, machine_busy = 0, own = 0;  // seconds: monotonic clock, all cores' busy time, this process's CPU
  };
  static std::optional<Reading> read();

  int cores_, free_cores_;  // the team size the last reading allows
  std::optional<Reading> last_;
};

}  // namespace gpt
