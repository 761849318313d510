#!/usr/bin/env bash
# End to end: a real wireguard-go client connects to tunneld, which forwards to a server; all in
# network namespaces made (and removed) here. Needs root. Run by scripts/test.sh.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/topology.sh
source scripts/lib/check.sh
trap tv_cleanup EXIT
CLIENT="tv_in $TV_NS_C python3 scripts/e2e/lib/netclient.py"
CTL="$TV_TUNNELCTL --config $TV_DIR/tunneld.conf"

TV_GRO=on  # the gateway's veths coalesce like a router's NICs: super-packets reach tunneld's TUN
tv_topology_up
tv_tunneld_config e2e
tv_gateway_tunneld_up || { tv_bad "tunneld starts"; tv_summary; exit 1; }
tv_client_up 0
tv_spawn "$TV_NS_S" "$TV_DIR/netserver.log" python3 scripts/e2e/lib/netserver.py >/dev/null
wait_for 5 grep -q ready "$TV_DIR/netserver.log" >/dev/null

echo "gateway: handshake and forwarding"
check "handshake completes and the server answers ping through the tunnel" tv_wait_tunnel
check "ping client -> server over IPv6" tv_in "$TV_NS_C" ping -6 -c2 -W2 $TV_SRV6
check "ping server -> client over IPv4 (inbound ICMP allowed)" tv_in "$TV_NS_S" ping -c2 -W2 $TV_C_TUN
check "ping server -> client over IPv6" tv_in "$TV_NS_S" ping -6 -c2 -W2 $TV_C_TUN6
check_output "100 MiB TCP transfer arrives intact" '^intact' $CLIENT send-sha $TV_SRV 100
check_output "100 MiB TCP transfer server -> client arrives intact" '^intact' $CLIENT recv-sha $TV_SRV 100
v6_both_ways() { $CLIENT send-sha $TV_SRV6 20 && $CLIENT recv-sha $TV_SRV6 20; }
check_output "20 MiB TCP both ways over IPv6 arrives intact" 'intact 20971520 bytes' v6_both_ways
check_output "a burst of 2,000 UDP datagrams comes back intact (IPv4)" '^burst (1[0-9]{3}|2000)/2000 intact, 0 corrupt' \
  $CLIENT udp-burst $TV_SRV 2000
check_output "a burst of 2,000 UDP datagrams comes back intact (IPv6)" '^burst (1[0-9]{3}|2000)/2000 intact, 0 corrupt' \
  $CLIENT udp-burst $TV_SRV6 2000
check_output "TUN offloads are on and used both ways (coalesced writes, split super-packets)" \
  'offloads: TUN csum tso4 tso6( uso4 uso6)?, UDP GSO on, UDP GRO on; [1-9][0-9]* super-packets read, [1-9][0-9]* written' $CTL status
check_output "UDP echo over IPv4" '^echo hello' $CLIENT udp-echo $TV_SRV
check_output "UDP echo over IPv6" '^echo hello' $CLIENT udp-echo $TV_SRV6
check_output "inbound TCP to the client is blocked by 'default in block'" '^timeout' \
  tv_in "$TV_NS_S" python3 scripts/e2e/lib/netclient.py connect $TV_C_TUN 22 2

echo "gateway: policy"
check_output "a 'block' port times out" '^timeout' $CLIENT connect $TV_SRV 7001 3
check_output "a 'reject' port is refused at once (TCP RST)" '^refused 0\.' $CLIENT connect $TV_SRV 7002 3
check_output "a 'reject' port is refused at once over IPv6" '^refused 0\.' $CLIENT connect $TV_SRV6 7002 3
check_output "the block and reject rules have hits" '7002 reason' $CTL policy show

echo "gateway: cryptokey routing"
tv_in "$TV_NS_C" ip addr add 10.99.0.77/32 dev "$TV_WG_C"
tv_in "$TV_NS_C" ping -c3 -W1 -I 10.99.0.77 $TV_SRV >/dev/null 2>&1 && tv_bad "a spoofed inner source must not get through"
check_output "packets with a spoofed inner source are dropped and counted" '"spoofed-source" : [1-9]' $CTL status --json

echo "gateway: reload"
$CLIENT hold $TV_SRV 25 >"$TV_DIR/hold.log" 2>&1 &
HOLD=$!
wait_for 5 grep -q alive "$TV_DIR/hold.log"
check "a long-running connection is open" grep -q alive "$TV_DIR/hold.log"
GEN=$($CTL policy show | sed -n 's/^policy generation \([0-9]*\).*/\1/p')
printf 'block proto tcp port 7004 reason "e2e: cut the long connection"\n' >"$TV_DIR/policies/05-cut.rules"
check_output "policy reload bumps the generation" "generation $((GEN+1))" $CTL policy reload
wait_for 6 grep -q "cut after" "$TV_DIR/hold.log"
check "the reload cuts the open connection at once" grep -q "cut after" "$TV_DIR/hold.log"
kill $HOLD 2>/dev/null; wait $HOLD 2>/dev/null
printf 'blok proto tcp port 9\n' >"$TV_DIR/policies/06-broken.rules"
check_exit "a broken reload fails" 1 $CTL policy reload
check_output "and names file:line:column" '06-broken.rules:1:1' $CTL policy reload
check_output "while the old policy keeps running" "^policy generation $((GEN+1)):" $CTL policy show
check_output "and still rejects" '^refused' $CLIENT connect $TV_SRV 7002 3
rm -f "$TV_DIR/policies/06-broken.rules"

echo "gateway: observability"
check_output "wg show reads the gateway over UAPI (recent handshake)" 'latest handshake: [0-9]+ (second|minute)' tv_in "$TV_NS_G" wg show "$TV_IF_G"
check_output "wg showconf lists the peer" "AllowedIPs = 10.99.0.2/32" tv_in "$TV_NS_G" wg showconf "$TV_IF_G"
check_output "tunnelctl peers shows alice connected" 'alice +premium +connected' $CTL peers
check_output "tunnelctl status shows the interface" "interface $TV_IF_G" $CTL status

echo "gateway: restart"
kill -9 "$TV_GW_PID"; wait "$TV_GW_PID" 2>/dev/null
check_exit "tunnelctl exits 3 while the daemon is down" 3 $CTL status
tv_gateway_tunneld_up || tv_bad "tunneld restarts"
wait_for 45 tv_in "$TV_NS_C" ping -c1 -W1 $TV_SRV
check "after kill -9 and restart the client reconnects by itself" tv_in "$TV_NS_C" ping -c2 -W2 $TV_SRV

tv_summary
