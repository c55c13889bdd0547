#!/usr/bin/env bash
# The CPU budget behind the ratio target: under wrk (bench/common.sh's run_wrk, 8 s), for bare
# axum, the floor, the SQLite reference (--sqlite) and `listen` in turn (ROUNDS rounds, alternating, fresh
# stores), the CPU each request cost the server and wrk itself (user + system, from
# /proc/PID/stat and wrk's rusage, less wrk's fixed cost of reading its requests), and the share
# of the two cores left idle (/proc/stat).
# On a machine whose cores are all busy, req/s ≈ cores / (server µs + wrk µs), so the server's
# µs per request that a ratio of 0.5 allows follows from the bare server's figures.
#   ROUNDS=3 bench/budget.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bins
. bench/common.sh
bin=target/release/hookscope
dev=target/release/hookscope-dev
work=$(mktemp -d /tmp/hookscope-budget.XXXXXX)
trap 'kill ${pid:-} 2>/dev/null || true; rm -rf "$work"' EXIT
tick=$(getconf CLK_TCK)
cpu_of() { read -ra s < <(sed 's/.*) //' "/proc/$1/stat"); echo $(( s[11] + s[12] )); }
# run_wrk with wrk's own CPU (the rusage of the child that ran it) added to its JSON.
wrk_cpu() {
  local args
  mapfile -t args < <(wrk_argv "$1" "$2")
  python3 - "${args[@]}" <<'PY'
import json, resource, subprocess, sys
r = subprocess.run(["wrk", *sys.argv[1:]], capture_output=True, text=True)
line = next(l for l in r.stdout.splitlines() if l.startswith("JSON "))
u = resource.getrusage(resource.RUSAGE_CHILDREN)
result = json.loads(line[5:])
result["wrk_cpu_s"] = u.ru_utime + u.ru_stime
print(json.dumps(result))
PY
}
wrk_prepare "$work" 150000
sync
prepared=$SECONDS
# wrk's fixed cost: each thread reads and cuts its 150,000 requests (~0.4 s each, bench/common.sh),
# which is not a request's cost. Against the bare server for 2 s and for 6 s: the difference is
# the requests' cost, and what the 2 s run spent beyond it is the fixed cost, taken off below.
$dev bare --port 0 2>"$work/server.log" & pid=$!
port=$(port_of "$work/server.log")
short=$(wrk_cpu "$port" 2); long=$(wrk_cpu "$port" 6)
kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
fixed=$(python3 -c '
import json, sys
s, l = json.loads(sys.argv[1]), json.loads(sys.argv[2])
per = (l["wrk_cpu_s"] - s["wrk_cpu_s"]) / (l["requests"] - s["requests"])
print(round(s["wrk_cpu_s"] - per * s["requests"], 3))' "$short" "$long")
echo "wrk's fixed cost (reading its requests): $fixed s of CPU per run"
for _ in $(seq "${ROUNDS:-2}"); do
  for server in bare floor reference listen; do
    if (( SECONDS - prepared > 240 )); then wrk_prepare "$work" 150000; sync; prepared=$SECONDS; fi
    rm -rf "$work/store" "$work/floor"; sync
    case $server in
      bare) $dev bare --port 0 2>"$work/server.log" & pid=$! ;;
      floor) $dev bare --port 0 --durable "$work/floor" --secret "$secret" 2>"$work/server.log" & pid=$! ;;
      reference) $dev bare --port 0 --sqlite "$work/floor" --secret "$secret" 2>"$work/server.log" & pid=$! ;;
      listen) $bin --data-dir "$work/store" listen --port 0 --scheme standard-webhooks --secret "$secret" \
        >/dev/null 2>"$work/server.log" & pid=$! ;;
    esac
    port=$(port_of "$work/server.log")
    $dev load --url "http://127.0.0.1:$port/hooks" --connections 8 --seconds 1 --scheme standard-webhooks \
      --secret "$secret" >/dev/null
    before=$(cpu_of "$pid"); stat_before=$(head -1 /proc/stat)
    out=$(wrk_cpu "$port" 8)
    after=$(cpu_of "$pid"); stat_after=$(head -1 /proc/stat)
    # What it still does for these requests once wrk stopped (a text index catching up): until
    # its CPU rises by under 2 ticks in a second (at most 60 s).
    quiet=$after
    for _ in $(seq 60); do
      sleep 1; now=$(cpu_of "$pid")
      (( now - quiet < 2 )) && break
      quiet=$now
    done
    kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
    idle=$(cpu_pct "$stat_before" "$stat_after" 3 4); steal=$(steal_pct "$stat_before" "$stat_after")
    python3 - "$server" "$out" "$before" "$after" "$tick" "$quiet" "$fixed" "$idle" "$steal" <<'PY'
import json, sys
server, out, before, after, tick = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
quiet, fixed, idle, steal = int(sys.argv[6]), float(sys.argv[7]), float(sys.argv[8]), float(sys.argv[9])
n = out["requests"]
server_us = (after - before) / tick * 1e6 / n
later_us = (quiet - after) / tick * 1e6 / n
wrk_us = (out["wrk_cpu_s"] - fixed) * 1e6 / n
print(f"{server:7} {out['per_second']:8.0f} req/s | server {server_us:5.1f} us + wrk {wrk_us:5.1f} us per request"
      f" (+ {later_us:4.1f} us after wrk stopped)"
      f" | idle {idle:4.1f} %, steal {steal:4.1f} %")
PY
  done
done
