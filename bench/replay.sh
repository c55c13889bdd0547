#!/usr/bin/env bash
# Replay holds its rate: N deliveries of a seeded store replayed, re-signed, at R/s to a
# `hookscope listen` that verifies each signature. The rate is measured at the handler, from
# the arrival times it stored (first to last), and every arrival is checked: a POST, a
# signature that verified, as many as were sent.
# Usage: bench/replay.sh [RATE:COUNT ...]   (default: 20:200 200:2000, 10 s each)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=$PWD/target/release/hookscope
dev=$PWD/target/release/hookscope-dev
# The seed signs with this secret (src/bin/hookscope-dev/seed.rs).
secret=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
work=$(mktemp -d)
trap 'kill $listen 2>/dev/null || true; rm -rf "$work"' EXIT
runs=("$@")
[ ${#runs[@]} -gt 0 ] || runs=(20:200 200:2000)
max=0
for run in "${runs[@]}"; do max=$(( ${run#*:} > max ? ${run#*:} : max )); done
"$dev" --data-dir "$work/source" seed --count "$max" >/dev/null 2>&1
for run in "${runs[@]}"; do
  rate=${run%:*} count=${run#*:}
  handler=$work/handler-$rate
  mkdir -p "$handler"
  printf '[[endpoint]]\npath = "/hooks/replayed"\nscheme = "standard-webhooks"\nsecrets = ["%s"]\n' "$secret" >"$handler/config.toml"
  chmod 600 "$handler/config.toml"
  "$bin" --data-dir "$handler" listen --port 0 2>"$handler/listen.log" >/dev/null & listen=$!
  for _ in $(seq 100); do grep -q "^listening on" "$handler/listen.log" && break; sleep 0.1; done
  url=$(sed -n 's/^listening on //p' "$handler/listen.log")/hooks/replayed
  "$bin" --data-dir "$work/source" replay --ids "1-$count" --to "$url" --resign --secret "$secret" \
    --rate "$rate/s" --json >"$handler/summary.json" || true
  sleep 0.5
  kill -INT $listen; wait $listen 2>/dev/null || true
  "$bin" --data-dir "$handler" list --json --limit "$count" >"$handler/list.ndjson"
  python3 - "$rate" "$count" "$handler" <<'PY'
import json, sys, datetime
rate, count, handler = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
summary = json.load(open(f"{handler}/summary.json"))
rows = [json.loads(l) for l in open(f"{handler}/list.ndjson")]
posts = sum(1 for r in rows if r["method"] == "POST")
verified = sum(1 for r in rows if r["checks"]["signature"]["status"] == "pass")
t = sorted(datetime.datetime.fromisoformat(r["received_at"].replace("Z", "+00:00")).timestamp() for r in rows)
measured = (len(t) - 1) / (t[-1] - t[0]) if len(t) > 1 else 0.0
off = (measured - rate) / rate * 100
print(f"rate {rate:g}/s, {count} deliveries: the handler stored {len(rows)} ({posts} POSTs, {verified} signatures verified); "
      f"measured at the handler {measured:.2f}/s ({off:+.1f} %), replay's own figure {summary['rate_per_s']}/s; "
      f"by status {summary['by_status']}; latency p50 {summary['latency_ms']['p50']} ms, p99 {summary['latency_ms']['p99']} ms")
PY
done
