// How many threads a short parallel step should use when other processes may want the same cores.
// A step whose threads meet at barriers goes at its slowest thread's pace: on oversubscribed cores
// a thread waits a scheduler time slice for a descheduled peer at every barrier. So the team
// shrinks to the cores others leave free, judged from the kernel's counters over the cores this
// process may run on (its affinity): their busy time less this process's CPU time. Speed only:
// a step gives the same bits on any thread count.
#pragma once

#include <functional>
#include <optional>

#include "core/clock.h"

namespace gpt {

// The team for `cores` cores of which other processes keep `others_busy` busy (a time average):
// the free cores, rounded up from three quarters, between 1 and max_threads.
int team_size_for(double others_busy, int cores, int max_threads);

// One reading of the counters, in seconds: the busy time of the cores this process may run on, and
// this process's CPU time.
struct CoreCounters {
  double cores_busy = 0, own = 0;
};

class TeamSizer {
 public:
  using Source = std::function<std::optional<CoreCounters>()>;
  // Linux: /proc/stat's lines of the cores in this process's affinity; elsewhere nothing, and
  // every step gets max_threads.
  TeamSizer();
  TeamSizer(int cores, Source source, Clock& clock);  // tests: any counters, any time
  TeamSizer(const TeamSizer&) = delete;
  TeamSizer& operator=(const TeamSizer&) = delete;

  // The team for the next step of up to max_threads threads: max_threads until a reading says
  // otherwise. Reads the counters at most every kInterval seconds.
  int threads(int max_threads);

  static constexpr double kInterval = 0.1;

 private:
  SteadyClock steady_;
  Clock* clock_;
  int cores_, free_cores_;  // free_cores_: the team size the last reading allows
  Source source_;
  std::optional<CoreCounters> last_;
  double last_time_ = 0;
};

}  // namespace gpt
