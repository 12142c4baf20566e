#!/usr/bin/env bash
# Cross-compiles gpt for aarch64 Linux into build-aarch64/ on an x86-64 Debian machine, with the
# toolchain file cmake/aarch64-linux-gnu.cmake; what it builds runs under qemu-user
# (tools/compare_aarch64.sh). Installs what is missing (as root: apt-get, after adding the arm64
# architecture; otherwise it prints the commands and exits 1): Debian's cross compiler, qemu-user
# and the arm64 builds of our libraries. Without MPI, without the man page (help2man would have to
# run the aarch64 binary), without gpt serve (its tests' client, Debian's cpp-httplib, is a compiled
# library whose arm64 build would bring OpenSSL's, zlib's and brotli's; a native aarch64 build has it).
#   tools/build_aarch64.sh              gpt and every test binary
#   tools/build_aarch64.sh TARGET ...   only these targets (CI: gpt and the tests it runs)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(g++-aarch64-linux-gnu qemu-user cmake make libcli11-dev nlohmann-json3-dev
          libspdlog-dev:arm64 libfmt-dev:arm64 libgtest-dev:arm64)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "missing packages; run: sudo dpkg --add-architecture arm64 && sudo apt-get update &&" \
      "sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "installing: ${missing[*]}"
  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

build_dir=${GPT_BUILD_DIR:-build-aarch64}
# shellcheck disable=SC2086
cmake -S . -B "$build_dir" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release \
  -DGPT_MPI=OFF -DGPT_SERVE=OFF ${GPT_CMAKE_ARGS:-} >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
