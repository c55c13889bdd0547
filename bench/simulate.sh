#!/usr/bin/env bash
# The provider simulator at scale (issue 15): N jobs (default 10,000) of the `render` lifecycle,
# 3 events each, 67 % of first attempts duplicated (~50,000 deliveries), at --time-scale 3600.
#  1. headless: `hookscope listen` (release) is the handler; `hookscope simulate` runs until
#     done; prints the wall time, the attempts, the simulator's peak RSS and the scorecard;
#  2. the window (egui_kittest, rendering excluded): the same run against the window's own
#     receiver while the Simulate and jobs views are drawn every 16 ms; prints the frame CPU.
# Usage: bench/simulate.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${1:-10000}
cargo build --release --quiet
work=$(mktemp -d)
trap 'kill "${listener:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
secret=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
mkdir -p "$work/handler" "$work/sim"
HOOKSCOPE_DATA_DIR="$work/handler" ./target/release/hookscope listen --port 0 \
  --scheme standard-webhooks --secret "$secret" >/dev/null 2>"$work/listen.log" & listener=$!
for _ in $(seq 50); do grep -q "listening on" "$work/listen.log" && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$work/listen.log")
/usr/bin/time -f "simulator: %e s wall, peak RSS %M KiB" env HOOKSCOPE_DATA_DIR="$work/sim" \
  ./target/release/hookscope simulate --target "${url}/hooks/sim" --jobs "$jobs" --time-scale 3600 \
  --duplicate-rate 0.67 --secret "$secret" --until-done 2>&1 | grep -v "^api on" || true
echo "handler stored: $(HOOKSCOPE_DATA_DIR="$work/handler" ./target/release/hookscope list --json --limit 1000000 | wc -l) deliveries"
HOOKSCOPE_SIM_JOBS="$jobs" cargo test --release --quiet --bin hookscope -- --ignored --nocapture bench_gui_while_simulating 2>&1 \
  | grep -vE '^(running|test |$)'
