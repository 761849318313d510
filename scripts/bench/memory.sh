#!/usr/bin/env bash
# tunneld's resident memory with 100 peers configured and 10,000 active flows (issue bar: ≤ 50 MB).
# One real wireguard-go client (peer alice) opens 10,000 UDP flows through the gateway; the other
# 99 peers are configured with generated keys. Prints VmRSS/VmHWM before and after, and the flow count.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/opt/swift/usr/bin:$PATH
[ -n "${TV_NO_BUILD:-}" ] || { scripts/deps.sh; swift build -c release --product tunneld >/dev/null; swift build -c release --product tunnelctl >/dev/null; }
source scripts/lib/topology.sh
trap tv_cleanup EXIT
tv_topology_up
tv_tunneld_config bench
for i in $(seq 3 101); do
  printf '\n[Peer]\nName = peer%03d\nPublicKey = %s\nAllowedIPs = 10.98.%d.%d/32\nTier = free\n' \
    "$i" "$(wg genkey | wg pubkey)" $((i / 250)) $((i % 250 + 1)) >>"$TV_DIR/tunneld.conf"
done
tv_gateway_tunneld_up
tv_client_up 0
tv_wait_tunnel
rss() { awk '/^(VmRSS|VmHWM)/{printf "%s %s kB  ", $1, $2}' "/proc/$TV_GW_PID/status"; echo; }
echo "tunneld with $(grep -c '^\[Peer\]' "$TV_DIR/tunneld.conf") peers configured, idle:"; rss
tv_in "$TV_NS_C" python3 - "$TV_SRV" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for port in range(20000, 30000):
    s.sendto(b"x", (sys.argv[1], port))
    if port % 200 == 0: time.sleep(0.02)   # let the client's wireguard-go keep up
PY
sleep 1
echo "after 10,000 UDP flows:"; rss
$TV_TUNNELCTL --config "$TV_DIR/tunneld.conf" status | grep -E "flows|peers"
