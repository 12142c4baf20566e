#include "core/team_sizer.h"

#include "core/clock.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <string>

namespace gpt {

int team_size_for(double others_busy, int cores, int max_threads) {
  const double free_cores = static_cast<double>(cores) - std::max(0.0, others_busy);
  const int team = static_cast<int>(std::floor(free_cores + 0.25));
  return std::clamp(team, 1, std::max(1, max_threads));
}

TeamSizer::TeamSizer()
    : cores_(static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)))), free_cores_(cores_), last_(read()) {}

int TeamSizer::threads(int max_threads) {
  max_threads = std::max(1, max_threads);
  if (!last_ || max_threads == 1) return max_threads;
  if (SteadyClock().seconds() - last_->wall >= kInterval) {
    if (const std::optional<Reading> reading = read()) {
      const double elapsed = reading->wall - last_->wall;
      const double others = (reading->machine_busy - last_->machine_busy - (reading->own - last_->own)) / elapsed;
      free_cores_ = team_size_for(others, cores_, cores_);
      last_ = reading;
    }
  }
  return std::min(free_cores_, max_threads);
}

// /proc/stat's first line: "cpu user nice system idle iowait irq softirq steal ..." in clock
// ticks, summed over every core. Busy is all but idle and iowait (steal included: a hypervisor's
// other guests take the core as surely as a process does).
std::optional<TeamSizer::Reading> TeamSizer::read() {
  std::ifstream stat("/proc/stat");
  std::string label;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (!(stat >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) || label != "cpu")
    return std::nullopt;
  timespec own{};
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &own) != 0) return std::nullopt;
  const double tick = 1.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
  Reading r;
  r.wall = SteadyClock().seconds();
  r.machine_busy = (user + nice + system + irq + softirq + steal) * tick;
  r.own = static_cast<double>(own.tv_sec) + 1e-9 * static_cast<double>(own.tv_nsec);
  return r;
}

}  // namespace gpt
