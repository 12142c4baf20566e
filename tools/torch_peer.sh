#!/usr/bin/env bash
# PyTorch 2.6 as the benchmark peer (issue 40): Debian 13 (trixie)'s python3-torch in a folder
# built from Debian's archive alone with debootstrap, run with chroot. Needs root.
#   tools/torch_peer.sh setup          build the folder, or complete it (idempotent), and check it
#   tools/torch_peer.sh run CMD...     run CMD inside, e.g. run python3 tools/nanogpt_train.py ...
#   tools/torch_peer.sh status         the folder, its size, torch and OpenBLAS inside
#   tools/torch_peer.sh remove         delete the folder
# The folder is ${GPT_TORCH_PEER_DIR:-~/.cache/gpt/trixie-torch} (1.7 GiB); the archive is the
# Debian mirror this machine's apt uses (GPT_TORCH_PEER_MIRROR overrides it). `run` binds /proc,
# /sys, /dev and this repository (read-only, at the same path; GPT_TORCH_PEER_WRITABLE=1 binds it
# read-write, e.g. for nanogpt_train.py --save) in a mount namespace of its own, so the mounts are
# never seen outside it and go with it however it ends (they are also unmounted on exit). CMD runs
# in the current directory when it is inside the repository (else at its root), with the caller's
# environment less OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (as tools/peer_env.sh's peer): VAR=value
# words before the command set variables, as with env.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd -P)
self=$repo/tools/torch_peer.sh
dir=${GPT_TORCH_PEER_DIR:-${HOME:-/root}/.cache/gpt/trixie-torch}
suite=trixie
want_torch=2.6.
stamp=.gpt-torch-peer-ready  # setup finished and checked
made=.gpt-debootstrap-done   # debootstrap finished: the folder is this script's to complete or remove

die() { echo "torch_peer.sh: $*" >&2; exit 1; }
say() { echo "torch_peer.sh: $*" >&2; }

need_root() { [[ $(id -u) == 0 ]] || die "needs root (debootstrap, mount and chroot)"; }

# The Debian archive this machine's apt fetches from (not its security archive); the same host
# serves trixie.
mirror() {
  if [[ -n ${GPT_TORCH_PEER_MIRROR:-} ]]; then echo "$GPT_TORCH_PEER_MIRROR"; return; fi
  local uri
  # shellcheck disable=SC2016
  uri=$(apt-get indextargets --format '$(LABEL) $(REPO_URI)' 'Created-By: Packages' 2>/dev/null |
    awk '$1 == "Debian" { print $2; exit }')
  if [[ -z $uri ]]; then  # no index fetched yet: the first deb URI in the sources
    uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
      awk '/^deb / { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }
           /^URIs:/ && $2 !~ /security/ { print $2; exit }')
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}

# Mount points at or under $1 in this mount namespace (mountinfo's 5th field, octal escapes kept).
mounts_under() {
  awk -v p="$1" '$5 == p || index($5, p "/") == 1 { print $5 }' /proc/self/mountinfo
}

# rm -rf $1, refusing while anything is mounted under it.
remove_tree() {
  local path=$1 mounts
  [[ -e $path ]] || return 0
  mounts=$(mounts_under "$(realpath "$path")")
  [[ -z $mounts ]] || die "$path has mounts under it, not removing: $(echo "$mounts" | tr '\n' ' ')"
  rm -rf --one-file-system -- "$path"
}

# Removes the folder (and a half-built $dir.partial), only if this script made it.
remove() {
  remove_tree "$dir.partial"
  if [[ -e $dir ]]; then
    [[ -f $dir/$made ]] || die "$dir was not made by this script (no $made in it): not removing it"
    remove_tree "$dir"
  fi
}

# Inside a private mount namespace (see `run`): bind /proc /sys /dev and the repository into the
# folder, run "$@" chrooted, unmount on the way out.
mounted=()
inside() {
  local root
  root=$(realpath "$dir")
  unmount_all() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
      umount -R "${mounted[i]}" 2>/dev/null || umount -R -l "${mounted[i]}" || say "could not unmount ${mounted[i]}"
    done
    mounted=()
  }
  local child=
  trap unmount_all EXIT
  # A signal stops CMD and ends here (the EXIT trap unmounts); CMD runs in the background so that
  # the trap runs at once, with the caller's standard input (fd 3).
  trap '[[ -z $child ]] || kill -INT "$child" 2>/dev/null; exit 130' INT
  trap '[[ -z $child ]] || kill -TERM "$child" 2>/dev/null; exit 143' TERM HUP
  bind() {  # bind SOURCE TARGET [ro]
    mkdir -p "$2"
    mount --rbind "$1" "$2"
    mounted+=("$2")
    if [[ ${3:-} == ro ]]; then mount -o remount,bind,ro "$2"; fi
  }
  bind /proc "$root/proc"
  bind /sys "$root/sys"
  bind /dev "$root/dev"
  local mode=ro
  [[ ${GPT_TORCH_PEER_WRITABLE:-0} == 1 ]] && mode=rw
  bind "$repo" "$root$repo" "$mode"
  local cwd=$repo
  [[ $PWD == "$repo" || $PWD == "$repo"/* ]] && cwd=$PWD
  local rc=0
  exec 3<&0
  chroot "$root" /usr/bin/env -C "$cwd" -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@" <&3 3<&- &
  child=$!
  wait "$child" || rc=$?
  child=
  unmount_all
  return "$rc"
}

# Runs "$@" in the folder, in a mount namespace of its own (--kill-child: a signal that ends
# unshare reaches the script inside, which stops CMD and unmounts).
in_root() {
  unshare --mount --propagation private --kill-child=TERM -- "$self" __inside "$@"
}

check() {
  local version
  version=$(in_root python3 -c 'import torch; print(torch.__version__)') ||
    die "python3 -c 'import torch' failed in $dir"
  [[ $version == "$want_torch"* ]] || die "torch $version in $dir, not $want_torch*"
  in_root test -f "$repo/tools/nanogpt_model.py" || die "the repository is not visible at $repo in $dir"
  in_root python3 -c 'import sys, torch; sys.path.insert(0, sys.argv[1]); from blas_core import openblas_core
print("torch", torch.__version__, "| OpenBLAS kernels", openblas_core(), "| threads", torch.get_num_threads(),
      "| torch.compile", hasattr(torch, "compile"))' "$repo/tools"
}

setup() {
  need_root
  if [[ -f $dir/$stamp ]]; then
    check
    return
  fi
  local start=$SECONDS url
  url=$(mirror)
  if [[ ! -f $dir/$made ]]; then
    [[ ! -e $dir ]] || die "$dir exists and was not made by this script: move it away or set GPT_TORCH_PEER_DIR"
    command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y debootstrap >&2
    # Into $dir.partial, renamed when done: a half-built folder from an interrupted run starts again.
    # In a mount namespace of its own, so that the /proc and /sys debootstrap mounts inside go with it.
    remove_tree "$dir.partial"
    mkdir -p "$(dirname "$dir")"
    say "debootstrap $suite from $url into $dir (a few minutes)"
    unshare --mount --propagation private -- \
      debootstrap --variant=minbase --include=python3-torch,python3-numpy,g++,python3-dev \
      "$suite" "$dir.partial" "$url" >&2
    touch "$dir.partial/$made"
    mv "$dir.partial" "$dir"
  fi
  # ATen's headers for torch.compile's generated C++; OpenBLAS as libblas.so.3, which torch
  # links (otherwise the reference BLAS).
  in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    libtorch-dev libopenblas0-pthread >&2
  in_root apt-get clean
  check
  touch "$dir/$stamp"
  say "ready in $((SECONDS - start)) s: $dir, $(du -sh --one-file-system "$dir" | cut -f1)"
}

cmd=${1:-}
[[ $# -gt 0 ]] && shift
case $cmd in
  setup) setup ;;
  run)
    need_root
    [[ $# -gt 0 ]] || die "run needs a command"
    [[ -f $dir/$stamp ]] || die "no peer folder at $dir: run tools/torch_peer.sh setup"
    exec unshare --mount --propagation private --kill-child=TERM -- "$self" __inside "$@"
    ;;
  __inside) inside "$@" ;;
  status)
    echo "folder: $dir"
    if [[ -f $dir/$stamp ]]; then
      echo "size: $(du -sh --one-file-system "$dir" | cut -f1)"
      echo "mirror: $(sed -n 's/^deb \([^ ]*\).*/\1/p' "$dir/etc/apt/sources.list" 2>/dev/null | head -1)"
      need_root
      check
    else
      echo "not set up (tools/torch_peer.sh setup)"
    fi
    ;;
  remove)
    need_root
    remove
    ;;
  *) sed -n '2,16s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
