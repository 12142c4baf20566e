#!/usr/bin/env bash
# Installs the Debian packages gpt needs to build and test, when missing. As root it runs
# apt-get; otherwise it prints the apt-get line to run and exits 1.
#   tools/install_deps.sh [EXTRA_PACKAGE ...]
set -euo pipefail
packages=(g++ cmake make pkg-config libcli11-dev libspdlog-dev nlohmann-json3-dev libxxhash-dev libboost-dev libcpp-httplib-dev libgtest-dev
          clang-format libopenmpi-dev openmpi-bin help2man "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0
if [[ $(id -u) -eq 0 ]]; then
  echo "installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "missing packages; run: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
