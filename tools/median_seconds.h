// The measuring tools' timer: the median of `reps` timed runs of f, after one untimed run.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

template <typename F>
double median_seconds(F f, int reps) {
  std::vector<double> t;
  f();  // warm up
  for (int i = 0; i < reps; ++i) {
    const auto s = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
