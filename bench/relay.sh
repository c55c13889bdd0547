#!/usr/bin/env bash
# The relay's figures (issue 50), each beside its target, in one run on loopback:
#   1. ingest: the SQLite reference (`hookscope-dev bare --sqlite`) and `hookscope relay serve`
#      with no subscriber, each under wrk (2 threads, 64 connections, SECONDS, the same
#      pre-signed 1 KiB Standard Webhooks requests, bench/common.sh); the relay's rows = its 2xx;
#   2. the relay's RSS after that burst;
#   3. provider to laptop at 500/s with pass-through (a laptop connected, on a channel of its
#      own): the sender's p99 (`hookscope-dev load --rate 500`), and the p99 of how long each
#      delivery waited at the relay before the laptop took it (`relay_delay_ms` in the laptop's
#      store: measured when the laptop opened it, before its commit);
#   4. catch-up: `listen --relay` on a fresh laptop takes the whole backlog the burst left; the
#      rate at which it lands in the laptop's store, all stored = all the relay acknowledged.
#   5. RELAY_MILLION=1: the relay loaded on to 1,000,000 stored deliveries, its RSS on the way.
#   bench/relay.sh [SECONDS]      (default 10 s)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
cargo build --release --quiet --bins
bin=target/release/hookscope
dev=target/release/hookscope-dev
. bench/common.sh
work=$(mktemp -d /tmp/hookscope-relay-bench.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
rss_mib() { echo $(( $(awk '/VmRSS/ {print $2}' "/proc/$1/status") / 1024 )); }
sql() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])" "$@"; }

echo "machine: $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ); $(git rev-parse --short HEAD)"
WRK_PATH=/in/bench/hooks wrk_prepare "$work" 150000
sync

# 1. The SQLite reference, then the relay, on the same requests.
$dev bare --port 0 --sqlite "$work/reference" --secret "$secret" 2>"$work/reference.log" & pids+=($!)
phase reference run_wrk "$(port_of "$work/reference.log")" "$secs"
kill "${pids[-1]}"; rm -rf "$work/reference"; sync

key=$($bin --data-dir "$work/laptop" relay key 2>/dev/null)
token=$($bin --data-dir "$work/relay" relay channel add bench --recipient "$key" --keep-mib 4096 --json \
  | python3 -c "import json,sys; print(json.load(sys.stdin)['token'])")
$bin --data-dir "$work/relay" relay serve --port 0 2>"$work/relay.log" & pids+=($!)
relay_pid=${pids[-1]}
relay_port=$(port_of "$work/relay.log")
phase relay run_wrk "$relay_port" "$secs"
relay_rss=$(rss_mib "$relay_pid")
sleep 1
relay_rows=$(sql "$work/relay/relay.sqlite" "SELECT COUNT(*) FROM deliveries")

# 3. Provider to laptop at 500/s, pass-through, on a channel of its own with a laptop that has
# nothing to catch up on.
live_token=$($bin --data-dir "$work/relay" relay channel add live --recipient "$key" --json \
  | python3 -c "import json,sys; print(json.load(sys.stdin)['token'])")
export BENCH_LIVE_TOKEN=$live_token
mkdir -p "$work/live" && cp "$work/laptop/relay-key.txt" "$work/live/"
$bin --data-dir "$work/live" listen --port 0 --relay "http://127.0.0.1:$relay_port/sub/live" \
  --relay-token-env BENCH_LIVE_TOKEN --scheme standard-webhooks --secret "$secret" >/dev/null 2>"$work/live.log" & pids+=($!)
sleep 3
paced=$($dev load --url "http://127.0.0.1:$relay_port/in/live/hooks" --connections 32 --seconds "$secs" \
  --rate 500 --scheme standard-webhooks --secret "$secret")
waited=$(python3 - "$work/live/hookscope.sqlite" <<'PY'
import sqlite3, sys
rows = [r[0] for r in sqlite3.connect(sys.argv[1]).execute(
    "SELECT relay_delay_ms FROM deliveries WHERE relay_seq IS NOT NULL ORDER BY relay_delay_ms")]
print(f"{len(rows)} stored, p50 {rows[len(rows) // 2]} ms, p99 {rows[int(len(rows) * 0.99)]} ms" if rows else "none stored")
PY
)
kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true

# 4. Catch-up: the whole backlog into a fresh laptop.
export BENCH_RELAY_TOKEN=$token
started=$(date +%s.%N)
$bin --data-dir "$work/laptop" listen --port 0 --relay "http://127.0.0.1:$relay_port/sub/bench" \
  --relay-token-env BENCH_RELAY_TOKEN --scheme standard-webhooks --secret "$secret" >/dev/null 2>"$work/listen.log" & pids+=($!)
while :; do
  got=$(sql "$work/laptop/hookscope.sqlite" "SELECT COUNT(*) FROM deliveries" 2>/dev/null || echo 0)
  [ "$got" -ge "$relay_rows" ] && break
  sleep 0.2
done
took=$(python3 -c "import time; print(round(time.time() - $started, 2))")
passed=$(sql "$work/laptop/hookscope.sqlite" "SELECT COUNT(*) FROM deliveries WHERE sig_status = 'pass'")

# 5. RELAY_MILLION=1: the relay to 1,000,000 stored deliveries (the laptop gone), its RSS sampled
# every 5 s on the way (the bench channel's quota is 4 GiB: 1,000,000 sealed deliveries are
# ~1.5 GB).
million=""
if [ -n "${RELAY_MILLION:-}" ]; then
  kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true
  rss_max=0
  while :; do
    rows=$(sql "$work/relay/relay.sqlite" "SELECT COUNT(*) FROM deliveries")
    [ "$rows" -ge 1000000 ] && break
    out=$(run_wrk "$relay_port" 5)
    # Refused (429: the channel's quota, 1 GiB unless told) means the load cannot go on.
    [ "$(echo "$out" | field non_2xx)" = "0" ] || { echo "  refused: $out" >&2; break; }
    rss=$(rss_mib "$relay_pid"); [ "$rss" -gt "$rss_max" ] && rss_max=$rss
    echo "  $rows stored, RSS $rss MiB" >&2
  done
  million="relay at $rows stored deliveries: RSS $(rss_mib "$relay_pid") MiB, the most seen on the way $rss_max MiB (target <= 150 MiB)"
fi

echo
echo "ingest, wrk 2 threads 64 connections ${secs} s, 1 KiB signed JSON:"
echo "  SQLite reference: $reference"
echo "  relay (no subscriber): $relay"
python3 - "$reference" "$relay" "$relay_rows" <<'PY'
import json, sys
ref, relay, rows = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
acked = relay["requests"] - relay["non_2xx"]
print(f"  ratio relay/reference: {relay['per_second'] / ref['per_second']:.2f} (target >= 0.6)")
print(f"  relay rows {rows} for {acked} acknowledged (rows >= 2xx: {rows >= acked})")
PY
echo "relay RSS after the burst: ${relay_rss} MiB"
echo "catch-up: $relay_rows deliveries in ${took} s = $(python3 -c "print(round($relay_rows / $took))")/s (target >= 3,000/s); $passed signatures pass"
echo "provider to laptop at 500/s, pass-through: sender $paced"
echo "  waited at the relay until the laptop took it: $waited (target p99 <= 25 ms)"
[ -n "$million" ] && echo "$million"
printf '%s\n' "${phases[@]}"
