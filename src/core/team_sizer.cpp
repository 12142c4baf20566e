#include "core/team_sizer.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gpt {

namespace {

// The CPUs this process may run on; empty when the kernel does not say.
std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
#endif
  return cpus;
}

// /proc/stat's "cpuN user nice system idle iowait irq softirq steal ..." lines of `cpus`, in clock
// ticks. Busy is all but idle and iowait (steal included: a hypervisor's other guests take a core
// as surely as a process does).
std::optional<CoreCounters> read_proc_stat(const std::vector<int>& cpus) {
  std::ifstream stat("/proc/stat");
  if (!stat) return std::nullopt;
  double busy_ticks = 0;
  std::size_t found = 0;
  for (std::string line; std::getline(stat, line) && line.rfind("cpu", 0) == 0;) {
    std::istringstream fields(line);
    std::string label;
    double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    if (!(fields >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal)) return std::nullopt;
    if (label == "cpu") continue;  // the sum over every core, allowed or not
    if (!std::binary_search(cpus.begin(), cpus.end(), std::stoi(label.substr(3)))) continue;
    busy_ticks += user + nice + system + irq + softirq + steal;
    ++found;
  }
  timespec own{};
  if (found != cpus.size() || clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &own) != 0) return std::nullopt;
  return CoreCounters{.cores_busy = busy_ticks / static_cast<double>(sysconf(_SC_CLK_TCK)),
                      .own = static_cast<double>(own.tv_sec) + 1e-9 * static_cast<double>(own.tv_nsec)};
}

}  // namespace

int team_size_for(double others_busy, int cores, int max_threads) {
  const double free_cores = static_cast<double>(cores) - std::max(0.0, others_busy);
  const int team = static_cast<int>(std::floor(free_cores + 0.25));
  return std::clamp(team, 1, std::max(1, max_threads));
}

TeamSizer::TeamSizer() : clock_(&steady_), cores_(1), free_cores_(1) {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.empty()) return;
  cores_ = free_cores_ = static_cast<int>(cpus.size());
  source_ = [cpus] { return read_proc_stat(cpus); };
  last_time_ = clock_->seconds();
  last_ = source_();
}

TeamSizer::TeamSizer(int cores, Source source, Clock& clock)
    : clock_(&clock), cores_(std::max(1, cores)), free_cores_(cores_), source_(std::move(source)) {
  last_time_ = clock_->seconds();
  last_ = source_();
}

int TeamSizer::threads(int max_threads) {
  max_threads = std::max(1, max_threads);
  if (!last_) return max_threads;
  const double now = clock_->seconds();
  if (now - last_time_ < kInterval) return std::min(free_cores_, max_threads);
  if (const std::optional<CoreCounters> reading = source_()) {
    const double others = (reading->cores_busy - last_->cores_busy - (reading->own - last_->own)) / (now - last_time_);
    free_cores_ = team_size_for(others, cores_, cores_);
    last_ = reading;
    last_time_ = now;
  }
  return std::min(free_cores_, max_threads);
}

}  // namespace gpt
