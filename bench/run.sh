#!/usr/bin/env bash
# hookscope's performance figures, each beside its target, in one run (issue 35's list):
#   1. the ceiling: a bare axum server (`hookscope-dev bare`) under wrk (2 threads, 64
#      connections, pre-signed 1 KiB Standard Webhooks bodies, each its own webhook-id,
#      bench/common.sh);
#   1b. the floor of any receiver that checks the signature and whose 2xx means on disk
#      (`hookscope-dev bare --durable`: HMAC check, group-committed fdatasync of a file);
#   1c. the SQLite reference (`--sqlite`: the same check, one small row per delivery with its
#      event id UNIQUE, a transaction per waiting batch, WAL, synchronous=FULL, 200 after COMMIT),
#      and how many rows it holds after (each request a distinct event: rows = 2xx);
#   1d. mockttp 4.6.5 (HTTP Toolkit's engine, from npm) answering 200 from memory, and how many
#      signed POSTs it kept;
#   2. `hookscope listen` fresh: 2,000 deliveries/s offered for SECONDS, paced open loop with
#      latency counted from each request's scheduled moment (`hookscope-dev load --rate`), and how
#      long every tenth acknowledged delivery took to become visible to a reader of the store;
#   3. the same listen under wrk for SECONDS (the saturating burst; its ratio to 1c.);
#   4. right after the burst: 2,000/s again for SECONDS, p99 and visibility again;
#   5. a 10 MiB body; after each phase, answered 2xx = stored;
#   6. bench/trickle.sh: bytes written per delivery at ~150/s, the WAL 5 s idle after.
#   bench/run.sh [SECONDS]      (default 10 s per phase)
#   MILLION=1 bench/run.sh      also loads listen to 1,000,000 stored deliveries and reads its
#                               RSS and its store's size per delivery there (several minutes)
# The store's size at 1,000,000 seeded deliveries and the window's figures there: bench/gui.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
cargo build --release --quiet --bins
bin=target/release/hookscope
dev=target/release/hookscope-dev
. bench/common.sh
work=$(mktemp -d /tmp/hookscope-bench.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

rss_mib() { echo $(( $(awk '/VmRSS/ {print $2}' "/proc/$1/status") / 1024 )); }
stored() { $bin --data-dir "$work/store" list --json --limit 1 \
  | python3 -c "import json,sys; t=sys.stdin.read().strip(); print(json.loads(t)['id'] if t else 0)"; }
count() { echo "$1" | field acknowledged | cut -d. -f1; }

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {print int($2/1048576)}' /proc/meminfo) GiB; $(date -u +%Y-%m-%dT%H:%MZ)"
wrk_prepare "$work" 150000
# The request files are hundreds of MB: let them reach the disk now, not while listen's commits
# are being timed (a first version of this script measured that writeback as p99).
sync

# 1. The ceiling.
$dev bare --port 0 2>"$work/bare.log" & pids+=($!)
phase bare run_wrk "$(port_of "$work/bare.log")" "$secs"
kill "${pids[-1]}"
$dev bare --port 0 --durable "$work/floor" --secret "$secret" 2>"$work/floor.log" & pids+=($!)
phase floor run_wrk "$(port_of "$work/floor.log")" "$secs"
kill "${pids[-1]}"; rm -rf "$work/floor"; sync
$dev bare --port 0 --sqlite "$work/reference" --secret "$secret" 2>"$work/reference.log" & pids+=($!)
reference_port=$(port_of "$work/reference.log")
phase reference run_wrk "$reference_port" "$secs"
reference_rows=$(python3 -c "import sqlite3; print(sqlite3.connect('$work/reference/bare.sqlite').execute('SELECT COUNT(*) FROM deliveries').fetchone()[0])")
# The p99's control: the reference paced at 2,000/s, as listen is below.
phase reference_paced $dev load --url "http://127.0.0.1:$reference_port/hooks" --connections 64 \
  --seconds "$secs" --rate 2000 --scheme standard-webhooks --secret "$secret"
kill "${pids[-1]}"; rm -rf "$work/reference"; sync
# 1d. HTTP Toolkit's engine, mockttp 4.6.5 (npm, installed once under target/), answering 200 from
# memory: the peer the ingest target is set against.
npm_dir=target/bench-npm
[ -f "$npm_dir/node_modules/mockttp/package.json" ] || \
  npm install --prefix "$npm_dir" --no-audit --no-fund --silent mockttp@4.6.5 >/dev/null
cp bench/mockttp.mjs "$npm_dir/"
node "$npm_dir/mockttp.mjs" 2>"$work/mockttp.log" & pids+=($!)
phase mockttp run_wrk "$(port_of "$work/mockttp.log")" "$secs"
kill -TERM "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true
mockttp_seen=$(grep -o 'kept .*' "$work/mockttp.log" || echo "kept nothing")

# 2. listen, fresh: paced 2,000/s.
$bin --data-dir "$work/store" listen --port 0 --scheme standard-webhooks --secret "$secret" >/dev/null 2>"$work/listen.log" & pids+=($!)
listen_pid=${pids[-1]}
port=$(port_of "$work/listen.log")
url="http://127.0.0.1:$port/hooks"
paced() { $dev load --url "$url" --connections 64 --seconds "$secs" --rate 2000 \
  --scheme standard-webhooks --secret "$secret" --watch-store "$work/store/hookscope.sqlite"; }
warm=$($dev load --url "$url" --connections 8 --seconds 2 --scheme standard-webhooks --secret "$secret")
rss_warm=$(rss_mib "$listen_pid")
phase fresh paced
acked=$(( $(count "$warm") + $(count "$fresh") )); after_fresh=$(stored)

# 3. The burst: wrk against listen.
phase burst run_wrk "$port" "$secs"
acked=$(( acked + $(echo "$burst" | python3 -c "import json,sys; j=json.load(sys.stdin); print(j['requests'] - j['non_2xx'])") ))
# 4. Right after it.
phase after paced
acked_burst=$acked
acked=$(( acked + $(count "$after") )); after_burst=$(stored); acked_after=$acked

# 5. A 10 MiB body.
head -c $((10 * 1024 * 1024)) /dev/zero | tr '\0' 'a' > "$work/big.json"
big=$(curl -s -o /dev/null -w '%{time_total}' --data-binary @"$work/big.json" "$url/big")
acked=$(( acked + 1 ))
rss_after=$(rss_mib "$listen_pid")
# The 10 MiB row is written after its answer: the RSS above can still hold its copies.
sleep 2
rss_settled=$(rss_mib "$listen_pid")
rss_million=skipped; size_million=skipped
if [ -n "${MILLION:-}" ]; then
  first=300000
  while [ "$(stored)" -lt 1000000 ]; do
    # Fresh ids and timestamps for each run: 10 s at this rate stays within the 300,000
    # requests, so none is a duplicate and none fails the timestamp check.
    wrk_prepare "$work" 150000 "$first"; first=$(( first + 300000 ))
    more=$(run_wrk "$port" 10)
    acked=$(( acked + $(echo "$more" | python3 -c "import json,sys; j=json.load(sys.stdin); print(j['requests'] - j['non_2xx'])") ))
  done
  sleep 2
  rss_million=$(rss_mib "$listen_pid")
fi
kill -INT "$listen_pid"; wait "$listen_pid" 2>/dev/null || true
final=$(stored)
if [ -n "${MILLION:-}" ]; then
  size_million=$(python3 -c "import os; d='$work/store'; print(round(sum(os.path.getsize(os.path.join(d,f)) for f in os.listdir(d) if f.startswith('hookscope.sqlite')) / $final))")
fi

bare_rate=$(echo "$bare" | field per_second)
rate=$(echo "$burst" | field per_second)
floor_rate=$(echo "$floor" | field per_second)
reference_rate=$(echo "$reference" | field per_second)
mockttp_rate=$(echo "$mockttp" | field per_second)
reference_2xx=$(echo "$reference" | python3 -c "import json,sys; j=json.load(sys.stdin); print(j['requests'] - j['non_2xx'])")
vis() { echo "$1" | python3 -c "import json,sys; v=json.load(sys.stdin)['visible']; print(f\"{v['p50_ms']:.1f} / {v['p99_ms']:.1f} / {v['max_ms']:.1f}\")"; }
printf '\n%-52s %-22s %s\n' "figure" "measured" "target"
printf '%-52s %-22s %s\n' "bare axum under wrk (req/s)" "$bare_rate" "(the ceiling)"
printf '%-52s %-22s %s\n' "floor: check + synced append, under wrk (req/s)" "$floor_rate" "(ratio $(python3 -c "print(round($floor_rate/$bare_rate, 2))"))"
printf '%-52s %-22s %s\n' "SQLite reference under wrk (req/s)" "$reference_rate" "($reference_rows rows for $reference_2xx 2xx)"
printf '%-52s %-22s %s\n' "hookscope listen under wrk, the burst (req/s)" "$rate" ""
printf '%-52s %-22s %s\n' "ratio to the SQLite reference" "$(python3 -c "print(round($rate/$reference_rate, 2))")" ">= 0.6"
printf '%-52s %-22s %s\n' "ratio to bare axum" "$(python3 -c "print(round($rate/$bare_rate, 2))")" "(no target)"
printf '%-52s %-22s %s\n' "mockttp 4.6.5 under wrk (req/s)" "$mockttp_rate" "($mockttp_seen; wrk: $(echo "$mockttp" | field requests | cut -d. -f1))"
printf '%-52s %-22s %s\n' "ratio to mockttp" "$(python3 -c "print(round($rate/$mockttp_rate, 2))")" ">= 1.5"
printf '%-52s %-22s %s\n' "p99 ack at 2,000/s, the SQLite reference (ms)" "$(echo "$reference_paced" | field p99_ms)" "(the control)"
printf '%-52s %-22s %s\n' "p99 ack at 2,000/s, fresh receiver (ms)" "$(echo "$fresh" | field p99_ms)" "<= 5"
printf '%-52s %-22s %s\n' "p99 ack at 2,000/s, the 10 s after the burst (ms)" "$(echo "$after" | field p99_ms)" "<= 5"
printf '%-52s %-22s %s\n' "ack -> visible to a reader, fresh p50/p99/max (ms)" "$(vis "$fresh")" "<= 100"
printf '%-52s %-22s %s\n' "ack -> visible, after the burst p50/p99/max (ms)" "$(vis "$after")" "<= 100"
printf '%-52s %-22s %s\n' "10 MiB body acknowledged in (s)" "$big" "<= 0.2"
# A request still in flight when wrk stops can be committed without wrk counting its answer:
# after a wrk phase the newest id may exceed the 2xx count, never the other way.
printf '%-52s %-22s %s\n' "stored / 2xx after the fresh phase" "$after_fresh / $(( $(count "$warm") + $(count "$fresh") ))" "equal"
printf '%-52s %-22s %s\n' "stored / 2xx after the burst and the 10 s after" "$after_burst / $acked_after" "stored >= 2xx"
printf '%-52s %-22s %s\n' "stored / 2xx at the end" "$final / $acked" "stored >= 2xx"
printf '%-52s %-22s %s\n' "listen RSS after warm-up -> after the phases (MiB)" "$rss_warm -> $rss_after" "growth within 100 MiB"
printf '%-52s %-22s %s\n' "listen RSS 2 s after the 10 MiB answer (MiB)" "$rss_settled" "growth within 100 MiB"
printf '%-52s %-22s %s\n' "listen RSS at 1,000,000 stored (MiB, MILLION=1)" "$rss_million" "within 100 MiB of warm-up"
printf '%-52s %-22s %s\n' "store bytes per delivery at 1,000,000 (MILLION=1)" "$size_million" "(1 KiB bodies)"
echo
echo "raw: bare=$bare"
echo "raw: floor=$floor"
echo "raw: reference=$reference"
echo "raw: reference_paced=$reference_paced"
echo "raw: mockttp=$mockttp"
echo "raw: fresh=$fresh"
echo "raw: burst=$burst"
echo "raw: after=$after"
echo "(acknowledged before the 4th phase: $acked_burst)"
printf 'phase %s\n' "${phases[@]}"
echo
bench/trickle.sh
