#!/usr/bin/env bash
# End to end: limits beyond the free window (issue 16, docs/limits.md) with a real wireguard-go
# client. alice is in a [Tier trial] with Quota = 20MiB and no session time (a quota-only
# window), WatchdogInterval = 1s; bob is premium with his own IdleTimeout = 5s. Checks: the quota
# is counted per window and survives kill -9 + restart, the window ends after 20 MiB ± one batch
# (measured on the server's link, not by our own counters) with reason quota, alice is refused
# through her reconnect attempts (churn does not reset the quota), `session` says how much was
# used; bob's busy session is not ended idle, his idle one is. Needs root; ~1 minute.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/topology.sh
source scripts/lib/check.sh
trap tv_cleanup EXIT
CTL="$TV_TUNNELCTL --config $TV_DIR/tunneld.conf"
TV_WATCHDOG=1s
export TV_WATCHDOG
BOB_TUN=$TV_BOB_TUN
QUOTA=$((20 * 1024 * 1024))
SLACK=$((128 * 1024))  # one batch of 64 packets of up to 1420 bytes is 90 KiB; both directions' batches

store_sql() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); [print("|".join(map(str,r))) for r in c.execute(sys.argv[2])]' "$TV_DIR/state/state.db" "$1"; }
used_total() { store_sql "SELECT used_up + used_down FROM session_windows WHERE peer = 'alice'"; }
# IP bytes the server received (what the gateway forwarded up): frame bytes minus 14 per frame.
server_rx_ip() { tv_in "$TV_NS_S" python3 -c "
d='/sys/class/net/vs$TV_ID/statistics/'
print(int(open(d+'rx_bytes').read()) - 14 * int(open(d+'rx_packets').read()))"; }
alice_ping() { tv_in "$TV_NS_C" ping -c1 -W1 -I $TV_C_TUN $TV_SRV; }
alice_blocked() { ! tv_in "$TV_NS_C" ping -c2 -W1 -I $TV_C_TUN $TV_SRV; }
bob_ping() { tv_in "$TV_NS_C" ping -c1 -W1 -I $BOB_TUN $TV_SRV; }
gateway_up() { tv_gateway_tunneld_up && TV_PIDS+=("$TV_GW_PID"); }

tv_topology_up
tv_tunneld_config e2e trial
cat >>"$TV_DIR/tunneld.conf" <<CONF

[Tier trial]
Quota = 20MiB
Pause = 1h
CONF
tv_bob_peer premium
echo "IdleTimeout = 5s" >>"$TV_DIR/tunneld.conf"  # bob's own key (his section is the last)
check_output "tunneld --check-config accepts [Tier trial] and a per-peer IdleTimeout" 'OK|ok' \
  "$TV_TUNNELD" --check-config --config "$TV_DIR/tunneld.conf"
gateway_up || { tv_bad "tunneld starts"; tv_summary; exit 1; }
tv_client_up 0
TV_PIDS+=("$TV_WG_C_PID")
tv_bob_up
tv_spawn "$TV_NS_S" "$TV_DIR/iperf3-server.log" iperf3 -s -B $TV_SRV
sleep 0.5

echo "limits: quota"
RX0=$(server_rx_ip)
check "alice's traffic flows (her quota window opens)" tv_wait_tunnel
check_output "session alice: a quota window, nothing of it used yet" '^alice \(trial\): connected, no time limit in its window; [0-9.]+ [KMG]?i?B of 20MiB used' $CTL session alice
tv_in "$TV_NS_C" timeout 20 iperf3 -c $TV_SRV -B $TV_C_TUN -n 8M >"$TV_DIR/iperf-1.log" 2>&1
# iperf3 -n stops when its socket took the bytes, not when the server got them: what reached the
# server (its link's IP bytes) is the reference the window's count must cover.
at_least() { [ "$(used_total)" -ge "$1" ]; }
sleep 1
RX1=$(( $(server_rx_ip) - RX0 ))
check "a transfer sent: the store counts at least what reached the server ($RX1 IP bytes) within a few watchdog passes" \
  wait_for 6 at_least $RX1
U1=$(used_total)
echo "  counted after the first transfer: $U1 bytes (server received $RX1 IP bytes)"
check "and it was a real transfer (> 4 MiB)" test "${U1:-0}" -gt $((4 * 1024 * 1024))
check_output "session alice shows the use" 'of 20MiB used' $CTL session alice
check_output "status page JSON and peers agree on the tier" 'trial' $CTL peers

echo "limits: kill -9 and restart in the middle"
kill -9 "$TV_GW_PID"; wait "$TV_GW_PID" 2>/dev/null
gateway_up || tv_bad "tunneld restarts"
check "alice reconnects" wait_for 20 alice_ping
U2=$(used_total)
check "the restart kept the window's use ($U2 >= $U1)" test "${U2:-0}" -ge "${U1:-1}"
tv_in "$TV_NS_C" timeout 25 iperf3 -c $TV_SRV -B $TV_C_TUN -n 30M --connect-timeout 3000 >"$TV_DIR/iperf-2.log" 2>&1
sleep 2.5
RX=$(( $(server_rx_ip) - RX0 ))
U3=$(used_total)
echo "  quota 20 MiB: $U3 bytes counted by tunneld, $RX IP bytes reached the server (both since the window opened)"
check "the window stopped at 20 MiB + at most one batch ($U3 counted)" test "${U3:-0}" -ge $QUOTA -a "${U3:-0}" -le $((QUOTA + SLACK))
check "the server received no more than the quota + one batch ($RX IP bytes up)" test "$RX" -le $((QUOTA + SLACK)) -a "$RX" -ge $((QUOTA - 2 * 1024 * 1024))
check_output "the session ended 'quota'" 'quota' store_sql "SELECT end_reason FROM sessions WHERE peer = 'alice' AND ended_at IS NOT NULL ORDER BY id DESC LIMIT 1"
check_output "session alice: paused because of the quota" '^alice \(trial\): paused \(quota used: 20\.0 MiB of 20MiB used\), can reconnect in (59m|1h)' $CTL session alice
check_output "tunnelctl status counts the packets refused over quota" 'quota-used' $CTL status
check "alice cannot get through now" alice_blocked
check_output "a watchdog marker says why" 'watchdog: alice used its quota' store_sql "SELECT label FROM markers WHERE kind = 'automatic'"
# Reconnect churn: wireguard-go keeps retrying its handshake; each is refused, the window stays.
sleep 12
check_output "explain alice: refused during the pause, retries counted" 'refused|pause' $CTL explain alice
check_exit "explain alice exits 0 (refused)" 0 $CTL explain alice
check_output "explain alice names the quota as what ended the window" 'refused — quota pause: .*20\.0 MiB of 20MiB used' $CTL explain alice
check_output "explain alice lists the limits in force" '^  limits +quota 20MiB then pause 1h' $CTL explain alice
check_output "the refusal rows say 'quota pause'" '^quota pause$' store_sql "SELECT DISTINCT reason FROM refusals WHERE peer = 'alice' AND kind = 'session'"
check_output "tunnelctl peers shows alice's limits and the quota's use" '^alice .*quota 20MiB.*\(20\.0 MiB of 20MiB used\)' $CTL peers
check_output "peers --json: alice's quota" '"quota" : "20.0 MiB of 20MiB used"' $CTL peers --json
check_output "the live view shows alice paused, with her limits" 'alice .*paused, .* left .*quota 20MiB' \
  timeout 4 $CTL watch --view
U4=$(used_total)
check "reconnect attempts did not reset the quota ($U4 >= $QUOTA)" test "${U4:-0}" -ge $QUOTA

echo "limits: IdleTimeout (bob, premium, 5s)"
check "bob gets through" wait_for 15 bob_ping
tv_in "$TV_NS_C" ping -q -c 16 -i 0.5 -I $BOB_TUN $TV_SRV >/dev/null 2>&1
check "busy for 8 s: bob's session was not ended idle" test -z "$(store_sql "SELECT id FROM sessions WHERE peer = 'bob' AND end_reason = 'idle'")"
sleep 8
check_output "idle for 8 s: bob's session ended 'idle'" '^idle$' store_sql "SELECT end_reason FROM sessions WHERE peer = 'bob' AND ended_at IS NOT NULL ORDER BY id DESC LIMIT 1"
check "bob can come back (idle is not a pause)" wait_for 40 bob_ping

tv_summary
