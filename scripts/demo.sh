#!/usr/bin/env bash
# The main job: a whole TunnelVision gateway in network namespaces made (and removed) here.
#   client ns: a stock wireguard-go + wg client      gateway ns: tunneld      server ns: test services
# Shows traffic passing, a blocked and a rejected flow explained, `wg show` reading tunneld over
# UAPI, `tunnelctl status / peers / policy show`, a free-tier session (FreeSession 20 s) counting
# down and ending, the peer refused in its pause (`explain`, `refusals`), an audit marker, the
# history in a timeline, retention and a prune (dry run first), Prometheus /metrics and the
# operator events tunneld logged; then tears everything down. One command, about a minute. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH
[ "$(id -u)" -eq 0 ] || { echo "demo: run as root (it creates network namespaces)"; exit 2; }
scripts/deps.sh
echo "building tunneld and tunnelctl (release)…"
swift build -c release --product tunneld >/dev/null
swift build -c release --product tunnelctl >/dev/null
source scripts/lib/topology.sh
trap tv_cleanup EXIT
CTL="$TV_TUNNELCTL --config $TV_DIR/tunneld.conf"
CLIENT="tv_in $TV_NS_C python3 scripts/e2e/lib/netclient.py"
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# expect CODE CMD...: shows CMD and its output, and stops the demo when CMD exits other than CODE
# (a demo that prints an error and carries on shows nothing). run CMD... expects 0.
expect() {
  local want=$1 rc=0; shift
  printf '$ %s\n' "$*"
  # pipefail: the pipeline's status is CMD's (sed does not fail).
  "$@" 2>&1 | sed 's/^/  /' || rc=$?
  [ "$rc" -eq "$want" ] || { echo "demo: '$*' exited $rc, expected $want; stopping" >&2; exit 1; }
}
run() { expect 0 "$@"; }
# expect_output REGEX CMD...: as run, and CMD's output must match REGEX (a blocked connection
# prints "timeout" and exits 0).
expect_output() {
  local re=$1 out rc=0; shift
  printf '$ %s\n' "$*"
  out=$("$@" 2>&1) || rc=$?
  printf '%s\n' "$out" | sed 's/^/  /'
  [ "$rc" -eq 0 ] && printf '%s' "$out" | grep -Eq -- "$re" || { echo "demo: '$*' (exit $rc) did not print /$re/; stopping" >&2; exit 1; }
}

say "namespaces: client $TV_NS_C, gateway $TV_NS_G, server $TV_NS_S"
tv_topology_up
# alice is on the free tier with a short window, so the demo shows it ending.
TV_FREE_SESSION=20s TV_FREE_PAUSE=40s TV_WATCHDOG=1s tv_tunneld_config e2e free
# Prometheus metrics on the gateway namespace's loopback (MetricsListen is off by default).
sed -i "s/^\[Interface\]$/[Interface]\nMetricsListen = 127.0.0.1:9586/" "$TV_DIR/tunneld.conf"
echo "policy in $TV_DIR/policies:"; sed 's/^/  /' "$TV_DIR"/policies/*.rules
tv_gateway_tunneld_up
tv_client_up 0
tv_spawn "$TV_NS_S" "$TV_DIR/netserver.log" python3 scripts/e2e/lib/netserver.py >/dev/null
tv_spawn "$TV_NS_S" "$TV_DIR/iperf3.log" iperf3 -s >/dev/null
sleep 0.5

say "traffic passes: the client pings the server through the tunnel (IPv4 and IPv6)"
tv_wait_tunnel
run tv_in "$TV_NS_C" ping -c3 -i0.2 $TV_SRV
run tv_in "$TV_NS_C" ping -6 -c3 -i0.2 $TV_SRV6
say "a TCP transfer through the gateway (iperf3, 3 s)"
run tv_in "$TV_NS_C" iperf3 -c $TV_SRV -t 3 -f m
say "a blocked flow (tcp port 7001) times out; a rejected one (tcp port 7002) is refused at once"
expect_output '^timeout' $CLIENT connect $TV_SRV 7001 3
expect_output '^refused' $CLIENT connect $TV_SRV 7002 3
say "tunnelctl asks why: policy test offline (peer and tier from the config), explain with the history"
# Exit 1: the answer is "no" (rejected, blocked).
expect 1 $CTL policy test "tcp $TV_C_TUN:40000 -> $TV_SRV:7002"
expect 1 $CTL explain "tcp $TV_C_TUN:40000 -> $TV_SRV:7001"
run $CTL policy show
say "the stock wg tool reads tunneld over the WireGuard UAPI"
run tv_in "$TV_NS_G" wg show "$TV_IF_G"
say "tunnelctl status and peers"
run $CTL status
run $CTL peers
say "alice is on the free tier: her session window, and what is left of it (counting down)"
run $CTL session alice
sleep 4
run $CTL session alice
run $CTL audit mark "demo: waiting for alice's window to end"
# Wait until the window has ended (the watchdog ticks every second).
until=$($CTL session alice --json 2>/dev/null | python3 -c 'import json,sys,datetime
a=json.load(sys.stdin).get("allowedUntil"); print(datetime.datetime.fromisoformat(a.replace("Z","+00:00")).timestamp() if a else 0)')
wait=$(python3 -c "import time; print(max(0.0, $until - time.time()) + 2.5)")
printf '  (waiting %.0f s for the window to end)\n' "$wait"; sleep "$wait"
say "the window has ended: alice's client reconnects (a fresh handshake) and is refused during her pause"
reconnect() {
  tv_in "$TV_NS_C" wg set "$TV_WG_C" peer "$TV_G_PUB" remove
  tv_in "$TV_NS_C" wg set "$TV_WG_C" peer "$TV_G_PUB" endpoint $TV_GW_UNDERLAY:$TV_PORT \
      allowed-ips 10.99.0.0/24,fd99::/64,198.19.0.0/24,fd98::/64
  tv_in "$TV_NS_C" ping -c2 -W1 $TV_SRV
}
expect 1 reconnect  # the pings get no answer: alice is refused
run $CTL session alice
run $CTL explain alice
run $CTL refusals
say "the history: flows, refusals, sessions and markers (the audit marker too) in time order"
run $CTL timeline --since 10m
say "retention and a prune: keep flows and refusals for 1 s, then delete what is older"
run $CTL retention show
run $CTL retention set flows=1s refusals=1s
run $CTL prune --dry-run
run $CTL prune
say "Prometheus metrics (MetricsListen = 127.0.0.1:9586; tunnelctl metrics prints the same)"
metrics_lines() {
  tv_in "$TV_NS_G" curl -s http://127.0.0.1:9586/metrics \
    | grep -E '^tunnelvision_(peer_(session_state|refusals_total|receive_bytes_total)|rule_hits_total|drops_total|policy_generation)' \
    | grep -v ' 0$' | sed -n 1,12p  # not head: with pipefail, an early exit would fail grep (SIGPIPE)
}
run metrics_lines
say "operator events tunneld logged (journald fields when run by systemd; stderr here)"
run grep -o 'peer alice.*TUNNELVISION_EVENT=.*' "$TV_DIR/tunneld.log"
say "tearing down"
