#!/usr/bin/env bash
# Where listen's acknowledgement stalls come from: ROUNDS rounds (default 4) of a fresh store,
# 2,000 deliveries/s paced for 10 s, a 10 s wrk burst and 2,000/s again right after it (as
# bench/ab.sh), while `hookscope-dev disk-probe` times small synced writes on the same file
# system every 5 ms. For each paced phase it prints the 100 ms spans in which an acknowledgement
# took over 20 ms, each beside the probe's slowest write that started within 100 ms of it.
#   bench/stalls.sh [HOOKSCOPE_COMMAND]     (default ./target/release/hookscope)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bins
. bench/common.sh
dev=target/release/hookscope-dev
variant=${1:-./target/release/hookscope}
work=$(mktemp -d /tmp/hookscope-stalls.XXXXXX)
trap 'kill ${pid:-} ${probe:-} 2>/dev/null || true; rm -rf "$work"' EXIT
wrk_prepare "$work" 150000
sync
for round in $(seq "${ROUNDS:-4}"); do
  rm -rf "$work/store"
  $variant --data-dir "$work/store" listen --port 0 --scheme standard-webhooks --secret "$secret" \
    >/dev/null 2>"$work/listen.log" & pid=$!
  port=$(port_of "$work/listen.log")
  url="http://127.0.0.1:$port/hooks"
  paced() { $dev load --url "$url" --connections 64 --seconds 10 --rate 2000 --scheme standard-webhooks \
    --secret "$secret" --watch-store "$work/store/hookscope.sqlite"; }
  $dev load --url "$url" --connections 8 --seconds 2 --scheme standard-webhooks --secret "$secret" >/dev/null
  $dev disk-probe --dir "$work/probe" --seconds 34 >"$work/probe.json" & probe=$!
  fresh=$(paced)
  burst=$(run_wrk "$port" 10)
  after=$(paced)
  wait "$probe"
  kill -INT "$pid"; wait "$pid" 2>/dev/null || true
  python3 - "$round" "$fresh" "$burst" "$after" "$work/probe.json" <<'PY'
import json, sys
round_, fresh, burst, after, probe = sys.argv[1:]
last = lambda t: json.loads([l for l in t.splitlines() if l.startswith("{")][-1])
f, b, a, p = last(fresh), json.loads(burst), last(after), json.load(open(probe))
print(f"round {round_}: fresh p99 {f['p99_ms']:.2f} ms | burst {b['per_second']:.0f} req/s | after p99 {a['p99_ms']:.2f} ms")
for kind in ("append", "overwrite"):
    t = p[kind]
    print(f"  probe {kind}: {t['writes']} synced writes, p50 {t['p50_ms']:.2f} p99 {t['p99_ms']:.2f} max {t['max_ms']:.1f} ms, {len(t['slow'])} over 20 ms")
for name, phase in (("fresh", f), ("after", a)):
    for s in phase["stalls"]:
        near = lambda kind: max([ms for at, ms in p[kind]["slow"] if abs(at - s["at_unix_ms"]) <= 100 or at <= s["at_unix_ms"] <= at + ms], default=0)
        print(f"  {name} stall at {s['at_unix_ms'] % 100000:>5} ms: {s['slow']:>3} acks over 20 ms, worst {s['worst_ms']:.0f} ms"
              f" | probe append {near('append'):.0f} ms, overwrite {near('overwrite'):.0f} ms")
PY
  sync
done
