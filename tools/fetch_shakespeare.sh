#!/usr/bin/env bash
# Downloads the Tiny Shakespeare corpus (char-rnn's input.txt) to data/tinyshakespeare.txt and
# verifies its sha256. Without network it copies a local file instead: $TINYSHAKESPEARE if set,
# else ../shared/data/tinyshakespeare.txt beside the project. The corpus is never committed.
set -euo pipefail
cd "$(dirname "$0")/.."

url="https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
sha="86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
dest="data/tinyshakespeare.txt"

verify() { echo "$sha  $1" | sha256sum --check --status; }

if [[ -f "$dest" ]] && verify "$dest"; then
  echo "$dest: present, sha256 ok"
  exit 0
fi
tmp="$dest.download"
trap 'rm -f "$tmp"' EXIT
if command -v curl >/dev/null && curl -fsSL --max-time 30 -o "$tmp" "$url" 2>/dev/null && verify "$tmp"; then
  mv "$tmp" "$dest"
  echo "$dest: downloaded from $url, sha256 ok"
  exit 0
fi
for local_copy in "${TINYSHAKESPEARE:-}" "../shared/data/tinyshakespeare.txt"; do
  if [[ -n "$local_copy" && -f "$local_copy" ]]; then
    if verify "$local_copy"; then
      cp "$local_copy" "$tmp" && mv "$tmp" "$dest"
      echo "$dest: no network; copied from $local_copy, sha256 ok"
      exit 0
    fi
    echo "warning: $local_copy does not have the expected sha256, ignored" >&2
  fi
done
echo "error: could not download $url and no local copy found (set TINYSHAKESPEARE=/path/to/input.txt)" >&2
exit 1
