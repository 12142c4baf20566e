// OpenMP's runtime calls for a build without OpenMP (CMakeLists.txt uses this folder when
// find_package(OpenMP) fails, e.g. Apple clang without Homebrew's libomp): one thread, and the
// `#pragma omp` lines are ignored. Results are the same bits as with OpenMP on any thread count.
#pragma once

inline int omp_get_max_threads() { return 1; }
inline int omp_get_num_threads() { return 1; }
inline int omp_get_thread_num() { return 0; }
inline int omp_in_parallel() { return 0; }
inline void omp_set_num_threads(int) {}
