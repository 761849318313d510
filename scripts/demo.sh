#!/usr/bin/env bash
# The main job: a whole TunnelVision gateway in network namespaces made (and removed) here.
#   client ns: a stock wireguard-go + wg client      gateway ns: tunneld      server ns: test services
# Shows traffic passing, a blocked and a rejected flow explained, `wg show` reading tunneld over
# UAPI, `tunnelctl status / peers / policy show`, a free-tier session with its remaining time
# ending and the pause that follows, the history in a timeline, and a prune; then tears
# everything down. Needs root.
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
run() { printf '$ %s\n' "$*"; "$@" 2>&1 | sed 's/^/  /' || true; }

say "namespaces: client $TV_NS_C, gateway $TV_NS_G, server $TV_NS_S"
tv_topology_up
# alice is on the free tier with a short window, so the demo shows it ending.
TV_FREE_SESSION=25s TV_FREE_PAUSE=40s TV_WATCHDOG=1s tv_tunneld_config e2e free
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
run $CLIENT connect $TV_SRV 7001 3
run $CLIENT connect $TV_SRV 7002 3
say "tunnelctl asks why: policy test offline (peer and tier from the config), explain with the history"
run $CTL policy test --config $TV_DIR/tunneld.conf "tcp $TV_C_TUN:40000 -> $TV_SRV:7002"
run $CTL explain "tcp $TV_C_TUN:40000 -> $TV_SRV:7001"
run $CTL policy show
say "the stock wg tool reads tunneld over the WireGuard UAPI"
run tv_in "$TV_NS_G" wg show "$TV_IF_G"
say "tunnelctl status and peers"
run $CTL status
run $CTL peers
say "alice is on the free tier: her session window, and what is left of it"
run $CTL session alice
run $CTL audit mark "demo: waiting for alice's window to end"
# Wait until the window has ended (the watchdog ticks every second).
until=$($CTL session alice --json 2>/dev/null | python3 -c 'import json,sys,datetime
a=json.load(sys.stdin).get("allowedUntil"); print(datetime.datetime.fromisoformat(a.replace("Z","+00:00")).timestamp() if a else 0)')
wait=$(python3 -c "import time; print(max(0.0, $until - time.time()) + 2.5)")
printf '  (waiting %.0f s for the window to end)\n' "$wait"; sleep "$wait"
say "the window has ended: alice is refused during her pause"
run tv_in "$TV_NS_C" ping -c2 -W1 $TV_SRV
run $CTL session alice
run $CTL explain alice
say "the history: flows, refusals, sessions and markers in time order"
run $CTL timeline --since 10m
say "retention and a prune: keep flows and refusals for 1 s, then delete what is older"
run $CTL retention set flows=1s refusals=1s
run $CTL prune --dry-run
run $CTL prune
say "tearing down"
