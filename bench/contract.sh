#!/usr/bin/env bash
# Ingest with a contract configured (issue 38): bench/ab.sh's phases (2,000/s paced, a 10 s wrk
# burst, 2,000/s after it) alternating between `listen` as bench/run.sh runs it and `listen`
# whose /hooks endpoint has the same scheme and secret plus an OpenAPI 3.1 contract that every
# benchmark body passes (job.completed: an envelope, a job id pattern, a status enum, a string
# of at most 2,000 characters). Before the rounds it checks that the contract's check ran:
# a delivery sent by `hookscope-dev load` is stored with `schema: pass`.
#   bench/contract.sh            (ROUNDS=2 by default, as bench/ab.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --bins
. bench/common.sh
dir=$(mktemp -d /tmp/hookscope-contract.XXXXXX)
trap 'kill ${pid:-} 2>/dev/null || true; rm -rf "$dir"' EXIT
cp bench/jobs-contract.yaml "$dir/jobs.yaml"
cat >"$dir/config.toml" <<TOML
[[endpoint]]
path = "/hooks"
scheme = "standard-webhooks"
secrets = ["$secret"]
contract = "jobs.yaml"
TOML
bin=target/release/hookscope
HOOKSCOPE_CONFIG="$dir/config.toml" $bin --data-dir "$dir/store" listen --port 0 >/dev/null 2>"$dir/listen.log" & pid=$!
port=$(port_of "$dir/listen.log")
# wrk's requests (bench/common.sh) for a second, then hookscope-dev load's: both kinds of body
# must be stored verified and passing the contract.
wrk_prepare "$dir" 5000
burst=$(run_wrk "$port" 1)
target/release/hookscope-dev load --url "http://127.0.0.1:$port/hooks" --connections 2 --seconds 1 \
  --scheme standard-webhooks --secret "$secret" >/dev/null
kill -INT "$pid"; wait "$pid" 2>/dev/null || true
stored=$(HOOKSCOPE_CONFIG="$dir/config.toml" $bin --data-dir "$dir/store" list --json --limit 1000000 | wc -l)
passed=$(HOOKSCOPE_CONFIG="$dir/config.toml" $bin --data-dir "$dir/store" list --json --limit 1000000 \
  --filter "schema:pass sig:pass" | wc -l)
echo "checked: wrk sent $(echo "$burst" | field requests) ($(echo "$burst" | field non_2xx) non-2xx); stored $stored, of which $passed verified and passing the contract"
[ "$stored" -eq "$passed" ]
HOOKSCOPE_CONFIG="$dir/config.toml" $bin --data-dir "$dir/store" list --json --limit 1 | python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
s = d["checks"]["schema"]
assert d["checks"]["signature"]["status"] == "pass" and s and s["status"] == "pass", d["checks"]
print("checked: delivery #%s verified, schema %s (%s)" % (d["id"], s["status"], s["detail"]))'
bench/ab.sh "$bin" "env HOOKSCOPE_CONFIG=$dir/config.toml $bin"
