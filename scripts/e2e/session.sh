#!/usr/bin/env bash
# End to end: the free-session watchdog (docs/session.md) with FreeSession = 20s, FreePause = 30s,
# WatchdogInterval = 1s. alice (free) and bob (premium) are two wireguard-go interfaces in the
# client namespace (bob's traffic leaves by source routing). Checks: traffic flows, the window
# survives kill -9 + restart with its original end, alice's traffic stops at the window end,
# session/explain report the pause and the refused retries, bob is unaffected, alice reconnects
# by herself after the pause. Needs root; ~1.5 minutes. Run by scripts/test.sh.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/topology.sh
source scripts/lib/check.sh
trap tv_cleanup EXIT
CTL="$TV_TUNNELCTL --config $TV_DIR/tunneld.conf"
TV_FREE_SESSION=20s TV_FREE_PAUSE=30s TV_WATCHDOG=1s
export TV_FREE_SESSION TV_FREE_PAUSE TV_WATCHDOG
BOB_TUN=$TV_BOB_TUN

now_s() { date +%s.%N; }
# allowed_until of alice (epoch seconds, float) from `tunnelctl session alice --json`.
allowed_until() {
  $CTL session alice --json 2>/dev/null | python3 -c 'import json,sys,datetime
d=json.load(sys.stdin); a=d.get("allowedUntil")
print(datetime.datetime.fromisoformat(a.replace("Z","+00:00")).timestamp() if a else "")'
}
store_sql() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); [print("|".join(map(str,r))) for r in c.execute(sys.argv[2])]' "$TV_DIR/state/state.db" "$1"; }
bob_ping() { tv_in "$TV_NS_C" ping -c2 -W2 -I $BOB_TUN $TV_SRV; }
alice_ping() { tv_in "$TV_NS_C" ping -c1 -W1 -I $TV_C_TUN $TV_SRV; }
alice_blocked() { ! tv_in "$TV_NS_C" ping -c2 -W1 -I $TV_C_TUN $TV_SRV; }
# tv_spawn runs in $(…) for the daemon, so its pid must be remembered here for the cleanup.
gateway_up() { tv_gateway_tunneld_up && TV_PIDS+=("$TV_GW_PID"); }

tv_topology_up
tv_tunneld_config e2e free
tv_bob_peer premium
gateway_up || { tv_bad "tunneld starts"; tv_summary; exit 1; }
tv_client_up 0
TV_PIDS+=("$TV_WG_C_PID")  # spawned in $(…) by tv_client_up: remember it for the cleanup
# bob: a second wireguard-go interface; packets from $BOB_TUN use it (policy routing).
tv_bob_up

echo "session: window"
check "alice's traffic flows (handshake opens her window)" tv_wait_tunnel
check "bob (premium) gets through too" wait_for 10 bob_ping
# A ping that never stops: wireguard-go keeps retrying its handshake (~every 5 s) while it has
# packets to send. -D prints a timestamp per reply.
tv_spawn "$TV_NS_C" "$TV_DIR/alice-ping.log" ping -D -i 0.2 -W1 -I $TV_C_TUN $TV_SRV >/dev/null
tv_spawn "$TV_NS_C" "$TV_DIR/bob-ping.log" ping -D -i 0.5 -W1 -I $BOB_TUN $TV_SRV >/dev/null
A1=$(allowed_until)
check "the store holds alice's window" test -n "$A1"
check_output "tunnelctl session alice: connected, time left" '^alice \(free\): connected, 1?[0-9]s left \(until [0-9:]+ [^)]+\), then paused until' $CTL session alice
check_output "tunnelctl session bob: unlimited" '^bob \(premium\): connected, unlimited' $CTL session bob

echo "session: kill -9 and restart mid-window"
kill -9 "$TV_GW_PID"; wait "$TV_GW_PID" 2>/dev/null
check_output "without the daemon, session reads the store" '^alice \(free\): disconnected, [0-9]+s left in its window' $CTL session alice
check_output "without the daemon, peers falls back to the store (exit 0)" 'alice +free' $CTL peers
gateway_up || tv_bad "tunneld restarts"
A2=$(allowed_until)
check "the restarted daemon keeps the original window end ($A1)" test "$A1" = "$A2"
check_output "the session the crash left open ended 'crash'" 'crash' store_sql "SELECT peer, end_reason FROM sessions WHERE peer = 'alice'"
check_output "the restart wrote no second window" "^alice\|$(python3 -c "print(int(float('$A1')*1000))")\$" store_sql "SELECT peer, allowed_until FROM session_windows WHERE peer = 'alice'"

echo "session: the window ends"
END=$(python3 -c "print(float('$A1'))")
while python3 -c "import sys,time; sys.exit(0 if time.time() < $END + 2.5 else 1)"; do sleep 0.5; done
LAST_REPLY=$(grep 'bytes from' "$TV_DIR/alice-ping.log" | tail -1 | sed -n 's/^\[\([0-9.]*\)\].*/\1/p')
check "alice's traffic stopped by the window end + 1 s (last reply $LAST_REPLY, end $END)" \
  python3 -c "import sys; sys.exit(0 if '$LAST_REPLY' and float('$LAST_REPLY') <= $END + 1.0 else 1)"
check "alice cannot get through now" alice_blocked
# The live ring through the pause: the refused retries, each with the watchdog's reason.
$CTL watch --blocked --peer alice >"$TV_DIR/watch-pause.txt" 2>"$TV_DIR/watch-pause.err" &
WATCH_PID=$!
TV_PIDS+=("$WATCH_PID")
check_output "tunnelctl session alice: paused, time left" '^alice \(free\): paused, can reconnect in [0-9]+s \(at [0-9:]+ [^)]+\)' $CTL session alice
check "bob (premium) reconnected after the restart and is unaffected by alice's pause" wait_for 20 bob_ping
# wireguard-go notices the dead session after ~15 s (keepalive + rekey timeouts), then retries
# its handshake every ~5 s: look when a few retries were refused.
while python3 -c "import sys,time; sys.exit(0 if time.time() < $END + 24 else 1)"; do sleep 0.5; done
check_output "tunnelctl explain alice: refused, attempts > 1 while the client retries" 'attempts +([2-9]|[1-9][0-9]+) handshakes refused' $CTL explain alice
kill "$WATCH_PID" 2>/dev/null; wait "$WATCH_PID" 2>/dev/null
check_output "tunnelctl watch showed the refused retries with their reason" '^[0-9T:.-]+Z refusal alice reason free-pause$' cat "$TV_DIR/watch-pause.txt"
check_exit "explain alice exits 0 (refused)" 0 $CTL explain alice
check_output "tunnelctl refusals: one coalesced session row" 'alice +session +pause after window' $CTL refusals --peer alice
check_output "the session row ended 'free-limit'" 'free-limit' store_sql "SELECT end_reason FROM sessions WHERE peer = 'alice' AND ended_at IS NOT NULL ORDER BY id DESC LIMIT 1"
check_output "a watchdog marker was written" 'watchdog: alice session ended \(free-limit\)' store_sql "SELECT label FROM markers WHERE kind = 'automatic'"
check_output "tunnelctl status shows the store drops" 'store queue drops: 0|store drops: none' $CTL status

echo "session: after the pause"
RECONNECT=$(python3 -c "print(float('$A1') + 30)")
while python3 -c "import sys,time; sys.exit(0 if time.time() < $RECONNECT else 1)"; do sleep 0.5; done
check "alice reconnects by herself after the pause" wait_for 15 alice_ping
check_output "with a new window" '^alice \(free\): connected, [0-9]+s left' $CTL session alice
check_exit "explain alice exits 1 (not refused)" 1 $CTL explain alice
check "bob (premium) still gets through" bob_ping
check_output "tunnelctl flows lists alice's flows" 'alice +icmp 10\.99\.0\.2' $CTL flows --peer alice
CLIENT="tv_in $TV_NS_C python3 scripts/e2e/lib/netclient.py"
$CLIENT connect $TV_SRV 7001 1 >/dev/null 2>&1; $CLIENT connect $TV_SRV 7001 1 >/dev/null 2>&1; sleep 0.5
check_output "flows --blocked lists the blocked attempts" 'alice +tcp 10\.99\.0\.2:[0-9]+ -> 198\.19\.0\.2:7001 +- +block' $CTL flows --blocked
check_output "explain FLOW names the rule and how often it refused" 'refused +2 times' $CTL explain "tcp 10.99.0.2 -> 198.19.0.2:7001"
check_exit "explain FLOW exits 1 for a blocked flow" 1 $CTL explain "tcp 10.99.0.2 -> 198.19.0.2:7001"
check_output "explain FLOW shows the live flow from the daemon" 'live +[1-9][0-9]* in tunneld now' $CTL explain "icmp 10.99.0.2 -> 198.19.0.2"
check_output "tunnelctl peer tier alice premium" 'alice: tier premium' $CTL peer tier alice premium
wait_for 5 bash -c "$CTL peers | grep -Eq 'alice +premium'"
check_output "the daemon applies the tier without restart" 'alice +premium +connected' $CTL peers
check_output "session alice: unlimited" '^alice \(premium\): connected, unlimited' $CTL session alice

tv_summary
