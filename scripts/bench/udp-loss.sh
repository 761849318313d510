#!/usr/bin/env bash
# Where small UDP packets are lost, and who spends the CPU: one iperf3 UDP run client -> server
# through the gateway (wireguard-go or tunneld) at an offered rate, then per stage how many packets
# passed or were dropped (client TUN queue, client veth, gateway UDP socket, server UDP socket) and
# the CPU ticks (1/100 s) each process used in the middle of the run.
#   Usage: scripts/bench/udp-loss.sh wggo|tunneld [RATE=400M] [SECONDS=6] [LENGTH=64]
#   IPERF_WINDOW=4M (default; empty = iperf3's default socket buffers). Needs root, release binaries.
set -euo pipefail
cd "$(dirname "$0")/../.."
KIND=${1:?wggo or tunneld}; RATE=${2:-400M}; SECS=${3:-6}; LEN=${4:-64}; WIN=${IPERF_WINDOW-4M}
export PATH=/opt/swift/usr/bin:$PATH
source scripts/lib/topology.sh
TV_ID=$(( $$ % 10000 + 300 ))
TV_NS_C=tvc$TV_ID; TV_NS_G=tvg$TV_ID; TV_NS_S=tvs$TV_ID; TV_WG_C=tvwc$TV_ID; TV_IF_G=tvg$TV_ID
TV_DIR=$(mktemp -d /tmp/tunnelvision-udploss.XXXXXX)
trap tv_cleanup EXIT
tv_topology_up
if [ "$KIND" = wggo ]; then tv_gateway_wggo_up; else tv_tunneld_config bench; tv_gateway_tunneld_up bench; fi
tv_client_up 0
tv_wait_tunnel || { echo "tunnel did not come up"; exit 1; }
tv_spawn "$TV_NS_S" "$TV_DIR/iperf3.log" iperf3 -s; SRV=$TV_LAST_PID; sleep 0.5
ticks() { awk '{print $14+$15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
stat() { awk -v c="$1" '/^cpu /{print $c}' /proc/stat; }   # 5 idle, 8 softirq
udp() { tv_in "$1" awk '/^Udp:/{getline; print $2, $6}' /proc/net/snmp; }   # InDatagrams RcvbufErrors
tv_in "$TV_NS_C" iperf3 -c $TV_SRV -u -l "$LEN" -b "$RATE" -t "$SECS" ${WIN:+-w $WIN} -J >"$TV_DIR/client.json" &
CLI=$!
sleep 1
IPERF_C=$(pgrep -P $CLI -n || echo $CLI)
names=("gateway ($KIND)" "client wireguard-go" "iperf3 client" "iperf3 server")
pids=($TV_GW_PID $TV_WG_C_PID $IPERF_C $SRV)
declare -a t0 t1
for i in 0 1 2 3; do t0[$i]=$(ticks ${pids[$i]}); done
s0=$(stat 8); i0=$(stat 5)
MID=$((SECS - 2)); sleep $MID
for i in 0 1 2 3; do t1[$i]=$(ticks ${pids[$i]}); done
s1=$(stat 8); i1=$(stat 5)
wait $CLI || true
echo "CPU over ${MID} s in the middle of the run ($(nproc) CPUs = $((MID * 100 * $(nproc))) ticks):"
for i in 0 1 2 3; do printf '  %-22s %5d ticks\n' "${names[$i]}" $(( ${t1[$i]} - ${t0[$i]} )); done
printf '  %-22s %5d ticks\n  %-22s %5d ticks\n' "softirq (all)" $((s1 - s0)) "idle" $((i1 - i0))
read -r tun_tx tun_drop < <(tv_in "$TV_NS_C" cat /sys/class/net/$TV_WG_C/statistics/tx_packets /sys/class/net/$TV_WG_C/statistics/tx_dropped | paste -sd' ')
veth_tx=$(tv_in "$TV_NS_C" cat /sys/class/net/vc$TV_ID/statistics/tx_packets)
read -r g_in g_drop < <(udp "$TV_NS_G"); read -r s_in s_drop < <(udp "$TV_NS_S")
python3 - "$TV_DIR/client.json" "$tun_tx" "$tun_drop" "$veth_tx" "$g_in" "$g_drop" "$s_in" "$s_drop" "$RATE" "$LEN" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["end"]["sum"]
tun_tx, tun_drop, veth_tx, g_in, g_drop, s_in, s_drop = map(int, sys.argv[2:9])
print(f"packets (whole run, offered {sys.argv[9]}bit/s of {sys.argv[10]}-byte datagrams):")
print(f"  iperf3 sent            {s['packets']:>9}")
print(f"  client TUN dropped     {tun_drop:>9}   (wireguard-go did not read them in time)")
print(f"  client -> gateway      {veth_tx:>9}   (encrypted datagrams on the client's veth)")
print(f"  gateway socket         {g_in:>9} in, {g_drop} dropped (receive buffer full)")
print(f"  server socket          {s_in:>9} in, {s_drop} dropped (receive buffer full)")
print(f"  received by iperf3     {s['packets'] - s['lost_packets']:>9}   = {(s['packets'] - s['lost_packets']) / s['seconds']:.0f} packets/s")
PY
