#!/usr/bin/env bash
# Two builds' op profiles side by side: runs OLD and NEW profile_ops binaries (tools/profile_ops.sh
# builds one at build/profile_ops) in interleaved rounds with the same arguments, and prints each
# row's median forward and forward + backward ms with the old / new speed-up. For a kernel change:
# build the old commit elsewhere (cmake --build OLD_BUILD --target profile_ops) and compare.
#   tools/compare_op_profiles.sh OLD_PROFILE_OPS NEW_PROFILE_OPS ROUNDS [big] [bfloat16] [REPS] [WORD]
set -euo pipefail
exec "$(dirname "$0")/compare_builds.py" ops "$@"
