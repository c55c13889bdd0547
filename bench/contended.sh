#!/usr/bin/env bash
# Acknowledgements while another process keeps the disk busy: the floor (`hookscope-dev bare
# --durable`: signature check + group-committed fdatasync, nothing else) and `listen`, each paced
# at 2,000 deliveries/s for 10 s on a fresh store, alone and beside a neighbour that writes MB
# (default 256) of buffered data and fdatasyncs it, in a loop (as another program's writeback, or
# a host tenant's on a shared virtual disk, would). ROUNDS rounds (default 2).
#   bench/contended.sh [MB]
# The issue-19 fifth pass in BENCHMARKS.md was run this way.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bins
. bench/common.sh
dev=target/release/hookscope-dev
mb=${1:-256}
work=$(mktemp -d /tmp/hookscope-contended.XXXXXX)
trap 'kill ${pid:-} ${neighbour:-} 2>/dev/null || true; rm -rf "$work"' EXIT

# neighbour SECONDS: writes $mb MiB and fdatasyncs them, again and again, for SECONDS.
neighbour() {
  local end=$((SECONDS + $1))
  while [ "$SECONDS" -lt "$end" ]; do
    dd if=/dev/zero of="$work/neighbour" bs=1M count="$mb" conv=fdatasync 2>/dev/null
  done
  rm -f "$work/neighbour"
}

for round in $(seq "${ROUNDS:-2}"); do
  for server in floor listen; do
    for beside in alone neighbour; do
      rm -rf "$work/store"; mkdir -p "$work/store"
      if [ "$server" = floor ]; then
        $dev bare --port 0 --durable "$work/store" --secret "$secret" 2>"$work/log" & pid=$!
      else
        target/release/hookscope --data-dir "$work/store" listen --port 0 --scheme standard-webhooks \
          --secret "$secret" >/dev/null 2>"$work/log" & pid=$!
      fi
      url="http://127.0.0.1:$(port_of "$work/log")/hooks"
      $dev load --url "$url" --connections 8 --seconds 1 --scheme standard-webhooks --secret "$secret" >/dev/null
      if [ "$beside" = neighbour ]; then neighbour 11 & neighbour=$!; fi
      paced=$($dev load --url "$url" --connections 64 --seconds 10 --rate 2000 --scheme standard-webhooks \
        --secret "$secret" | grep '^{' | tail -1)
      if [ "$beside" = neighbour ]; then wait "$neighbour"; fi
      kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
      echo "$paced" | python3 -c "
import json, sys
j = json.load(sys.stdin)
print(f\"round $round $server, $beside: {j['acknowledged']} of {j['sent']} acknowledged, p50 {j['p50_ms']:.2f} p99 {j['p99_ms']:.2f} \"
      f\"max {j['max_ms']:.1f} ms, {len(j['stalls'])} of 100 spans with an ack over 20 ms\")"
      sync
    done
  done
done
