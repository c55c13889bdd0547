# Helpers shared by the benchmark scripts (sourced, not run).

# The secret every benchmark signs and verifies with.
secret=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw

port_of() { # wait for "listening on http://127.0.0.1:PORT" in a log
  for _ in $(seq 100); do
    p=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$1" 2>/dev/null | grep -o '[0-9]*$' || true)
    [ -n "$p" ] && { echo "$p"; return; }
    sleep 0.1
  done
  echo "no listening line in $1" >&2; exit 1
}

field() { python3 -c "import json,sys; print(round(json.load(sys.stdin)['$1'], 2))"; }

# cpu_pct BEFORE AFTER COLUMN...: the share (%) of all CPU time between two "cpu" lines of
# /proc/stat that went to the given columns (0 user, 1 nice, 2 system, 3 idle, 4 iowait, 5 irq,
# 6 softirq, 7 steal).
cpu_pct() {
  python3 -c '
import sys
a, b = ([int(x) for x in l.split()[1:9]] for l in sys.argv[1:3])
d = [y - x for x, y in zip(a, b)]
print(f"{100 * sum(d[int(c)] for c in sys.argv[3:]) / max(sum(d), 1):.1f}")' "$@"
}

# steal_pct BEFORE AFTER: the host's steal share of the CPU: whether a slow phase was the host's.
steal_pct() { cpu_pct "$1" "$2" 7; }

# phase NAME CMD...: runs CMD with its output kept in $NAME and the host's steal share of the CPU
# while it ran in ${NAME}_steal, and adds to the list `phases` when it started and that share (a
# slow phase is then seen to be the host's or not).
phases=()
phase() {
  local name=$1 start before out steal
  shift
  start=$(date -u +%T.%N | cut -c1-12); before=$(head -1 /proc/stat)
  out=$("$@")
  steal=$(steal_pct "$before" "$(head -1 /proc/stat)")
  printf -v "$name" '%s' "$out"
  printf -v "${name}_steal" '%s' "$steal"
  phases+=("$name: started $start UTC, host steal $steal %")
}

# wrk_prepare WORK PER_THREAD [FIRST] [AGE]: writes WORK/wrk.lua and two slices of PER_THREAD
# requests, each a 1 KiB Standard Webhooks JSON body pre-signed with its own webhook-id (wrk_N
# from N = FIRST, default 0; apart from hookscope-dev load's msg_N), stamped AGE seconds ago
# (default 0: now), posted to WRK_PATH (default /hooks). One slice per wrk thread.
# The requests are written whole here (WORK/requests-T.bin, their lengths in WORK/requests-T.len)
# and each wrk thread cuts its own apart at its first request (see the script's comment). Made
# in wrk's init with wrk.format, the first thread ran ~1.5 s alone before wrk's clock started,
# and the rates counted it (BENCHMARKS.md, issue 19, ninth pass).
# The receiver's tolerance is 5 minutes: requests stamped longer ago fail the timestamp check,
# and such a delivery costs listen about an eighth more CPU (BENCHMARKS.md, issue 19, seventh
# pass), so a script that runs wrk later than that prepares again.
wrk_prepare() {
  local work=$1 per_thread=$2 first=${3:-0} age=${4:-0}
  wrk_work=$1
  command -v wrk >/dev/null || (apt-get update -qq && apt-get install -y -qq wrk) >/dev/null
  python3 - "$work" "$per_thread" "$secret" "$first" "$age" "${WRK_PATH:-/hooks}" <<'PY'
import base64, hashlib, hmac, sys, time
work, per_thread, secret = sys.argv[1], int(sys.argv[2]), sys.argv[3]
first, age, path = int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
key = base64.b64decode(secret.removeprefix("whsec_"))
ts = str(int(time.time()) - age)
for t in range(2):
    with open(f"{work}/requests-{t + 1}.bin", "wb") as raw, open(f"{work}/requests-{t + 1}.len", "w") as lens:
        for i in range(per_thread):
            n = first + t * per_thread + i
            pad = "a" * (1024 - 90)
            body = f'{{"id":"evt_{n}","type":"job.completed","data":{{"job_id":"job_{n // 3}","status":"completed","pad":"{pad}"}}}}'
            mid = f"wrk_{n}"
            sig = base64.b64encode(hmac.new(key, f"{mid}.{ts}.{body}".encode(), hashlib.sha256).digest()).decode()
            # What wrk.format made, with the host without the port (not known yet).
            request = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                       f"webhook-id: {mid}\r\nwebhook-timestamp: {ts}\r\nwebhook-signature: v1,{sig}\r\n"
                       f"Content-Length: {len(body)}\r\n\r\n{body}").encode()
            raw.write(request)
            lens.write(f"{len(request)}\n")
PY
  cat >"$work/wrk.lua" <<LUA
local count = 0
function setup(thread)
  count = count + 1
  thread:set("slice", count)
end
function init(args)
  mine, i = nil, 0
end
-- Each thread reads its own requests at its first request: wrk runs every thread's init before
-- it starts the next thread, and starts its clock after the last, so work done in init let the
-- first thread run alone, uncounted in the time and counted in the rate. wrk calls the first
-- thread's request() once before starting it (to check the request), so that thread reads its
-- requests then; the second reads its own in its first ~0.4 s, inside the measured time, the
-- same for every server. No request is sent before the clock starts.
local function load()
  mine = {}
  local f = io.open("$work/requests-" .. slice .. ".bin", "rb")
  local raw = f:read("*a")
  f:close()
  local at = 1
  for len in io.lines("$work/requests-" .. slice .. ".len") do
    local n = tonumber(len)
    mine[#mine + 1] = raw:sub(at, at + n - 1)
    at = at + n
  end
end
function request()
  if not mine then load() end
  i = i + 1
  if i > #mine then i = 1 end
  return mine[i]
end
function done(summary, latency, requests)
  io.write(string.format("JSON {\"requests\":%d,\"seconds\":%.3f,\"per_second\":%.1f,\"p50_ms\":%.2f,\"p99_ms\":%.2f,\"non_2xx\":%d,\"errors\":%d}\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
LUA

}

# wrk_argv PORT SECONDS: the arguments every script runs wrk with (2 threads, 64 connections, the
# requests wrk_prepare wrote), one per line.
wrk_argv() { printf '%s\n' -t2 -c64 "-d${2}s" --latency -s "$wrk_work/wrk.lua" "http://127.0.0.1:$1/hooks"; }

# run_wrk PORT SECONDS: prints one JSON line of wrk's figures.
run_wrk() {
  local args
  mapfile -t args < <(wrk_argv "$1" "$2")
  wrk "${args[@]}" | grep '^JSON ' | sed 's/^JSON //'
}
