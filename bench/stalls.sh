#!/usr/bin/env bash
# Where listen's acknowledgement stalls come from: bench/ab.sh's rounds (fresh store, 2,000/s paced,
# a wrk burst, 2,000/s again; ROUNDS, default 4) with `hookscope-dev disk-probe` timing small
# synced writes on the same file system every 5 ms; each 100 ms in which an acknowledgement took
# over 20 ms is printed beside the probe's slowest write within 100 ms of it.
#   bench/stalls.sh [VARIANT...]     (default ./target/release/hookscope; `floor` is the control,
#   as in bench/ab.sh: bench/stalls.sh floor ./target/release/hookscope)
cd "$(dirname "$0")/.." && PROBE=1 ROUNDS=${ROUNDS:-4} exec bench/ab.sh "${@:-./target/release/hookscope}"
