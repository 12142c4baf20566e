#!/usr/bin/env bash
# The project's test command: installs missing build dependencies (Debian packages), configures,
# builds with all cores and runs the test suite. Exit code = the suite's.
#   tools/test.sh                 Release build in build/, then ctest
#   GPT_BUILD_DIR=dir tools/test.sh   another build folder
#   GPT_CMAKE_ARGS="-DGPT_SANITIZE=ON" tools/test.sh   extra CMake options
set -euo pipefail
cd "$(dirname "$0")/.."

tools/install_deps.sh

build_dir=${GPT_BUILD_DIR:-build}
jobs=$(nproc)
# Tests on whatever an earlier configure of this folder chose; a suite that finds no test fails.
# shellcheck disable=SC2086
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DGPT_BUILD_TESTS=ON ${GPT_CMAKE_ARGS:-}
cmake --build "$build_dir" -j "$jobs"
cd "$build_dir"
# shellcheck disable=SC2086
ctest --output-on-failure --no-tests=error -j "$jobs" ${GPT_CTEST_ARGS:-}
