#!/usr/bin/env bash
# Gateway benchmark: the same namespace topology run once with wireguard-go as the gateway and once
# with tunneld (1,000-rule policy), the client always wireguard-go. Prints iperf3 TCP both ways,
# UDP 64-byte packets/s received (offered 400 Mbit/s, and the highest rate with <= 1 % loss), ping latency and the gateway's CPU per packet and per gigabit,
# each with the ratio tunneld / wireguard-go.   Usage: scripts/bench/gateway.sh [SECONDS] [wggo|tunneld|both]
# CPU per packet divides the gateway's CPU time by the packets the client's wireguard-go interface
# sent and received during the TCP client->server test: one per packet carried, whatever either
# gateway does with offloads (a coalesced super-packet counts as the segments it carries).
# TV_GRO=on: generic receive offload on the gateway's veths (as a router's NICs have by default).
# TUNNELD_OFFLOAD=off: tunneld without TUN offloads and UDP GSO.
# TV_BENCH_PPS_SEARCH=off skips the loss-bounded rate search (about 30 s per gateway).
# TV_BENCH_CAPTURE=full|metadata: tunneld captures every packet at that detail (tunnelctl capture on).
# TV_CLIENT=tunneld: the client is tunneld (tv_client_tunneld_up) for both gateways, so TCP is not
# capped by wireguard-go's client (issue 18); CPU per packet is then not reported (tunneld's TUN
# counts offloaded super-packets, not segments), CPU per gigabit is.
# TV_PIN=1: the gateway's threads on CPU 0, the client and iperf3 (both ends) on CPU 1.
# TV_BENCH_WATCH=view|json|lines: a `tunnelctl watch` consumer is attached to the live ring for the
# whole run (view: the refreshing terminal view, output to /dev/null; json/lines: one line per record).
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS=${1:-8}; WHICH=${2:-both}
export PATH=/opt/swift/usr/bin:$PATH
source scripts/lib/topology.sh
[ "$WHICH" = wggo ] || [ -n "${TV_NO_BUILD:-}" ] || { scripts/deps.sh; swift build -c release --product tunneld >/dev/null; swift build -c release --product tunnelctl >/dev/null; }
RESULTS=$(mktemp /tmp/tv-bench.XXXXXX)

run_one() {  # $1 = wggo | tunneld
  local kind=$1
  TV_ID=$(( $$ % 10000 + RANDOM % 1000 ))
  TV_NS_C=tvc$TV_ID; TV_NS_G=tvg$TV_ID; TV_NS_S=tvs$TV_ID; TV_WG_C=tvwc$TV_ID; TV_IF_G=tvg$TV_ID
  TV_DIR=$(mktemp -d /tmp/tunnelvision-bench.XXXXXX)
  trap tv_cleanup EXIT
  tv_topology_up
  if [ "$kind" = wggo ]; then tv_gateway_wggo_up; else
    tv_tunneld_config bench
    if [ -n "${TV_BENCH_CAPTURE:-}" ]; then
      "$TV_TUNNELCTL" --config "$TV_DIR/tunneld.conf" capture on --detail "$TV_BENCH_CAPTURE" >/dev/null
    fi
    tv_gateway_tunneld_up bench
    if [ -n "${TV_BENCH_WATCH:-}" ]; then
      "$TV_TUNNELCTL" --config "$TV_DIR/tunneld.conf" watch --"$TV_BENCH_WATCH" >/dev/null 2>&1 &
      TV_WATCH_PID=$!; TV_PIDS+=($TV_WATCH_PID)
    fi
  fi
  local client=${TV_CLIENT:-wggo} pin=${TV_PIN:+1} on1=
  [ -z "$pin" ] || { taskset -a -p -c 0 "$TV_GW_PID" >/dev/null; on1="taskset -c 1"; }
  if [ "$client" = tunneld ]; then tv_client_tunneld_up ${pin:+1}; else
    tv_client_up 0
    [ -z "$pin" ] || taskset -a -p -c 1 "$TV_WG_C_PID" >/dev/null
  fi
  tv_wait_tunnel || { echo "tunnel did not come up ($kind)"; tail -n 20 "$TV_DIR"/*.log; exit 1; }
  tv_spawn "$TV_NS_S" "$TV_DIR/iperf3.log" $on1 iperf3 -s >/dev/null; sleep 0.5
  local gp=$TV_GW_PID
  local c0 c1 fwd up down pps lat cpupkt cpugbit
  local pk0 pk1
  pkts() { tv_in "$TV_NS_C" cat /sys/class/net/$TV_WG_C/statistics/rx_packets /sys/class/net/$TV_WG_C/statistics/tx_packets | paste -sd+ | bc; }
  c0=$(tv_cpu_ticks "$gp"); pk0=$(pkts)
  up=$(tv_in "$TV_NS_C" $on1 iperf3 -c $TV_SRV -t "$SECS" -J | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9)')
  c1=$(tv_cpu_ticks "$gp"); pk1=$(pkts)
  cpupkt=$(python3 -c "print(($c1-$c0)/100/max(1,$pk1-$pk0)*1e6)")      # µs of gateway CPU per packet
  [ "$client" = wggo ] || cpupkt=nan
  cpugbit=$(python3 -c "print(($c1-$c0)/100/max(1e-9,$up*$SECS))")       # CPU seconds per gigabit carried
  down=$(tv_in "$TV_NS_C" $on1 iperf3 -c $TV_SRV -t "$SECS" -R -J | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9)')
  # UDP runs give iperf3's own sockets 4 MiB buffers (-w; both ends): with the default 208 KiB the
  # server's socket, not the gateway, overflows first. TV_BENCH_UDP_WINDOW= (empty) restores it.
  local w=${TV_BENCH_UDP_WINDOW-4M}
  pps=$(tv_in "$TV_NS_C" $on1 iperf3 -c $TV_SRV -u -l 64 -b 400M ${w:+-w $w} -t "$SECS" -J | python3 -c '
import json,sys; e=json.load(sys.stdin)["end"]; s=e["sum"]; print((s["packets"]-s["lost_packets"])/s["seconds"])')
  # RFC 2544-style throughput: the highest offered 64-byte rate with at most 1 % loss end to end
  # (binary search, 3 s per probe), reported as the packets/s received at that rate.
  local lo=5000 hi=300000 mid best=0 r probes=7
  [ "${TV_BENCH_PPS_SEARCH:-on}" = on ] || { probes=0; best=nan; }
  for _ in $(seq $probes); do
    mid=$(( (lo + hi) / 2 ))
    r=$(tv_in "$TV_NS_C" $on1 iperf3 -c $TV_SRV -u -l 64 -b $((mid * 512)) ${w:+-w $w} -t 3 -J | python3 -c '
import json,sys; s=json.load(sys.stdin)["end"]["sum"]; print(s["lost_packets"] <= 0.01*max(1,s["packets"]), (s["packets"]-s["lost_packets"])/s["seconds"])')
    if [ "${r%% *}" = True ]; then lo=$mid; best=${r#* }; else hi=$mid; fi
  done
  lat=$(tv_in "$TV_NS_C" ping -c 200 -i 0.005 -q $TV_SRV | awk -F/ '/rtt/{print $5}')
  echo "$kind $up $down $pps $best $lat $cpupkt $cpugbit" >>"$RESULTS"
  if [ -n "${TV_WATCH_PID:-}" ]; then
    echo "watcher CPU over the whole run: $(python3 -c "print($(tv_cpu_ticks $TV_WATCH_PID)/100)") s" >&2; TV_WATCH_PID=
  fi
  if [ "$kind" = tunneld ] && [ -n "${TV_BENCH_CAPTURE:-}" ]; then
    echo "capture: $(du -sh "$TV_DIR/state/capture" | cut -f1) in $(ls "$TV_DIR/state/capture" | grep -c pcap) file(s)" >&2
  fi
  tv_cleanup; trap - EXIT
}

case "$WHICH" in
  both) run_one wggo; run_one tunneld ;;
  *) run_one "$WHICH" ;;
esac
python3 - "$RESULTS" <<'PY'
import sys
rows = {l.split()[0]: [None if v == "nan" else float(v) for v in l.split()[1:]] for l in open(sys.argv[1])}
names = ["TCP client->server Gbit/s", "TCP server->client Gbit/s", "UDP 64B pps received",
         "UDP 64B pps at <=1% loss", "ping avg ms", "gateway CPU us/packet", "gateway CPU s/Gbit"]
print(f"{'metric':28} {'wireguard-go':>14} {'tunneld':>14} {'ratio':>8}")
for i, n in enumerate(names):
    w = rows.get("wggo", [None]*7)[i]; t = rows.get("tunneld", [None]*7)[i]
    fmt = lambda v: f"{'-':>14}" if v is None else f"{v:14.4g}"
    r = f"{t/w:8.2f}" if (w and t) else "       -"
    print(f"{n:28} {fmt(w)} {fmt(t)} {r}")
PY
rm -f "$RESULTS"
