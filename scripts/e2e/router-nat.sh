#!/usr/bin/env bash
# End to end: scripts/router-nat.sh on a router whose forward policy is drop.
#
# The namespaces of scripts/lib/topology.sh, without tunneld: the client's veth stands in for the
# tunnel (10.99.0.2/24, fd99::2/64 on the client; 10.99.0.1/24, fd99::1/64 and MTU 1420 on the
# gateway's end), the server sits on the gateway's LAN veth (the uplink, default route). The
# gateway namespace gets an "operator" table whose forward chain has policy drop, plus one rule
# of the operator's own that must survive. Checked, v4 and v6: nothing passes before `up`; after
# `up` pings and TCP pass, masqueraded to the uplink address, and SYNs are clamped (tcpdump: MSS
# 1380 / 1360 for MTU 1420, both ways); after `down` nothing passes, even with forwarding turned
# back on by hand, forwarding is what it was, the operator's table is as it was; argument errors;
# `install`/`uninstall` into a temporary directory. Every nft and sysctl runs inside the
# namespaces (ip netns exec): the host's ruleset and forwarding are never touched.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ "$(id -u)" -eq 0 ] || { echo "router-nat e2e: needs root (network namespaces)"; exit 1; }
for t in nft tcpdump ip python3 wg; do command -v $t >/dev/null || { echo "router-nat e2e: $t missing (scripts/deps.sh)"; exit 1; }; done
source scripts/lib/topology.sh
trap tv_cleanup EXIT
NAT=$PWD/scripts/router-nat.sh
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
G() { tv_in "$TV_NS_G" "$@"; }
C() { tv_in "$TV_NS_C" "$@"; }
S() { tv_in "$TV_NS_S" "$@"; }
nat() { G "$NAT" "$@" --state "$TV_DIR/nat.state"; }

tv_topology_up
VC=vc$TV_ID VGC=vgc$TV_ID VS=vs$TV_ID VGS=vgs$TV_ID
C ip addr add 10.99.0.2/24 dev $VC
C ip -6 addr add fd99::2/64 dev $VC nodad
G ip addr add 10.99.0.1/24 dev $VGC
G ip -6 addr add fd99::1/64 dev $VGC nodad
G ip link set $VGC mtu 1420                 # the "tunnel" MTU the clamp must follow
C ip route add default via 10.99.0.1
C ip -6 route add default via fd99::1
G sysctl -qw net.ipv4.ip_forward=0 net.ipv6.conf.all.forwarding=0
G nft -f - <<'NFT'
table inet operator {
  chain forward {
    type filter hook forward priority filter; policy drop;
    tcp dport 9999 drop comment "operator's own rule"
  }
}
NFT
operator_before=$(G nft list table inet operator)
# A TCP listener on the server for the SYN/SYN-ACK checks.
tv_spawn "$TV_NS_S" "$TV_DIR/listener.log" python3 -c '
import socket, threading
def serve(fam, addr):
    s = socket.socket(fam, socket.SOCK_STREAM); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if fam == socket.AF_INET6: s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind((addr, 7000)); s.listen(16)
    while True: s.accept()[0].close()
threading.Thread(target=serve, args=(socket.AF_INET6, "::"), daemon=True).start()
serve(socket.AF_INET, "0.0.0.0")'
sleep 0.5

reach4() { C ping -c1 -W1 -q $TV_SRV >/dev/null 2>&1; }
reach6() { C ping -6 -c1 -W1 -q $TV_SRV6 >/dev/null 2>&1; }
connect() { C python3 -c 'import socket,sys; socket.create_connection((sys.argv[1], 7000), timeout=2).close()' "$1" 2>/dev/null; }
not() { ! "$@"; }

# The MSS of the first packet matching FILTER that tcpdump sees in namespace NS on IFACE while
# connecting from the client to ADDR; also leaves the packet's line in $TV_DIR/syn.txt.
mss_seen() {
  local ns=$1 ifc=$2 filter=$3 addr=$4 pid
  rm -f "$TV_DIR/syn.txt"
  ip netns exec "$ns" tcpdump -l -n -v -c 1 -i "$ifc" "$filter" >"$TV_DIR/syn.txt" 2>"$TV_DIR/tcpdump.err" &
  pid=$!
  for _ in $(seq 50); do grep -q "listening on" "$TV_DIR/tcpdump.err" 2>/dev/null && break; sleep 0.1; done
  connect "$addr" || true
  for _ in $(seq 30); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true
  grep -o 'mss [0-9]*' "$TV_DIR/syn.txt" | head -1 | awk '{print $2}' || true
}
has_table() { G nft list table inet tunnelvision >/dev/null 2>&1; }

echo "--- before up: the operator's forward policy drops everything"
check "no v4 before up" not reach4
check "no v6 before up" not reach6

echo "--- argument errors"
out=$(G "$NAT" up --out 2>&1) && bad "up --out without a value succeeded" || { [ $? -eq 2 ] && ok "up --out without a value: exit 2" || bad "up --out without a value: not exit 2"; }
case $out in *"--out needs a value"*) ok "… says '--out needs a value'" ;; *) bad "up --out message: $out" ;; esac
case $out in *unbound*) bad "unbound variable: $out" ;; esac
out=$(G "$NAT" up --subnet 10.99.0/24 --out $VGS 2>&1) && bad "bad subnet accepted" || case $out in *"not an IPv4 CIDR"*) ok "bad --subnet: clear error" ;; *) bad "bad --subnet: $out" ;; esac
out=$(G "$NAT" up --out nosuchif0 2>&1) && bad "unknown --out accepted" || case $out in *"no such interface"*) ok "unknown --out: clear error" ;; *) bad "unknown --out: $out" ;; esac
out=$(G "$NAT" frobnicate 2>&1) && bad "unknown command accepted" || case $out in *"unknown command"*) ok "unknown command: clear error" ;; *) bad "unknown command: $out" ;; esac
out=$(nat up --subnet6 fd99::/64 2>&1) && bad "up without a default route and --out succeeded" || case $out in *"give --out IFACE"*) ok "no default route: asks for --out" ;; *) bad "no default route: $out" ;; esac
check "--help exits 0 and shows the commands" bash -c "'$NAT' --help | grep -q 'router-nat.sh install'"
check "nothing applied by the failed calls" not has_table

echo "--- up (uplink autodetected from the default route)"
G ip route add default via $TV_SRV
G ip -6 route add default via $TV_SRV6
out=$(nat up --subnet 10.99.0.0/24 --subnet6 fd99::/64) || bad "up failed: $out"
echo "$out"
case $out in *"out of $VGS"*"MTU 1420"*) ok "up: uplink $VGS and MTU 1420 detected" ;; *) bad "up: $out" ;; esac
check "MTU not taken from a route via a gateway (subnet not on-link: 1420, not the uplink's 1500)" \
  bash -c "ip netns exec $TV_NS_G '$NAT' print --subnet 10.50.0.0/24 | grep -q 'tunnel MTU 1420'"
check "v4 passes after up" reach4
check "v6 passes after up" reach6
check "tcp v4 passes after up" connect $TV_SRV
check "tcp v6 passes after up" connect $TV_SRV6
check "forwarding on (v4)" test "$(G sysctl -n net.ipv4.ip_forward)" = 1
check "forwarding on (v6)" test "$(G sysctl -n net.ipv6.conf.all.forwarding)" = 1
m=$(mss_seen "$TV_NS_G" $VGC "tcp dst port 7000 and dst host $TV_SRV" $TV_SRV)
check "the client's SYN enters the gateway with MSS 1460 (its link's 1500; got '${m:-none}')" test "$m" = 1460
m=$(mss_seen "$TV_NS_S" $VS "tcp dst port 7000 and src host $TV_GW_LAN" $TV_SRV)
check "v4 SYN reaches the server masqueraded (from $TV_GW_LAN) with MSS clamped to 1380 (got '${m:-none}')" test "$m" = 1380
m=$(mss_seen "$TV_NS_S" $VS "tcp dst port 7000 and src host $TV_GW_LAN6" $TV_SRV6)
check "v6 SYN reaches the server masqueraded (from $TV_GW_LAN6) with MSS clamped to 1360 (got '${m:-none}')" test "$m" = 1360
m=$(mss_seen "$TV_NS_C" $VC "tcp src port 7000 and src host $TV_SRV" $TV_SRV)
check "v4 SYN-ACK toward the tunnel clamped to the route MTU: 1380 (got '${m:-none}')" test "$m" = 1380
m=$(mss_seen "$TV_NS_C" $VC "tcp src port 7000 and src host $TV_SRV6" $TV_SRV6)
check "v6 SYN-ACK toward the tunnel clamped to the route MTU: 1360 (got '${m:-none}')" test "$m" = 1360
check "the operator's own rule is still there" bash -c "ip netns exec $TV_NS_G nft list chain inet operator forward | grep -q \"operator's own rule\""
G "$NAT" up --subnet 10.99.0.0/24 --subnet6 fd99::/64 --state "$TV_DIR/nat.state" >/dev/null
check "up twice: 4 tagged rules in the operator's chain, not 8" test "$(G nft list chain inet operator forward | grep -c tunnelvision-nat)" -eq 4
check "show lists the table and the tagged rules" bash -c "ip netns exec $TV_NS_G '$NAT' show | grep -q 'table inet tunnelvision' && ip netns exec $TV_NS_G '$NAT' show | grep -q tunnelvision-nat"

echo "--- down"
out=$(nat down) || bad "down failed: $out"
echo "$out"
check "v4 blocked after down" not reach4
check "v6 blocked after down" not reach6
check "forwarding restored (v4 = 0)" test "$(G sysctl -n net.ipv4.ip_forward)" = 0
check "forwarding restored (v6 = 0)" test "$(G sysctl -n net.ipv6.conf.all.forwarding)" = 0
check "table inet tunnelvision gone" not has_table
check "the operator's table is exactly as before" test "$(G nft list table inet operator)" = "$operator_before"
G sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
check "with forwarding on by hand, the operator's drop still holds (v4)" not reach4
check "… and v6" not reach6
G sysctl -qw net.ipv4.ip_forward=0 net.ipv6.conf.all.forwarding=0
out=$(nat down); case $out in *"no rules to remove"*) ok "down again: nothing to remove" ;; *) bad "down again: $out" ;; esac

echo "--- --own-table-only: another table's drop policy wins, as nftables defines it"
nat up --subnet 10.99.0.0/24 --own-table-only >/dev/null
check "own table only: the operator's drop still holds" not reach4
nat down >/dev/null

echo "--- install / uninstall into a temporary directory"
ETC=$TV_DIR/etc
FILES=(--dest "$ETC/nftables.d/tunnelvision.nft" --sysctl-dest "$ETC/sysctl.d/90-tunnelvision.conf" --unit-dest "$ETC/systemd/tunnelvision-nat.service")
G "$NAT" install --out $VGS --subnet 10.99.0.0/24 --subnet6 fd99::/64 "${FILES[@]}" >/dev/null 2>"$TV_DIR/install.err"
UNIT=$ETC/systemd/tunnelvision-nat.service
check "install wrote the unit, whose ExecStart is 'up' with the same options" grep -qx "ExecStart=$NAT up --out $VGS --subnet 10.99.0.0/24 --subnet6 fd99::/64 --mtu 1420" "$UNIT"
check "… and whose ExecStop is 'down'" grep -qx "ExecStop=$NAT down --state /run/tunnelvision-nat.state" "$UNIT"
if command -v systemd-analyze >/dev/null; then
  out=$(systemd-analyze verify "$UNIT" 2>&1 | grep -v -e 'nftables.service' -e 'tunneld.service' || true)
  check "systemd-analyze verify accepts the unit${out:+: $out}" test -z "$out"
fi
check "install wrote the ruleset" test -s "$ETC/nftables.d/tunnelvision.nft"
check "install wrote the forwarding settings (v4 and v6)" bash -c "grep -q 'net.ipv4.ip_forward = 1' '$ETC/sysctl.d/90-tunnelvision.conf' && grep -q 'net.ipv6.conf.all.forwarding = 1' '$ETC/sysctl.d/90-tunnelvision.conf'"
check "install named the operator's drop chain and the rules to add there" grep -q "table inet operator, chain forward" "$TV_DIR/install.err"
check "the installed ruleset passes nft -c" G nft -c -f "$ETC/nftables.d/tunnelvision.nft"
G nft -f "$ETC/nftables.d/tunnelvision.nft"; G nft -f "$ETC/nftables.d/tunnelvision.nft"
check "loading it twice leaves one table with one forward chain" test "$(G nft list table inet tunnelvision | grep -c 'chain forward')" -eq 1
G nft delete table inet tunnelvision
G "$NAT" uninstall "${FILES[@]}" >/dev/null
check "uninstall removed the three files" not test -e "$ETC/nftables.d/tunnelvision.nft" -o -e "$ETC/sysctl.d/90-tunnelvision.conf" -o -e "$UNIT"
echo "not ours" >"$ETC/other.nft"
check "uninstall refuses a file it did not write" not G "$NAT" uninstall --dest "$ETC/other.nft" --sysctl-dest "$ETC/none.conf" --unit-dest "$ETC/none.service"
check "… and leaves it" test -e "$ETC/other.nft"

if [ $fails -eq 0 ]; then echo "router-nat e2e: all passed"; else echo "router-nat e2e: $fails failed"; exit 1; fi
