#!/usr/bin/env bash
# The main job: a whole TunnelVision gateway in network namespaces made (and removed) here.
#   client ns: a stock wireguard-go + wg client      gateway ns: tunneld      server ns: test services
# Shows traffic passing, a blocked and a rejected flow, `wg show` reading tunneld over UAPI,
# and `tunnelctl status / peers / policy show`, then tears everything down. Needs root.
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
tv_tunneld_config e2e
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
say "tunnelctl asks tunneld why: policy test offline, policy show with live hit counters"
run $CTL policy test "tcp $TV_C_TUN:40000 -> $TV_SRV:7002"
run $CTL policy show
say "the stock wg tool reads tunneld over the WireGuard UAPI"
run tv_in "$TV_NS_G" wg show "$TV_IF_G"
say "tunnelctl status and peers"
run $CTL status
run $CTL peers
say "tearing down"
