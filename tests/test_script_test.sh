#!/usr/bin/env bash
# tools/test.sh, the README's test command, cannot pass by running nothing: it configures the
# suite on even in a folder configured without it (tools/quickstart.sh's folder once was), and a
# build folder whose ctest finds no test fails. The configure and build steps are a stand-in
# `cmake` that records its arguments; ctest is the real one, in an empty folder.
#   tests/test_script_test.sh CTEST
set -euo pipefail
cd "$(dirname "$0")/.."
ctest_binary=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# test.sh in a tree of its own, beside an install_deps.sh that installs nothing.
mkdir -p "$work/bin" "$work/build" "$work/tree/tools"
cp tools/test.sh "$work/tree/tools/"
printf '#!/usr/bin/env bash\nexit 0\n' >"$work/tree/tools/install_deps.sh"
chmod +x "$work/tree/tools/install_deps.sh"
cat >"$work/bin/cmake" <<STUB
#!/usr/bin/env bash
echo "\$*" >>"$work/cmake_calls"
STUB
ln -s "$ctest_binary" "$work/bin/ctest"
chmod +x "$work/bin/cmake"
fail() { echo "FAIL: $*" >&2; exit 1; }

set +e
GPT_BUILD_DIR="$work/build" PATH="$work/bin:$PATH" "$work/tree/tools/test.sh" >"$work/log" 2>&1
status=$?
set -e
[[ $status -ne 0 ]] || fail "tools/test.sh exited 0 although ctest found no test: $(cat "$work/log")"
grep -q "No tests were found" "$work/log" || fail "ctest did not run in the empty folder: $(cat "$work/log")"
configure=$(head -n 1 "$work/cmake_calls")
[[ $configure == *"-DGPT_BUILD_TESTS=ON"* ]] || fail "tools/test.sh configures without the tests: cmake $configure"
echo "tools/test.sh: configures the tests on and fails when no test runs"
