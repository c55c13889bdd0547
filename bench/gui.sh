#!/usr/bin/env bash
# The GUI at scale: seeds a store of N deliveries (default 1,000,000) once, then
#  1. runs the headless GUI benchmark (egui_kittest, rendering excluded): time to the first
#     rows, frame CPU while scrolling and switching selection, filter answer times;
#  2. opens the real window under Xvfb and reports when the first frame with rows was drawn,
#     and the window's RSS.
# Usage: bench/gui.sh [N] [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-1000000}
dir=${2:-/tmp/hookscope-bench-$count}
cargo build --release --quiet
if [ ! -f "$dir/hookscope.sqlite" ]; then
  ./target/release/hookscope-dev --data-dir "$dir" seed --count "$count"
fi
du -h "$dir/hookscope.sqlite"
# One benchmark at a time: side by side on 2 cores, each took the other's frames and queries
# (scrolling p95 7.0-9.1 ms together, 3.5-4.5 ms alone; BENCHMARKS.md, issue 19, seventh pass).
HOOKSCOPE_BENCH_DIR="$dir" cargo test --release --quiet --bin hookscope -- --ignored --nocapture \
  --test-threads=1 bench_gui 2>&1 \
  | grep -vE '^(running|test |$)'
if command -v Xvfb >/dev/null; then
  . .ci/xvfb.sh
  start_xvfb
  HOOKSCOPE_TRACE_STARTUP=1 ./target/release/hookscope --data-dir "$dir" 2>"$dir/gui.log" & app=$!
  sleep 6
  grep "first frame" "$dir/gui.log" || true
  echo "window RSS: $(( $(awk '/VmRSS/ {print $2}' /proc/$app/status) / 1024 )) MiB"
  kill $app $xvfb_pid 2>/dev/null || true
fi
