#!/usr/bin/env bash
# Two hookscope binaries under the same load, alternating, so the machine's drift hits both:
# bench/run.sh's ingest (64 connections, as fast as possible) and latency (2,000/s offered)
# phases against `listen`, ROUNDS times each, with this checkout's `hookscope-dev load`.
#   bench/compare.sh BEFORE_BINARY AFTER_BINARY [ROUNDS] [SECONDS]
# e.g. build an older commit in a worktree and pass its target/release/hookscope as BEFORE.
set -euo pipefail
cd "$(dirname "$0")/.."
before=${1:?usage: bench/compare.sh BEFORE_BINARY AFTER_BINARY [ROUNDS] [SECONDS]}
after=${2:?usage: bench/compare.sh BEFORE_BINARY AFTER_BINARY [ROUNDS] [SECONDS]}
rounds=${3:-3}
secs=${4:-5}
cargo build --release --quiet --bin hookscope-dev
dev=target/release/hookscope-dev
. bench/common.sh
load() { $dev load --url "http://127.0.0.1:$1/hooks" --connections "$2" --seconds "$3" "${@:4}" \
  --scheme standard-webhooks --secret "$secret"; }
for round in $(seq "$rounds"); do
  for name in before after; do
    if [ "$name" = before ]; then bin=$before; else bin=$after; fi
    work=$(mktemp -d)
    "$bin" --data-dir "$work/store" listen --port 0 --scheme standard-webhooks --secret "$secret" \
      >/dev/null 2>"$work/listen.log" & pid=$!
    port=$(port_of "$work/listen.log")
    load "$port" 8 2 >/dev/null
    ingest=$(load "$port" 64 "$secs")
    latency=$(load "$port" 64 "$secs" --rate 2000)
    kill -INT "$pid"; wait "$pid" 2>/dev/null || true
    rm -rf "$work"
    echo "round $round $name: ingest $(echo "$ingest" | field per_second)/s," \
      "p99 at 2000/s $(echo "$latency" | field p99_ms) ms, p50 $(echo "$latency" | field p50_ms) ms"
  done
done
