# Sourced, not run: start_xvfb starts Xvfb on a display nobody uses and returns once the server
# accepts connections, with DISPLAY exported and its pid in $xvfb_pid. Xvfb picks the display
# itself and names it on a file descriptor when it is ready (-displayfd), so there is no guessed
# display number and no race: a window started before its X server answers fails to connect,
# and hookscope then shows its start-up error in a dialog and waits. The first start on a fresh
# machine can take seconds. Used by .ci/desktop-check, bench/gui.sh and bench/soak.sh.
start_xvfb() {
  local ready
  ready=$(mktemp)
  Xvfb -displayfd 3 -screen 0 1400x900x24 3>"$ready" >/dev/null 2>&1 &
  xvfb_pid=$!
  for _ in $(seq 300); do
    if [ -s "$ready" ] && grep -q '^[0-9][0-9]*$' "$ready"; then
      export DISPLAY=":$(head -n 1 "$ready")"
      rm -f "$ready"
      return 0
    fi
    kill -0 "$xvfb_pid" 2>/dev/null || break
    sleep 0.1
  done
  rm -f "$ready"
  echo "Xvfb did not start within 30 s" >&2
  return 1
}
