#!/usr/bin/env bash
# CPU per delivery, by thread, under wrk: for each variant in turn (ROUNDS rounds, alternating), a
# fresh store, requests signed now, a 1 s warm-up, wrk 8 s (2 threads, 64 connections), and each
# thread's user + system time from /proc/PID/task/*/stat divided by the requests wrk made.
# Threads whose names cut to the same 15 characters are summed (the receiver's workers), except
# the store's: hookscope-store1 is the writer, hookscope-store2 the checkpointer.
# A variant is the command that runs hookscope; one that contains STALE=1 gets requests whose
# timestamp is an hour old (they fail the timestamp check).
#   ROUNDS=3 bench/cpu.sh ./target/release/hookscope /tmp/hookscope-before
# The issue-19 seventh pass's per-thread figures in BENCHMARKS.md were measured this way.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bins
. bench/common.sh
work=$(mktemp -d /tmp/hookscope-cpu.XXXXXX)
trap 'kill ${pid:-} 2>/dev/null || true; rm -rf "$work"' EXIT
tick=$(getconf CLK_TCK)
snap() {
  for t in $(ls "/proc/$1/task" | sort -n); do
    local s
    read -ra s < <(sed 's/.*) //' "/proc/$1/task/$t/stat")
    echo "$(cat "/proc/$1/task/$t/comm") ${s[11]} ${s[12]}"
  done
}
for _ in $(seq "${ROUNDS:-2}"); do
  for variant in "$@"; do
    rm -rf "$work/store"
    # A variant with STALE=1 in its command gets requests stamped an hour ago.
    case "$variant" in *STALE=1*) age=3600 ;; *) age=0 ;; esac
    wrk_prepare "$work" 150000 0 "$age"
    sync
    $variant --data-dir "$work/store" listen --port 0 --scheme standard-webhooks --secret "$secret" \
      >/dev/null 2>"$work/listen.log" & pid=$!
    port=$(port_of "$work/listen.log")
    target/release/hookscope-dev load --url "http://127.0.0.1:$port/hooks" --connections 8 --seconds 1 \
      --scheme standard-webhooks --secret "$secret" >/dev/null
    snap "$pid" >"$work/before"
    result=$(run_wrk "$port" 8)
    snap "$pid" >"$work/after"
    kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
    python3 - "$variant" "$result" "$work/before" "$work/after" "$tick" <<'PY'
import collections, json, sys
variant, result, before, after, tick = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
def load(path):
    cpu, seen = collections.defaultdict(float), collections.Counter()
    for line in open(path):
        name, user, system = line.rsplit(None, 2)
        if name.startswith("hookscope-store"):
            seen[name] += 1
            name += str(seen[name])
        cpu[name] += int(user) + int(system)
    return cpu
a, b, n = load(before), load(after), result["requests"]
per = {k: (b[k] - a.get(k, 0)) / tick * 1e6 / n for k in b}
print(f"{variant}: {result['per_second']:.0f} req/s, p99 {result['p99_ms']} ms, {sum(per.values()):.1f} us per delivery | "
      + " ".join(f"{k} {v:.1f}" for k, v in sorted(per.items(), key=lambda x: -x[1]) if v > 0.05))
PY
  done
done
