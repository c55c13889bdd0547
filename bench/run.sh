#!/usr/bin/env bash
# hookscope's performance figures, side by side with a bare axum server, in one run.
#   bench/run.sh [SECONDS]            (default 10 s per load phase)
#   MILLION=1 bench/run.sh            also loads `listen` up to 1,000,000 stored deliveries and
#                                     reads its RSS there (a few minutes)
# The window's figures at 1,000,000 deliveries are bench/gui.sh.
# Prints each figure beside its target. Needs only the Rust toolchain and curl.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
cargo build --release --quiet
bin=target/release/hookscope
dev=target/release/hookscope-dev
. bench/common.sh
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

rss_mib() { echo $(( $(awk '/VmRSS/ {print $2}' "/proc/$1/status") / 1024 )); }

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {print int($2/1048576)}' /proc/meminfo) GiB; $(date -u +%Y-%m-%dT%H:%MZ)"

# 1. The ceiling: a bare axum server answering 200 without checking or storing.
$dev bare --port 0 2>"$work/bare.log" & pids+=($!)
bare=$($dev load --url "http://127.0.0.1:$(port_of "$work/bare.log")/hooks" --connections 64 --seconds "$secs" \
  --scheme standard-webhooks --secret "$secret")
kill "${pids[-1]}"

# 2. hookscope listen: verify + duplicate check + durable commit + ack.
$bin --data-dir "$work/store" listen --port 0 --scheme standard-webhooks --secret "$secret" >/dev/null 2>"$work/listen.log" & pids+=($!)
listen_pid=${pids[-1]}
port=$(port_of "$work/listen.log")
warm=$($dev load --url "http://127.0.0.1:$port/hooks" --connections 8 --seconds 2 --scheme standard-webhooks --secret "$secret")
rss_1k=$(rss_mib "$listen_pid")
ingest=$($dev load --url "http://127.0.0.1:$port/hooks" --connections 64 --seconds "$secs" \
  --scheme standard-webhooks --secret "$secret")
latency=$($dev load --url "http://127.0.0.1:$port/hooks" --connections 64 --seconds "$secs" --rate 2000 \
  --scheme standard-webhooks --secret "$secret")
big=$(head -c $((10 * 1024 * 1024)) /dev/zero | tr '\0' 'a' > "$work/big.json"; \
  curl -s -o /dev/null -w '%{time_total}' --data-binary @"$work/big.json" "http://127.0.0.1:$port/hooks/big")
rss_after=$(rss_mib "$listen_pid")
rss_million=skipped
if [ -n "${MILLION:-}" ]; then
  # Keep loading until the store holds a million deliveries, then read the RSS again.
  while :; do
    n=$($bin --data-dir "$work/store" list --json --limit 1 | python3 -c "import json,sys; print(json.load(sys.stdin)['id'])")
    [ "$n" -ge 1000000 ] && break
    $dev load --url "http://127.0.0.1:$port/hooks" --connections 64 --seconds 20 \
      --scheme standard-webhooks --secret "$secret" >/dev/null
  done
  rss_million=$(rss_mib "$listen_pid")
fi
kill -INT "$listen_pid"; sleep 2
stored=$($bin --data-dir "$work/store" list --json --limit 1 | python3 -c "import json,sys; print(json.load(sys.stdin)['id'])")
count() { echo "$1" | field acknowledged | cut -d. -f1; }
acked=$(( $(count "$warm") + $(count "$ingest") + $(count "$latency") + 1 ))
[ -n "${MILLION:-}" ] && acked="(million phase: see stored)"

bare_rate=$(echo "$bare" | field per_second)
rate=$(echo "$ingest" | field per_second)
printf '\n%-44s %-14s %s\n' "figure" "measured" "target"
printf '%-44s %-14s %s\n' "bare axum, 64 connections, 1 KiB (req/s)" "$bare_rate" "(the ceiling)"
printf '%-44s %-14s %s\n' "hookscope listen, same load (req/s)" "$rate" ">= half the ceiling"
printf '%-44s %-14s %s\n' "ratio" "$(python3 -c "print(round($rate/$bare_rate, 2))")" ">= 0.5"
printf '%-44s %-14s %s\n' "p99 ack at 2,000/s offered (ms)" "$(echo "$latency" | field p99_ms)" "<= 5"
printf '%-44s %-14s %s\n' "p50 / max ack at 2,000/s (ms)" "$(echo "$latency" | field p50_ms) / $(echo "$latency" | field max_ms)" ""
printf '%-44s %-14s %s\n' "10 MiB body acknowledged in (s)" "$big" "<= 0.2"
printf '%-44s %-14s %s\n' "stored / acknowledged (incl. warm-up, 10 MiB)" "$stored / $acked" "equal: nothing lost"
printf '%-44s %-14s %s\n' "listen RSS after warm-up -> after load (MiB)" "$rss_1k -> $rss_after" "growth within 100 MiB"
printf '%-44s %-14s %s\n' "listen RSS at 1,000,000 stored (MiB)" "$rss_million" "within 100 MiB of warm-up (MILLION=1)"
echo
echo "raw: bare=$bare"
echo "raw: ingest=$ingest"
echo "raw: latency=$latency"
