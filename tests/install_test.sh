#!/usr/bin/env bash
# Installs the build into a temporary prefix and checks what a user gets: bin/gpt, which runs
# and reports the project's version, and (with `man`: the build made one) the man page, which
# renders and documents the subcommands and their options.
#   tests/install_test.sh BUILD_DIR VERSION man|no_man
set -euo pipefail
build=$1 version=$2 want_man=$3
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT

cmake --install "$build" --prefix "$prefix" >/dev/null
fail() { echo "FAIL: $*" >&2; exit 1; }

[[ -x $prefix/bin/gpt ]] || fail "no $prefix/bin/gpt"
reported=$("$prefix/bin/gpt" --version) || fail "$prefix/bin/gpt --version exited with $?"
# The version, then the kernels this machine runs: "gpt 0.1.0 (kernels: float32 avx512, ...)".
[[ $reported == "gpt $version (kernels: "* ]] ||
  fail "gpt --version says '$reported', expected 'gpt $version (kernels: ...)'"

page=$prefix/share/man/man1/gpt.1
if [[ $want_man == man ]]; then
  [[ -f $page ]] || fail "no $page"
  if command -v man >/dev/null; then
    text=$(MANWIDTH=100 man -l "$page" 2>/dev/null) || fail "man -l $page failed"
    for expected in SYNOPSIS SUBCOMMANDS "gpt train" "gpt sample" "gpt report" --n_embd --max_new_tokens; do
      grep -qF -- "$expected" <<<"$text" || fail "the man page does not mention $expected"
    done
  fi
else
  [[ ! -e $page ]] || fail "a man page although the build made none"
fi
echo "installed bin/gpt ($reported)$([[ $want_man == man ]] && echo " and share/man/man1/gpt.1")"
