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
command -v wrk >/dev/null || (apt-get update -qq && apt-get install -y -qq wrk) >/dev/null
cargo build --release --quiet --bins
. bench/common.sh
work=$(mktemp -d /tmp/hookscope-wrk.XXXXXX)
trap 'kill ${pids[*]:-} 2>/dev/null || true' EXIT
pids=()

# Requests signed now (the receiver's tolerance is 5 minutes), two slices of PER_THREAD.
python3 - "$work" "$per_thread" "$secret" <<'PY'
import base64, hashlib, hmac, sys, time
work, per_thread, secret = sys.argv[1], int(sys.argv[2]), sys.argv[3]
key = base64.b64decode(secret.removeprefix("whsec_"))
ts = str(int(time.time()))
open(f"{work}/timestamp", "w").write(ts)
for t in range(2):
    with open(f"{work}/requests-{t + 1}.txt", "w") as f:
        for i in range(per_thread):
            n = t * per_thread + i
            pad = "a" * (1024 - 90)
            body = f'{{"id":"evt_{n}","type":"job.completed","data":{{"job_id":"job_{n // 3}","status":"completed","pad":"{pad}"}}}}'
            mid = f"msg_{n}"
            sig = base64.b64encode(hmac.new(key, f"{mid}.{ts}.{body}".encode(), hashlib.sha256).digest()).decode()
            f.write(f"{mid}\t{sig}\t{body}\n")
PY
cat >"$work/wrk.lua" <<LUA
local count = 0
function setup(thread)
  count = count + 1
  thread:set("slice", count)
end
function init(args)
  mine = {}
  for line in io.lines("$work/requests-" .. slice .. ".txt") do
    local id, sig, body = line:match("([^\t]*)\t([^\t]*)\t(.*)")
    mine[#mine + 1] = wrk.format("POST", "/hooks", {
      ["Content-Type"] = "application/json",
      ["webhook-id"] = id,
      ["webhook-timestamp"] = "$(cat "$work/timestamp")",
      ["webhook-signature"] = "v1," .. sig,
    }, body)
  end
  i = 0
end
function request()
  i = i + 1
  if i > #mine then i = 1 end
  return mine[i]
end
function done(summary, latency, requests)
  io.write(string.format("JSON {\"requests\":%d,\"seconds\":%.3f,\"per_second\":%.1f,\"p50_ms\":%.2f,\"p99_ms\":%.2f,\"non_2xx\":%d,\"errors\":%d}\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
LUA

run_wrk() { wrk -t2 -c64 -d"${secs}s" --latency -s "$work/wrk.lua" "http://127.0.0.1:$1/hooks" | grep '^JSON ' | sed 's/^JSON //'; }

./target/release/hookscope-dev bare --port 0 2>"$work/bare.log" & pids+=($!)
bare=$(run_wrk "$(port_of "$work/bare.log")")
kill "${pids[0]}"

"${LISTEN_BIN:-./target/release/hookscope}" --data-dir "$work/store" listen --port 0 --scheme standard-webhooks \
  --secret "$secret" >/dev/null 2>"$work/listen.log" & pids+=($!)
listen=$(run_wrk "$(port_of "$work/listen.log")")
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
