#!/bin/bash
# Interop with a real wireguard-go (root; network namespace made and removed here).
# Builds Interop.swift against Sources/WireGuard, then: (1) we initiate and ping 10.99.0.1 three times
# through wireguard-go; (2) wireguard-go initiates (ping 10.99.0.2) and we answer. Exit 0 when both pass.
set -u
ROOT=$(cd "$(dirname "$0")/../../../.." && pwd)
export PATH=/opt/swift/usr/bin:$PATH
NS=wgi$$
TMP=$(mktemp -d)
cleanup() {
    ip netns pids $NS 2>/dev/null | xargs -r kill 2>/dev/null
    ip netns del $NS 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM
cd "$TMP"
FL="-parse-as-library -O -wmo"
swiftc $FL -module-name Packet -emit-module -emit-module-path Packet.swiftmodule -c "$ROOT"/Sources/Packet/*.swift -o Packet.o
swiftc $FL -module-name WireGuard -I . -I "$ROOT/Sources/CSodium" -I "$ROOT/Sources/CBlake2" -emit-module \
    -emit-module-path WireGuard.swiftmodule -c "$ROOT"/Sources/WireGuard/*.swift -o WireGuard.o
swiftc -O -I . -I "$ROOT/Sources/CSodium" -I "$ROOT/Sources/CBlake2" "$ROOT/Tests/WireGuardTests/vectors/interop/Interop.swift" \
    Packet.o WireGuard.o -lsodium -lb2 -o interop
ip netns add $NS
ip -n $NS link set lo up
WGPRIV=$(wg genkey); WGPUB=$(echo "$WGPRIV" | wg pubkey)
MYPRIV=$(wg genkey); MYPUB=$(echo "$MYPRIV" | wg pubkey)
ip netns exec $NS env WG_PROCESS_FOREGROUND=1 wireguard-go wgt0 > "$TMP/wireguard-go.log" 2>&1 &
sleep 1
echo "$WGPRIV" > "$TMP/key"
ip netns exec $NS wg set wgt0 private-key "$TMP/key" listen-port 51820 peer "$MYPUB" allowed-ips 10.99.0.2/32 endpoint 127.0.0.1:51821
ip -n $NS addr add 10.99.0.1/24 dev wgt0
ip -n $NS link set wgt0 up
echo "== we initiate"
ip netns exec $NS ./interop "$MYPRIV" "$WGPUB" initiate; R1=$?
echo "== wireguard-go initiates"
ip netns exec $NS wg set wgt0 peer "$MYPUB" remove
ip netns exec $NS wg set wgt0 peer "$MYPUB" allowed-ips 10.99.0.2/32 endpoint 127.0.0.1:51821
ip netns exec $NS ./interop "$MYPRIV" "$WGPUB" respond & P=$!
sleep 0.5
ip netns exec $NS ping -c 3 -i 0.3 -W 2 10.99.0.2 > /dev/null
wait $P; R2=$?
echo "results: initiate=$R1 respond=$R2"
[ $R1 -eq 0 ] && [ $R2 -eq 0 ]
