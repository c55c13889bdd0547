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
