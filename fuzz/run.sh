#!/usr/bin/env bash
# Runs every cargo-fuzz target for SECONDS each (default 60) and prints one table row per
# target: executions, and crashes (a crash stops libFuzzer and leaves an artifact in
# fuzz/artifacts/<target>/). Installs cargo-fuzz when missing. The machine has one stable
# toolchain, so the sanitizer flags cargo-fuzz needs are allowed with RUSTC_BOOTSTRAP=1.
#
#   fuzz/run.sh [SECONDS] [TARGET...]
set -uo pipefail
cd "$(dirname "$0")"
seconds="${1:-60}"
shift || true
if ! command -v cargo-fuzz >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(RUSTC_BOOTSTRAP=1 cargo fuzz list)
fi
export RUSTC_BOOTSTRAP=1
echo "| target | time | executions | crashes |"
echo "|---|---|---|---|"
failed=0
for target in "${targets[@]}"; do
    log="$(mktemp)"
    RUSTC_BOOTSTRAP=1 cargo fuzz build -O "$target" >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
    mkdir -p "corpus/$target"
    cargo fuzz run -O "$target" "corpus/$target" -- -max_total_time="$seconds" -print_final_stats=1 >"$log" 2>&1
    status=$?
    runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)"
    crashes=0
    if [ $status -ne 0 ]; then
        crashes=1
        failed=1
        grep -E 'panicked|ERROR|artifact' "$log" | head -5 >&2
    fi
    printf '| `%s` | %s s | %s | %s |\n' "$target" "$seconds" "$(printf "%'d" "${runs:-0}")" "$crashes"
    rm -f "$log"
done
exit $failed
