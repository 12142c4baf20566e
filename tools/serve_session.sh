# shellcheck shell=bash
# shellcheck disable=SC2154  # $gpt is the caller's
# Sourced by the scripts that check `gpt serve` from outside (check_openai_client.sh,
# serve_browser_check.sh): a small model trained in a temporary folder, `gpt serve --port 0` on it
# with a random API key, its address, and its stop by SIGTERM, which must exit 0.
# Needs $gpt (the binary; set by the caller); makes $work (a temporary folder, removed on exit, with the server
# stopped); sets $server (pid), $url (http://127.0.0.1:PORT) and $key_file.
work=$(mktemp -d)
server=
trap 'stop_server_quietly; rm -rf "$work"' EXIT

# $out_dir, or when it is empty a 2-layer, 64-wide model of tinyshakespeare trained for 100
# iterations (a few seconds) in $work/tiny, which becomes $out_dir.
use_model() {
  if [[ -z $out_dir ]]; then
    local began=$SECONDS
    tools/fetch_shakespeare.sh >/dev/null
    out_dir=$work/tiny
    "$gpt" train --data_path data/tinyshakespeare.txt --out_dir "$out_dir" --n_layer 2 --n_head 4 --n_embd 64 \
      --block_size 64 --dropout 0 --batch_size 8 --max_iters 100 --lr_decay_iters 100 --warmup_iters 10 \
      --eval_interval 100 --eval_iters 2 --learning_rate 4e-3 --seed 1 --quiet
    echo "trained $out_dir in $((SECONDS - began)) s"
  fi
  [[ -f $out_dir/model.safetensors ]] || { echo "error: no $out_dir/model.safetensors" >&2; exit 1; }
}

# Starts the server on run folder $1 with a fresh key; waits for the address it prints (or its death).
start_server() {
  head -c 18 /dev/urandom | base64 >"$work/key"
  key_file=$work/key
  # The files exist before the loop reads them: the server's own redirections open them only once its
  # background job runs, and a read of a missing file would end the caller (set -e).
  : >"$work/serve.out"
  : >"$work/serve.err"
  "$gpt" serve --out_dir "$1" --port 0 --quiet --api_key_file "$key_file" >"$work/serve.out" 2>"$work/serve.err" &
  server=$!
  url=
  for _ in $(seq 300); do
    url=$(sed -n 's|^gpt serve: \(http://127\.0\.0\.1:[0-9]*\)/ .*|\1|p' "$work/serve.out")
    [[ -n $url ]] && return 0
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
  done
  echo "FAIL server: no address printed" >&2
  cat "$work/serve.out" "$work/serve.err" >&2
  return 1
}

# SIGTERM must stop the server cleanly: prints PASS or FAIL; returns 1 on a nonzero exit code.
stop_server() {
  local code=0
  kill -TERM "$server"
  wait "$server" || code=$?
  server=
  if [[ $code == 0 ]]; then
    echo "PASS shutdown: SIGTERM, exit code 0"
  else
    echo "FAIL shutdown: SIGTERM, exit code $code"
    tail -n 20 "$work/serve.err"
    return 1
  fi
}

stop_server_quietly() {
  [[ -z ${server:-} ]] || { kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; }
  server=
}
