#!/usr/bin/env bash
# The project's test command: installs missing build dependencies (Debian packages), configures,
# builds with all cores and runs the test suite. Exit code = the suite's.
#   tools/test.sh                 Release build in build/, then ctest
#   GPT_BUILD_DIR=dir tools/test.sh   another build folder
#   GPT_CMAKE_ARGS="-DGPT_SANITIZE=ON" tools/test.sh   extra CMake options
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(g++ cmake make libcli11-dev libspdlog-dev nlohmann-json3-dev libgtest-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    echo "installing: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  else
    echo "missing packages; run: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

build_dir=${GPT_BUILD_DIR:-build}
jobs=$(nproc)
# shellcheck disable=SC2086
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release ${GPT_CMAKE_ARGS:-}
cmake --build "$build_dir" -j "$jobs"
cd "$build_dir"
ctest --output-on-failure -j "$jobs" ${GPT_CTEST_ARGS:-}
