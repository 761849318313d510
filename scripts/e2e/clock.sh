#!/usr/bin/env bash
# End to end: the free-session rule holds while the *daemon's* wall clock steps (docs/session.md,
# "Clock steps", "Across a restart"). FreeSession 20 s, FreePause 40 s, WatchdogInterval 1 s; a
# real wireguard-go client pings through the tunnel every 0.2 s and retries its handshake by
# itself. tunneld and tunnelctl run under libfaketime with a timestamp file this script edits
# (the host's clock is never touched); CLOCK_BOOTTIME is not faked. Per window:
#   W1: wall clock back 1 h inside the window, back 1 h more inside the pause;
#   W2: forward 1 h inside the window; in the pause a quick tier flip (premium, free) and a
#       restart, then forward 2 h (a wrong clock);
#   W3: put right (back 1 h) inside the window; in the pause kill -9 and a restart with the clock
#       1 h behind the last heartbeat.
# Asserts: connected time per window ≤ FreeSession + WatchdogInterval + 1 s, every pause ≥
# FreePause of real time, `session` never promises more than what is left, `session`, `explain`
# and `peers` agree after the tier flip, and the step markers are in the store. Needs root; ~5 min.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/topology.sh
source scripts/lib/check.sh
trap tv_cleanup EXIT
TV_FREE_SESSION=20s TV_FREE_PAUSE=40s TV_WATCHDOG=1s
export TV_FREE_SESSION TV_FREE_PAUSE TV_WATCHDOG
SESSION=20 PAUSE=40 INTERVAL=1

FT_LIB=$(dpkg -L libfaketime 2>/dev/null | grep '/libfaketime\.so\.1$' | head -1)
[ -n "$FT_LIB" ] || { echo "clock: libfaketime is not installed (scripts/deps.sh installs it)"; exit 1; }
FT_FILE=$TV_DIR/faketime
echo "+0" >"$FT_FILE"
# The daemon's and the CLI's clock: wall time = real time + the offset in $FT_FILE (re-read every
# second); monotonic and boot time untouched.
FT=(env "LD_PRELOAD=$FT_LIB" "FAKETIME_TIMESTAMP_FILE=$FT_FILE" FAKETIME_CACHE_DURATION=1 FAKETIME_DONT_FAKE_MONOTONIC=1)
# The daemon sees a new offset within a second (the cache) and moves the stored dates at its next
# tick (WatchdogInterval): tunnelctl reads the moved dates after that.
set_offset() { echo "$1" >"$FT_FILE"; tv_log "clock: daemon wall clock offset now $1 s"; sleep 3; }
CTL=("${FT[@]}" "$TV_TUNNELCTL" --config "$TV_DIR/tunneld.conf")
ctl() { "${CTL[@]}" "$@"; }
PING_LOG=$TV_DIR/alice-ping.log
now_s() { date +%s.%N; }
sleep_until() { while python3 -c "import sys,time; sys.exit(0 if time.time() < $1 else 1)"; do sleep 0.1; done; }
store_sql() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); [print("|".join(map(str,r))) for r in c.execute(sys.argv[2])]' "$TV_DIR/state/state.db" "$1"; }

gateway_up() {
  tv_spawn "$TV_NS_G" "$TV_DIR/tunneld.log" "${FT[@]}" "$TV_TUNNELD" --config "$TV_DIR/tunneld.conf" --foreground
  TV_GW_PID=$TV_LAST_PID
  for _ in $(seq 100); do [ -S "$TV_DIR/run/control.sock" ] && return 0; sleep 0.1; done
  tv_log "tunneld did not start:"; cat "$TV_DIR/tunneld.log" >&2; return 1
}
gateway_down() { kill "-${1:-TERM}" "$TV_GW_PID" 2>/dev/null; wait "$TV_GW_PID" 2>/dev/null; rm -f "$TV_DIR/run/control.sock"; }

# The real time of the first reply after $1 that follows a gap of more than 3 s (a window's start).
next_window_start() {
  python3 - "$PING_LOG" "$1" <<'PY'
import re, sys
after = float(sys.argv[2]); prev = None
for line in open(sys.argv[1]):
    m = re.match(r'^\[([0-9.]+)\] \d+ bytes from', line)
    if not m: continue
    t = float(m.group(1))
    if t > after and (prev is None or t - prev > 3.0): print(t); break
    prev = t
PY
}
wait_window() {  # prints the start of the next window after $1 (an expression; waits up to $2 s)
  local end=$((SECONDS + $2)) t after
  after=$(python3 -c "print($1)")
  while [ $SECONDS -lt $end ]; do
    t=$(next_window_start "$after"); [ -n "$t" ] && { echo "$t"; return 0; }; sleep 0.3
  done
  return 1
}
# "N s left" of `tunnelctl session alice` (connected), or empty.
left_s() { ctl session alice 2>/dev/null | sed -n 's/.*connected, \([0-9hms]*\) left.*/\1/p' | python3 -c '
import re,sys
t=sys.stdin.read().strip(); print(sum(int(n)*{"h":3600,"m":60,"s":1}[u] for n,u in re.findall(r"(\d+)([hms])",t)) if t else "")'; }

tv_topology_up
tv_tunneld_config e2e free
gateway_up || { tv_bad "tunneld starts under libfaketime"; tv_summary; exit 1; }
check_output "tunneld under libfaketime kept its arguments (its config, not /etc/tunnelvision)" "up: interface $TV_IF_G" cat "$TV_DIR/tunneld.log"
tv_client_up 0
TV_PIDS+=("$TV_WG_C_PID")
check "alice's traffic flows" tv_wait_tunnel
tv_spawn "$TV_NS_C" "$PING_LOG" ping -D -i 0.2 -W1 -I $TV_C_TUN $TV_SRV
T1=$(wait_window 0 10) || { tv_bad "first window"; tv_summary; exit 1; }
# The first window opened at the handshake, a little before the ping's first reply.
echo "clock: W1 from $T1"

echo "clock: W1 — back 1 h in the window, back 1 h more in the pause"
sleep_until "$T1 + 5"; set_offset -3600
L=$(left_s); check "after the step, session promises at most what is left (${L:-?} s ≤ $SESSION s)" test -n "$L" -a "${L:-99999}" -le $SESSION
sleep_until "$T1 + 30"; set_offset -7200
check_output "paused after the step in the pause" '^alice \(free\): paused, can reconnect in [0-9]+s' ctl session alice
T2=$(wait_window "$T1 + 21" 75) || tv_bad "W2 never started"
echo "clock: W2 from ${T2:-?}"

echo "clock: W2 — forward 1 h in the window; tier flip and restart in the pause; forward 2 h"
sleep_until "${T2:-0} + 5"; set_offset -3600
L=$(left_s); check "after the forward step, session promises at most what is left (${L:-?} s ≤ $SESSION s)" test -n "$L" -a "${L:-99999}" -le $SESSION
sleep_until "${T2:-0} + 27"
ctl peer tier alice premium >/dev/null; ctl peer tier alice free >/dev/null
check_output "quick flip: session says paused" '^alice \(free\): (paused|disconnected), can reconnect in' ctl session alice
check_output "quick flip: explain says refused (pause)" 'paus|refus' ctl explain alice
check_output "quick flip: peers says paused" 'alice +free +paused' ctl peers
gateway_down TERM; gateway_up || tv_bad "tunneld restarts after the flip"
check_output "after the restart: session still paused" '^alice \(free\): (paused|disconnected), can reconnect in' ctl session alice
check_output "after the restart: peers says paused" 'alice +free +paused' ctl peers
sleep_until "${T2:-0} + 33"; set_offset +3600
T3=$(wait_window "${T2:-0} + 21" 75) || tv_bad "W3 never started"
echo "clock: W3 from ${T3:-?}"

echo "clock: W3 — put right (back 1 h) in the window; kill -9 and restart 1 h behind in the pause"
sleep_until "${T3:-0} + 5"; set_offset +0
L=$(left_s); check "after the correction, session promises at most what is left (${L:-?} s ≤ $SESSION s)" test -n "$L" -a "${L:-99999}" -le $SESSION
sleep_until "${T3:-0} + 30"
gateway_down KILL
echo "-3600" >"$FT_FILE"
gateway_up || tv_bad "tunneld restarts with the clock behind"
check_output "the start behind the heartbeat is logged" 'behind the daemon.s last heartbeat' cat "$TV_DIR/tunneld.log"
T4=$(wait_window "${T3:-0} + 21" 80) || tv_bad "W4 never started"
echo "clock: W4 from ${T4:-?}"
sleep 3

echo "clock: what the client got"
python3 - "$PING_LOG" $SESSION $PAUSE $INTERVAL <<'PY' | tee "$TV_DIR/cycles.txt"
import re, sys
session, pause, interval = (float(x) for x in sys.argv[2:5])
ts = [float(m.group(1)) for m in (re.match(r'^\[([0-9.]+)\] \d+ bytes from', l) for l in open(sys.argv[1])) if m]
runs, start, prev = [], ts[0], ts[0]
for t in ts[1:]:
    if t - prev > 3.0: runs.append((start, prev)); start = t
    prev = t
runs.append((start, prev))
bad = 0
for i, (a, b) in enumerate(runs):
    conn = b - a + 0.2
    gap = runs[i + 1][0] - b if i + 1 < len(runs) else None
    ok_conn = conn <= session + interval + 1 or i == len(runs) - 1
    ok_gap = gap is None or gap >= pause - 1
    bad += (not ok_conn) + (not ok_gap)
    print(f"window {i+1}: connected {conn:5.1f} s" + (f", then paused {gap:5.1f} s" if gap is not None else "")
          + ("" if ok_conn and ok_gap else "   <-- breaks the rule"))
print("RESULT", "ok" if bad == 0 and len(runs) >= 4 else f"bad ({bad} violations, {len(runs)} windows)")
PY
check "every window ≤ FreeSession + WatchdogInterval + 1 s and every pause ≥ FreePause (4 windows)" grep -q '^RESULT ok' "$TV_DIR/cycles.txt"
check_output "the steps are in the store as markers" 'wall clock stepped -1h' store_sql "SELECT label FROM markers WHERE kind = 'automatic'"
check_output "the forward step too" 'wall clock stepped \+2h' store_sql "SELECT label FROM markers WHERE kind = 'automatic'"
check_output "and the start behind the heartbeat" 'behind the daemon.s last heartbeat' store_sql "SELECT label FROM markers WHERE kind = 'automatic'"
tv_summary
