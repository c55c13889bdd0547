#!/usr/bin/env bash
# The soak: `hookscope listen` and the window (under Xvfb, its own receiver, the list following
# live) each take 500 signed deliveries/s for MINUTES (default 30), 10 % of them retries of the
# previous event and 5 % with a spoiled signature, while the window's filter changes every
# 10 s (typed with xdotool). Reports, for both processes: RSS at start and end, the load
# generator's acknowledgement p99, acknowledged vs stored, and the store's growth per
# delivery; for the window, the frame CPU p99 (HOOKSCOPE_TRACE_FRAMES).
#
#   bench/soak.sh [MINUTES]
#   SLOW_FSYNC_MS=200 bench/soak.sh 2   # the same with every fsync 200 ms slower (a slow disk)
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-30}
seconds=$((minutes * 60))
rate=500
secret=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw

need=()
command -v Xvfb >/dev/null || need+=(xvfb)
command -v xdotool >/dev/null || need+=(xdotool)
if [ ${#need[@]} -gt 0 ]; then
  (apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}" libgl1-mesa-dri libegl1 libxkbcommon-x11-0) >/dev/null
fi
cargo build --release --quiet --bins
bin=./target/release/hookscope
dev=./target/release/hookscope-dev

work=$(mktemp -d /tmp/hookscope-soak.XXXXXX)
mkdir -p "$work/listen" "$work/window"
window_port=$((20000 + RANDOM % 20000))
for who in listen window; do
  {
    [ "$who" = window ] && printf '[receiver]\nport = %s\n\n' "$window_port"
    printf '[[endpoint]]\npath = "/"\nscheme = "standard-webhooks"\nsecrets = ["%s"]\n' "$secret"
  } >"$work/$who.toml"
  chmod 600 "$work/$who.toml"
done

preload=()
if [ -n "${SLOW_FSYNC_MS:-}" ]; then
  cc -shared -fPIC -O2 -o "$work/libslowfsync.so" tests/common/slow_fsync.c -ldl
  preload=(env LD_PRELOAD="$work/libslowfsync.so" SLOW_FSYNC_MS="$SLOW_FSYNC_MS")
  echo "slow disk: every fsync +${SLOW_FSYNC_MS} ms"
fi

"${preload[@]}" "$bin" --data-dir "$work/listen" --config "$work/listen.toml" listen --port 0 \
  >/dev/null 2>"$work/listen.err" &
listen_pid=$!
. .ci/xvfb.sh
trap 'kill $listen_pid $window_pid $xvfb_pid 2>/dev/null || true' EXIT
start_xvfb
HOOKSCOPE_TRACE_FRAMES=1 "${preload[@]}" "$bin" --data-dir "$work/window" \
  --config "$work/window.toml" 2>"$work/window.err" &
window_pid=$!
for _ in $(seq 100); do
  grep -q "listening on" "$work/listen.err" 2>/dev/null && break
  sleep 0.1
done
listen_url=$(grep -o 'http://[0-9.:]*' "$work/listen.err" | head -1)/hooks/soak
window_url=http://127.0.0.1:$window_port/hooks/soak
for _ in $(seq 100); do
  curl -s -o /dev/null "http://127.0.0.1:$window_port/" && break
  sleep 0.1
done
sleep 2

rss() { awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$1/status"; }
size() { du -sb "$1" | cut -f1; }
rss_listen_start=$(rss $listen_pid)
rss_window_start=$(rss $window_pid)
size_listen_start=$(size "$work/listen")
size_window_start=$(size "$work/window")
echo "soak: $minutes min at $rate/s to each of listen ($listen_url) and the window ($window_url); work dir $work"

load() {
  "$dev" load --url "$1" --connections 16 --seconds "$seconds" --rate "$rate" --body-size 1024 \
    --scheme standard-webhooks --secret "$secret" --duplicates 10 --bad-signatures 5
}
load "$listen_url" >"$work/load-listen.json" &
load_listen=$!
load "$window_url" >"$work/load-window.json" &
load_window=$!

# RSS once warm: after a minute, the store's page cache (64 MiB for the writer) has filled; growth
# beyond that is what a leak would show.
(sleep 60; rss $listen_pid >"$work/rss-listen-warm"; rss $window_pid >"$work/rss-window-warm") &

# The filter changes every 10 s, typed into the window as a person would (Ctrl+F, select all,
# type), cycling through free text and terms; the list follows live in between.
filters=("sig:fail" "dup:yes" "evt_1" "type:job.completed sig:pass" "job:job_1" "")
i=0
end=$((SECONDS + seconds))
while [ $SECONDS -lt $end ]; do
  sleep 10
  win=$(xdotool search --name hookscope 2>/dev/null | head -1 || true)
  if [ -n "$win" ]; then
    f=${filters[$((i % ${#filters[@]}))]}
    xdotool windowfocus "$win" key ctrl+f key ctrl+a key BackSpace 2>/dev/null || true
    [ -n "$f" ] && xdotool type --delay 20 "$f" 2>/dev/null || true
    i=$((i + 1))
  fi
done
wait $load_listen $load_window
sleep 3

rss_listen_end=$(rss $listen_pid)
rss_window_end=$(rss $window_pid)
frames=$(grep "frames:" "$work/window.err" | tail -1 | sed 's/^hookscope: //')
stored() { sqlite_count "$1"; }
sqlite_count() {
  "$bin" --data-dir "$1" list --limit 1 --json >/dev/null 2>&1 || true
  python3 - "$1/hookscope.sqlite" <<'PY'
import sqlite3, sys
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
print(c.execute("SELECT COUNT(*) FROM deliveries WHERE path = '/hooks/soak'").fetchone()[0])
PY
}
report() {
  local who=$1 json=$2 rss0=$3 rss1=$4 size0=$5 dir=$6 warm
  warm=$(cat "$work/rss-$who-warm" 2>/dev/null || echo "?")
  local acked p99 count size1
  acked=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["acknowledged"])' "$json")
  p99=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["p99_ms"])' "$json")
  count=$(stored "$dir")
  size1=$(size "$dir")
  echo "$who: RSS $rss0 MiB at start, $warm MiB after 1 min, $rss1 MiB at the end (+$((rss1 - rss0)) from start); ack p99 ${p99} ms; acknowledged $acked, stored $count; store +$(( (size1 - size0) / (count > 0 ? count : 1) )) B per delivery ($(( (size1 - size0) / 1048576 )) MiB)"
}
report listen "$work/load-listen.json" "$rss_listen_start" "$rss_listen_end" "$size_listen_start" "$work/listen"
report window "$work/load-window.json" "$rss_window_start" "$rss_window_end" "$size_window_start" "$work/window"
echo "window $frames"
echo "load (listen): $(cat "$work/load-listen.json")"
echo "load (window): $(cat "$work/load-window.json")"
grep -v "frames:" "$work/listen.err" "$work/window.err" | grep -iE "hookscope: |panick" | head -5 || true
