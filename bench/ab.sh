#!/usr/bin/env bash
# A/B of listen builds or settings, alternating on the same prepared requests: for each variant,
# a fresh store, 2,000 deliveries/s paced for 10 s (p99, visibility), a 10 s wrk burst (req/s), and
# 2,000/s again for the 10 s right after it; then the next variant. ROUNDS rounds (default 2).
# A variant is the command that runs hookscope, e.g.:
#   bench/ab.sh ./target/release/hookscope /tmp/hookscope-before
#   ROUNDS=4 bench/ab.sh "env SOME_SETTING=1 ./target/release/hookscope" ./target/release/hookscope
# With PROBE=1, `hookscope-dev disk-probe` times small synced writes on the same file system every
# 5 ms meanwhile, and each 100 ms in which an acknowledgement took over 20 ms is printed beside
# the probe's slowest write within 100 ms of it (bench/stalls.sh).
# The variant `floor` is the control: `hookscope-dev bare --durable` (checks each signature and
# syncs each body before answering, nothing more) through the same phases, so a round where it
# misses too is the machine's, not listen's:   ROUNDS=6 bench/ab.sh floor ./target/release/hookscope
# With LATER=SECS, each round then waits SECS with nothing sent (the burst's WAL checkpointed and
# truncated, the text index caught up) and runs a third paced phase on the same, now larger,
# store: an after-burst figure that is the store's size, not the burst's backlog, shows there too.
# The issue-19 experiments in BENCHMARKS.md ("third pass", "fourth pass") were run this way.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bins
. bench/common.sh
dev=target/release/hookscope-dev
work=$(mktemp -d /tmp/hookscope-ab.XXXXXX)
trap 'kill ${pid:-} ${probe:-} 2>/dev/null || true; rm -rf "$work"' EXIT
wrk_prepare "$work" 150000
sync
prepared=$SECONDS
for round in $(seq "${ROUNDS:-2}"); do
  for variant in "$@"; do
    # Signed more than 4 minutes ago, the next burst's requests would fail the timestamp check
    # (a dearer delivery) before it ends: sign them again.
    if (( SECONDS - prepared > 240 )); then
      wrk_prepare "$work" 150000; sync; prepared=$SECONDS
    fi
    rm -rf "$work/store" "$work/floor"
    # A background job ignores SIGINT: listen sets its own handler, the floor does not.
    if [ "$variant" = floor ]; then
      $dev bare --port 0 --durable "$work/floor" --secret "$secret" 2>"$work/listen.log" & pid=$!
      watch=(); stop=TERM
    else
      $variant --data-dir "$work/store" listen --port 0 --scheme standard-webhooks --secret "$secret" \
        >/dev/null 2>"$work/listen.log" & pid=$!
      watch=(--watch-store "$work/store/hookscope.sqlite"); stop=INT
    fi
    port=$(port_of "$work/listen.log")
    url="http://127.0.0.1:$port/hooks"
    paced() { $dev load --url "$url" --connections 64 --seconds 10 --rate 2000 --scheme standard-webhooks \
      --secret "$secret" "${watch[@]}"; }
    $dev load --url "$url" --connections 8 --seconds 2 --scheme standard-webhooks --secret "$secret" >/dev/null
    echo '{}' >"$work/probe.json"
    if [ -n "${PROBE:-}" ]; then
      $dev disk-probe --dir "$work/probe" --seconds 34 >"$work/probe.json" & probe=$!
    fi
    # The share of the CPU the host took (steal) in each paced phase says whether a slow round
    # was this machine's host.
    phase fresh paced
    burst=$(run_wrk "$port" 10)
    wal=$(stat -c %s "$work/store/hookscope.sqlite-wal" 2>/dev/null || echo 0)
    phase after paced
    later='{}'; later_steal=-
    if [ -n "${LATER:-}" ]; then sleep "$LATER"; phase later paced; fi
    if [ -n "${PROBE:-}" ]; then wait "$probe"; fi
    kill -"$stop" "$pid"; wait "$pid" 2>/dev/null || true
    python3 - "$round" "$variant" "$fresh" "$burst" "$after" "$wal" "$work/probe.json" \
      "$fresh_steal" "$after_steal" "$later" "$later_steal" <<'PY'
import json, sys
round_, variant, fresh, burst, after, wal, probe, steal_fresh, steal_after, later, steal_later = sys.argv[1:12]
last = lambda t: json.loads([l for l in t.splitlines() if l.startswith("{")][-1])
f, b, a, p = last(fresh), json.loads(burst), last(after), json.load(open(probe))
seen = lambda phase, key: f"{phase['visible'][key]:.0f}" if phase.get("visible") else "-"
print(f"round {round_} {variant}: fresh p99 {f['p99_ms']:.2f} ms (visible max {seen(f, 'max_ms')}) | "
      f"burst {b['per_second']:.0f} req/s ({b['non_2xx']} non-2xx), WAL {int(wal) / 1e6:.0f} MB | after p99 {a['p99_ms']:.2f} ms, "
      f"max {a['max_ms']:.1f} (visible p99/max {seen(a, 'p99_ms')}/{seen(a, 'max_ms')}) | "
      f"steal {steal_fresh} / {steal_after} %")
if later != "{}":
    l = last(later)
    print(f"  later, after the pause: p99 {l['p99_ms']:.2f} ms, max {l['max_ms']:.1f} "
          f"(visible p99/max {seen(l, 'p99_ms')}/{seen(l, 'max_ms')}) | steal {steal_later} %")
if p:
    for kind in ("append", "overwrite"):
        t = p[kind]
        print(f"  probe {kind}: {t['writes']} synced writes, p50 {t['p50_ms']:.2f} p99 {t['p99_ms']:.2f} "
              f"max {t['max_ms']:.1f} ms, {len(t['slow'])} over 20 ms")
    for name, phase in (("fresh", f), ("after", a)):
        for s in phase["stalls"]:
            at = s["at_unix_ms"]
            near = lambda kind: max([ms for t, ms in p[kind]["slow"] if abs(t - at) <= 100 or t <= at <= t + ms], default=0)
            print(f"  {name} stall at {at % 100000:>5} ms: {s['slow']:>3} acks over 20 ms, worst {s['worst_ms']:.0f} ms"
                  f" | probe append {near('append'):.0f} ms, overwrite {near('overwrite'):.0f} ms")
PY
    sync
  done
done
