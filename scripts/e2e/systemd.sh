#!/usr/bin/env bash
# End to end: tunneld under systemd's notify protocol (issue 17 item 3), without systemd: a Python
# listener in the gateway namespace is NOTIFY_SOCKET. READY=1 arrives only once the interface is
# up, the route for a peer's AllowedIPs is set and the control, UAPI and metrics sockets listen;
# STATUS= names the peers connected; WATCHDOG=1 comes every second (WATCHDOG_USEC=2 s) and stops
# while the data path is wedged (TUNNELD_TEST_WEDGE_FILE), then resumes; `tunnelctl reload` sends
# RELOADING=1 with MONOTONIC_USEC= and READY=1 after it; SIGTERM sends STOPPING=1. Needs root; ~25 s.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/topology.sh
source scripts/lib/check.sh
trap tv_cleanup EXIT
CTL="$TV_TUNNELCTL --config $TV_DIR/tunneld.conf"
LOG=$TV_DIR/notify.log
after() { local mark=$1; shift; awk -v m="$mark" '$1 > m' "$LOG" | grep -E -- "$@"; }
count_after() { awk -v m="$1" '$1 > m' "$LOG" | grep -c "WATCHDOG=1"; }
now_mono() { python3 -c 'import time; print("%.3f" % time.monotonic())'; }

tv_topology_up
tv_tunneld_config e2e premium
sed -i "s/^\[Interface\]$/[Interface]\nMetricsListen = 127.0.0.1:9586/" "$TV_DIR/tunneld.conf"
BOB_PUB=$(wg genkey | wg pubkey)
printf '\n[Peer]\nName = bob\nPublicKey = %s\nAllowedIPs = 10.98.0.0/24\n' "$BOB_PUB" >>"$TV_DIR/tunneld.conf"
tv_spawn "$TV_NS_G" "$TV_DIR/listener.out" python3 scripts/e2e/lib/notifylisten.py "$TV_DIR/notify.sock" "$LOG" \
  "$TV_IF_G" 10.98.0.0/24 "$TV_DIR/run/control.sock" "/var/run/wireguard/$TV_IF_G.sock" 9586
wait_for 5 grep -q listening "$LOG" >/dev/null
tv_spawn "$TV_NS_G" "$TV_DIR/tunneld.log" env NOTIFY_SOCKET="$TV_DIR/notify.sock" WATCHDOG_USEC=2000000 \
  TUNNELD_TEST_WEDGE_FILE="$TV_DIR/wedge" "$TV_TUNNELD" --config "$TV_DIR/tunneld.conf" --foreground
TV_GW_PID=$TV_LAST_PID

echo "systemd: readiness"
wait_for 10 grep -q 'READY=1' "$LOG" >/dev/null
check_output "READY=1 arrives" 'READY=1' cat "$LOG"
check_output "… only once the interface, route, control, UAPI and metrics sockets exist" \
  'READY=1.*:: iface=1 route=1 control=1 uapi=1 metrics=1$' grep -m1 'READY=1' "$LOG"
check_output "the first message is READY=1 (nothing earlier claims readiness)" 'READY=1' sh -c "grep -v listening '$LOG' | head -1"
check_output "STATUS= says how many peers are connected" 'STATUS=[0-9]+ of 2 peer\(s\) connected' cat "$LOG"

echo "systemd: watchdog"
M=$(now_mono); sleep 3.5
check_output "WATCHDOG=1 comes while the data path is healthy" '^[2-9]$' count_after "$M"
touch "$TV_DIR/wedge"; sleep 2.5
M=$(now_mono); sleep 3.5
check_output "WATCHDOG=1 stops while the data path is wedged (test hook)" '^0$' count_after "$M"
check_output "the log names the stuck thread" 'tv-timers made no progress.*WATCHDOG=1 withheld' cat "$TV_DIR/tunneld.log"
rm -f "$TV_DIR/wedge"; sleep 1.5
M=$(now_mono); sleep 3
check_output "and resumes when it makes progress again" '^[1-9]$' count_after "$M"

echo "systemd: reload"
M=$(now_mono)
$CTL reload >/dev/null 2>&1
sleep 0.5
check_output "tunnelctl reload sends RELOADING=1 with MONOTONIC_USEC=" 'RELOADING=1\|MONOTONIC_USEC=[0-9]+ ::' after "$M" RELOADING
check_output "… then READY=1" 'READY=1' sh -c "awk -v m=$M '\$1 > m' '$LOG' | sed -n '/RELOADING=1/,\$p' | grep READY=1"

echo "systemd: stop"
kill -TERM "$TV_GW_PID"; wait "$TV_GW_PID" 2>/dev/null
check_output "SIGTERM sends STOPPING=1" 'STOPPING=1' cat "$LOG"

tv_summary
