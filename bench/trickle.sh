#!/usr/bin/env bash
# Bytes written to disk per delivery at a trickle, and the WAL kept bounded.
# `listen` gets N deliveries (default 1,000) of 1 KiB, one at a time on one connection at ~150/s;
# `write_bytes` of /proc/PID/io (what the process sent to the storage layer) is read before and
# after, and divided by the deliveries and by their size as received (body bytes + header names
# and values, as `hookscope list --json` gives them back).
#   bench/trickle.sh [N]
#   LISTEN_BIN=/path/to/older/hookscope bench/trickle.sh   # measure another build of listen
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000}
cargo build --release --quiet --bins
. bench/common.sh
work=$(mktemp -d /tmp/hookscope-trickle.XXXXXX)
trap 'kill ${pid:-} 2>/dev/null || true; rm -rf "$work"' EXIT
"${LISTEN_BIN:-./target/release/hookscope}" --data-dir "$work/store" listen --port 0 --scheme standard-webhooks \
  --secret "$secret" >/dev/null 2>"$work/listen.log" & pid=$!
port=$(port_of "$work/listen.log")
url="http://127.0.0.1:$port/hooks"
load() { ./target/release/hookscope-dev load --url "$url" --connections 1 --rate 150 --seconds "$1" \
  --scheme standard-webhooks --secret "$secret"; }
load 1 >/dev/null   # warm-up: the store's tables exist, the first pages are written
sleep 2
written() { awk '/^write_bytes/ {print $2}' "/proc/$pid/io"; }
size() { stat -c %s "$1" 2>/dev/null || echo 0; }
before=$(written)
report=$(load "$(( (n + 149) / 150 ))")
sent=$(echo "$report" | field acknowledged | cut -d. -f1)
after_load=$(written)
wal_busy=$(size "$work/store/hookscope.sqlite-wal")
sleep 5
after_idle=$(written)
wal_idle=$(size "$work/store/hookscope.sqlite-wal")
kill -INT "$pid"; wait "$pid" 2>/dev/null || true
"${LISTEN_BIN:-./target/release/hookscope}" --data-dir "$work/store" list --json --limit 100000 > "$work/list.json"
python3 - "$work/list.json" "$sent" "$before" "$after_load" "$after_idle" \
  "$wal_busy" "$wal_idle" "$(size "$work/store/hookscope.sqlite")" <<'PY'
import json, sys
listed, sent, before, after_load, after_idle, wal_busy, wal_idle, db_size = sys.argv[1:]
# Each delivery as received: body bytes + header names and values.
rows = [json.loads(line) for line in open(listed) if line.strip()]
stored = len(rows)
size = sum(r["body_size"] + sum(len(n) + len(v) for n, v in r["headers"]) for r in rows) / stored
sent = int(sent)
per = (int(after_idle) - int(before)) / sent
print(f"deliveries acknowledged {sent}, stored {stored} (incl. warm-up)")
print(f"delivery size as received (body + header names and values): {size:.0f} B")
print(f"written during the trickle: {(int(after_load) - int(before)) / 1e6:.2f} MB; "
      f"including the idle checkpoint after it: {(int(after_idle) - int(before)) / 1e6:.2f} MB")
print(f"written per delivery: {per / 1024:.1f} KiB = {per / size:.1f}x its size (target <= 40x)")
print(f"WAL at the end of the trickle {int(wal_busy) / 1e6:.2f} MB, 5 s idle later {int(wal_idle) / 1e6:.2f} MB (target <= 4 MB)")
print(f"database file {int(db_size) / 1e6:.2f} MB")
PY
