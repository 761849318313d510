#!/usr/bin/env bash
# Router setup around tunneld: IP forwarding and NAT (nftables masquerade) so peers reach the LAN
# and the Internet through the router's uplink. tunneld itself never touches the firewall.
#
#   scripts/router-nat.sh up   --out eth0 [--subnet 10.99.0.0/24] [--subnet6 fd99::/64]
#   scripts/router-nat.sh down
#   scripts/router-nat.sh show
#
# Everything lives in one nftables table, `inet tunnelvision`, so `down` removes exactly it.
set -euo pipefail
TABLE="inet tunnelvision"
cmd=${1:-}; shift || true
OUT=""; SUBNET=10.99.0.0/24; SUBNET6=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --subnet) SUBNET=$2; shift 2 ;;
    --subnet6) SUBNET6=$2; shift 2 ;;
    *) echo "router-nat: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
command -v nft >/dev/null || { echo "router-nat: nft not found; apt-get install nftables" >&2; exit 1; }
case "$cmd" in
  up)
    [ -n "$OUT" ] || { echo "router-nat: --out IFACE (the uplink) is required" >&2; exit 2; }
    sysctl -qw net.ipv4.ip_forward=1
    [ -z "$SUBNET6" ] || sysctl -qw net.ipv6.conf.all.forwarding=1
    nft delete table $TABLE 2>/dev/null || true
    {
      echo "table $TABLE {"
      echo "  chain postrouting {"
      echo "    type nat hook postrouting priority srcnat; policy accept;"
      echo "    ip saddr $SUBNET oifname \"$OUT\" masquerade"
      [ -z "$SUBNET6" ] || echo "    ip6 saddr $SUBNET6 oifname \"$OUT\" masquerade"
      echo "  }"
      echo "}"
    } | nft -f -
    echo "router-nat: forwarding on; $SUBNET${SUBNET6:+ and $SUBNET6} masqueraded out of $OUT"
    ;;
  down) nft delete table $TABLE 2>/dev/null && echo "router-nat: table removed" || echo "router-nat: nothing to remove" ;;
  show) nft list table $TABLE ;;
  *) sed -n '2,9p' "$0" >&2; exit 2 ;;
esac
