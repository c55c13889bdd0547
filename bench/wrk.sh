#!/usr/bin/env bash
# Ingest ceiling, side by side in one run, with a load generator that can saturate the bare
# server (wrk, not hookscope-dev load): a bare axum server answering 200 and storing nothing
# (`hookscope-dev bare`), then `hookscope listen` (verify + dedupe + durable commit + ack).
# wrk: 2 threads, 64 connections, SECONDS (default 8); 1 KiB Standard Webhooks JSON bodies,
# each pre-signed with its own webhook-id (a Lua file generated here, one disjoint slice of
# requests per wrk thread). Prints req/s and p99 for both, the ratio, and checks that every 2xx
# answered by listen is in its store.
#   bench/wrk.sh [SECONDS] [REQUESTS_PER_THREAD]
#   LISTEN_BIN=/path/to/older/hookscope bench/wrk.sh   # measure another build of listen
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-8}
per_thread=${2:-200000}
cargo build --release --quiet --bins
. bench/common.sh
work=$(mktemp -d /tmp/hookscope-wrk.XXXXXX)
trap 'kill ${pids[*]:-} 2>/dev/null || true' EXIT
pids=()

wrk_prepare "$work" "$per_thread"
sync

./target/release/hookscope-dev bare --port 0 2>"$work/bare.log" & pids+=($!)
bare=$(run_wrk "$(port_of "$work/bare.log")" "$secs")
kill "${pids[0]}"

"${LISTEN_BIN:-./target/release/hookscope}" --data-dir "$work/store" listen --port 0 --scheme standard-webhooks \
  --secret "$secret" >/dev/null 2>"$work/listen.log" & pids+=($!)
listen=$(run_wrk "$(port_of "$work/listen.log")" "$secs")
sleep 1
kill -INT "${pids[1]}"; wait "${pids[1]}" 2>/dev/null || true

stored=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT COUNT(*) FROM deliveries').fetchone()[0])" "$work/store/hookscope.sqlite")
echo "bare axum:        $bare"
echo "hookscope listen: $listen"
python3 - "$bare" "$listen" "$stored" <<'PY'
import json, sys
bare, listen, stored = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
acked = listen["requests"] - listen["non_2xx"]
print(f"ratio listen/bare: {listen['per_second'] / bare['per_second']:.2f} (target >= 0.5)")
print(f"listen: {acked} answered 2xx (wrk counts completed requests), {stored} stored")
PY
rm -rf "$work"
