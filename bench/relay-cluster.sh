#!/usr/bin/env bash
# The relay for a team (issue 51), each figure beside its target, in one run on loopback:
#   1. ingest: one relay on SQLite (`relay serve`), then two relay instances on a 3-node NATS
#      JetStream cluster (Debian's nats-server) with the channel's stream on 3 replicas, then
#      the same with 1 replica (the cost of the quorum). wrk sends the same pre-signed 1 KiB
#      Standard Webhooks requests (bench/common.sh): 2 threads and 64 connections on the SQLite
#      relay; on the cluster, one wrk per instance at once, 1 thread and 32 connections each.
#      What the relays stored is counted (the SQLite rows, the stream's last sequence number)
#      beside the 2xx wrk counted.
#   2. provider to laptop at 500/s through the cluster: the laptop subscribed on instance B,
#      the provider posting to instance A (`hookscope-dev load --rate 500`), pass-through: the
#      sender's p99, and how long each delivery waited before the laptop took it.
#   3. a node's loss: `hookscope-dev load --rate 500` to instance A for 20 s, no laptop; at 5 s
#      the node leading the channel's stream is killed with SIGKILL. The non-2xx answers, and
#      from when to when after the kill they came.
#   bench/relay-cluster.sh [SECONDS]      (default 10 s)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
command -v nats-server >/dev/null || (apt-get update -qq && apt-get install -y -qq nats-server) >/dev/null
cargo build --release --quiet --bins
bin=target/release/hookscope
dev=target/release/hookscope-dev
. bench/common.sh
work=$(mktemp -d /tmp/hookscope-cluster-bench.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
sql() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])" "$@"; }
free_port() { python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])"; }

echo "machine: $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ); $(git rev-parse --short HEAD); $(nats-server --version)"
WRK_PATH=/in/bench/hooks wrk_prepare "$work" 150000
sync

# The cluster: three servers on loopback, each with its own store dir.
client=(); route=()
for i in 0 1 2; do client+=("$(free_port)"); route+=("$(free_port)"); done
start_node() {
  local i=$1 routes=() j
  for j in 0 1 2; do [ "$j" != "$i" ] && routes+=("nats-route://127.0.0.1:${route[$j]}"); done
  cat >"$work/n$i.conf" <<CONF
server_name: n$i
listen: 127.0.0.1:${client[$i]}
jetstream { store_dir: "$work/n$i" }
cluster { name: bench, listen: 127.0.0.1:${route[$i]}, routes: [$(IFS=,; echo "${routes[*]}")] }
CONF
  nats-server -c "$work/n$i.conf" >"$work/n$i.log" 2>&1 &
  node_pid[$i]=$!; pids+=($!)
}
declare -a node_pid
for i in 0 1 2; do start_node "$i"; done
store="nats://127.0.0.1:${client[0]},127.0.0.1:${client[1]},127.0.0.1:${client[2]}"
sleep 3
# The server leading a channel's stream (hookscope-relay-NAME-UID), asked with NATS's own
# protocol (no CLI needed).
leader_of() {
  python3 - "${client[@]}" "$1" <<'PY'
import json, socket, sys
ports, prefix = sys.argv[1:4], "hookscope-relay-" + sys.argv[4] + "-"
def ask(s, subject, n):
    s.sendall(f"SUB _INBOX.{n} {n}\r\nPUB {subject} _INBOX.{n} 0\r\n\r\n".encode())
    data = b""
    while data.count(b"\r\n") < 2:
        data += s.recv(65536)
    head, rest = data.split(b"\r\n", 1)
    size = int(head.split()[-1])
    while len(rest) < size:
        rest += s.recv(65536)
    return json.loads(rest[:size])
for port in ports:
    try:
        s = socket.create_connection(("127.0.0.1", int(port)), timeout=5)
    except OSError:
        continue
    s.recv(4096)
    s.sendall(b'CONNECT {"verbose":false}\r\n')
    names = ask(s, "$JS.API.STREAM.NAMES", 1)["streams"]
    stream = next(n for n in names if n.startswith(prefix))
    print(ask(s, "$JS.API.STREAM.INFO." + stream, 2)["cluster"]["leader"])
    break
PY
}

key=$($bin --data-dir "$work/laptop" relay key 2>/dev/null)
token_of() { python3 -c "import json,sys; print(json.load(sys.stdin)['token'])"; }

# Every channel made before any load: bench (3 replicas), bench1 (1), live, loss.
$bin --data-dir "$work/a" relay --store "$store" channel add bench --recipient "$key" --keep-mib 8192 --json >/dev/null
$bin --data-dir "$work/a" relay --store "$store" --replicas 1 channel add bench1 --recipient "$key" --keep-mib 8192 --json >/dev/null
live_token=$($bin --data-dir "$work/a" relay --store "$store" channel add live --recipient "$key" --json | token_of)
$bin --data-dir "$work/a" relay --store "$store" channel add loss --recipient "$key" --json >/dev/null
$bin --data-dir "$work/a" relay serve --store "$store" --port 0 2>"$work/a.log" & pids+=($!)
$bin --data-dir "$work/b" relay serve --store "$store" --port 0 2>"$work/b.log" & pids+=($!)
port_a=$(port_of "$work/a.log"); port_b=$(port_of "$work/b.log")

# 2. Provider to laptop at 500/s through the cluster: laptop on B, provider to A.
export BENCH_LIVE_TOKEN=$live_token
mkdir -p "$work/live" && cp "$work/laptop/relay-key.txt" "$work/live/"
$bin --data-dir "$work/live" listen --port 0 --relay "http://127.0.0.1:$port_b/sub/live" \
  --relay-token-env BENCH_LIVE_TOKEN --scheme standard-webhooks --secret "$secret" >/dev/null 2>"$work/live.log" & pids+=($!)
sleep 3
paced=$($dev load --url "http://127.0.0.1:$port_a/in/live/hooks" --connections 32 --seconds "$secs" \
  --rate 500 --scheme standard-webhooks --secret "$secret")
sleep 1
waited=$(python3 - "$work/live/hookscope.sqlite" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = [r[0] for r in db.execute("SELECT relay_delay_ms FROM deliveries WHERE relay_seq IS NOT NULL ORDER BY relay_delay_ms")]
passed = db.execute("SELECT COUNT(*) FROM deliveries WHERE sig_status = 'pass'").fetchone()[0]
print(f"{len(rows)} stored ({passed} sig:pass), p50 {rows[len(rows) // 2]} ms, p99 {rows[int(len(rows) * 0.99)]} ms" if rows else "none stored")
PY
)
kill "${pids[-1]}"

# 1. Ingest: SQLite, then the cluster with 3 replicas and with 1.
$bin --data-dir "$work/single" relay channel add bench --recipient "$key" --keep-mib 8192 --json >/dev/null
$bin --data-dir "$work/single" relay serve --port 0 2>"$work/single.log" & pids+=($!)
single=$(run_wrk "$(port_of "$work/single.log")" "$secs")
kill "${pids[-1]}"; sleep 1
single_rows=$(sql "$work/single/relay.sqlite" "SELECT COUNT(*) FROM deliveries")
rm -rf "$work/single"; sync

# Both instances at once, one wrk each; answers "per_second non_2xx" summed.
two_wrk() {
  local out_a out_b
  wrk -t1 -c32 "-d${secs}s" --latency -s "$wrk_work/wrk.lua" "http://127.0.0.1:$port_a/hooks" | grep '^JSON ' | sed 's/^JSON //' >"$work/wrk-a" &
  wrk -t1 -c32 "-d${secs}s" --latency -s "$wrk_work/wrk.lua" "http://127.0.0.1:$port_b/hooks" | grep '^JSON ' | sed 's/^JSON //' >"$work/wrk-b"
  wait
  python3 - "$work/wrk-a" "$work/wrk-b" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
print(json.dumps({"per_second": a["per_second"] + b["per_second"], "requests": a["requests"] + b["requests"],
                  "non_2xx": a["non_2xx"] + b["non_2xx"], "errors": a["errors"] + b["errors"],
                  "p99_ms": max(a["p99_ms"], b["p99_ms"])}))
PY
}
last_seq() { $bin --data-dir "$work/a" relay --store "$store" channel list --json | python3 -c "
import json, sys
for line in sys.stdin:
    c = json.loads(line)
    if c['channel'] == '$1': print(c['last_seq'])"; }
cluster3=$(two_wrk)
cluster3_rows=$(last_seq bench)
# The same requests to a one-replica channel (the path is in the prepared requests).
WRK_PATH=/in/bench1/hooks wrk_prepare "$work" 150000
sleep 2
cluster1=$(two_wrk)
cluster1_rows=$(last_seq bench1)


# 3. A node's loss: the stream's leader killed 5 s into 20 s at 500/s, no laptop.
sleep 10
$dev load --url "http://127.0.0.1:$port_a/in/loss/hooks" --connections 32 --seconds 20 \
  --rate 500 --scheme standard-webhooks --secret "$secret" >"$work/loss.json" &
load_pid=$!
sleep 5
leader=$(leader_of loss)
killed_at=$(date +%s%3N)
kill -9 "${node_pid[${leader#n}]}"
wait "$load_pid"
loss=$(python3 - "$work/loss.json" "$killed_at" "$leader" <<'PY'
import json, sys
report, killed, leader = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3]
failures = report["failures"]
failed = report["refused"] + report["errors"]
if failures:
    first = (failures[0]["at_unix_ms"] - killed) / 1000
    last = (failures[-1]["at_unix_ms"] + 100 - killed) / 1000
    span = f"from {first:+.1f} s to {last:+.1f} s after the kill"
else:
    span = "none"
print(f"leader {leader} killed: {report['acknowledged']} of {report['sent']} acknowledged, "
      f"{report['refused']} refused + {report['errors']} unanswered ({span}); p99 {report['p99_ms']:.1f} ms, max {report['max_ms']:.0f} ms")
PY
)

echo
echo "ingest, the same pre-signed 1 KiB requests, ${secs} s each:"
echo "  one SQLite relay (wrk 2 threads 64 connections): $single; rows $single_rows"
echo "  two instances, 3-node cluster, 3 replicas (a wrk of 1 thread 32 connections on each): $cluster3; stream last seq $cluster3_rows"
echo "  the same, 1 replica: $cluster1; stream last seq $cluster1_rows"
python3 - "$single" "$cluster3" "$cluster1" <<'PY'
import json, sys
single, r3, r1 = (json.loads(a) for a in sys.argv[1:4])
print(f"  cluster (3 replicas) / SQLite: {r3['per_second'] / single['per_second']:.3f}; the quorum's cost: 3 replicas at {r3['per_second'] / r1['per_second']:.2f} of 1 replica's rate")
PY
echo "provider to laptop at 500/s through the cluster (provider to A, laptop on B): sender $paced"
echo "  waited at the relay until the laptop took it: $waited (target: sender p99 <= 50 ms)"
echo "a node's loss at 500/s: $loss"
printf '%s\n' "--- what the instances said:"; cat "$work/a.log" "$work/b.log" | sort | uniq -c | sort -rn | head -20
