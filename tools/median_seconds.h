// The measuring tools' timer: the median of `reps` timed runs of f, after one untimed run.
#pragma once

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

// The middle value (the upper of the two middle ones for an even count).
inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

template <typename F>
double median_seconds(F f, int reps) {
  std::vector<double> t;
  f();  // warm up
  for (int i = 0; i < reps; ++i) {
    const auto s = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count());
  }
  return median(std::move(t));
}
