#!/usr/bin/env bash
# Benchmark (numbers, not assertions): issue 16's rate shaping through the tunnel.
#  1. accuracy: alice shaped to 1, 10, 100 Mbit/s (RateUp = RateDown), iperf3 TCP up and down,
#     RUNS runs each: achieved / configured;
#  2. cost: TCP throughput of bob (unshaped) with alice and 100 idle configured peers shaped, vs no
#     limits configured, same run (tunneld restarted between the two).
# Limits are the peers' own [Peer] keys, written by scripts/e2e/lib/setlimits.py before each start.
# Needs root, iperf3 and a release build. ~4 minutes with RUNS=3.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/topology.sh
source scripts/lib/check.sh
RUNS=${RUNS:-3}
RATES=${RATES:-"1000000 10000000 100000000"}
trap tv_cleanup EXIT
BOB_TUN=$TV_BOB_TUN
mbit() { python3 -c 'import json,sys
d=json.load(sys.stdin)["end"]; s=d.get("sum_received") or d.get("sum"); print("%.3f" % (s["bits_per_second"]/1e6))'; }

tv_topology_up
tv_tunneld_config e2e premium
tv_bob_peer premium
IDLE=""
for i in $(seq 1 100); do
  printf '\n[Peer]\nName = idle%d\nPublicKey = %s\nAllowedIPs = 10.98.%d.%d/32\nTier = premium\n' \
    "$i" "$(wg genkey | wg pubkey)" $((i / 250)) $((i % 250 + 1)) >>"$TV_DIR/tunneld.conf"
  IDLE="$IDLE;idle$i:rate=10000000"
done
restart() {
  [ -n "${TV_GW_PID:-}" ] && { kill "$TV_GW_PID"; wait "$TV_GW_PID" 2>/dev/null; rm -f "$TV_DIR/run/control.sock"; }
  python3 scripts/e2e/lib/setlimits.py "$TV_DIR/tunneld.conf" "$1" && tv_gateway_tunneld_up && TV_PIDS+=("$TV_GW_PID")
  sleep 1
}
restart "" || exit 1
tv_client_up 0; TV_PIDS+=("$TV_WG_C_PID")
tv_bob_up 1
tv_in "$TV_NS_C" wg set "$TV_WG_C" peer "$TV_G_PUB" persistent-keepalive 1
tv_spawn "$TV_NS_S" "$TV_DIR/iperf3.log" iperf3 -s -p 5201 >/dev/null
tv_wait_tunnel >/dev/null 2>&1
iperf() { tv_in "$TV_NS_C" iperf3 -c $TV_SRV -B "$1" -t "${T:-8}" -O 2 -J ${2:-} 2>/dev/null | mbit; }

echo "shaping bench: accuracy (achieved / configured, TCP, $RUNS runs)"
for rate in $RATES; do
  restart "alice:rate=$rate" || exit 1
  wait_for 20 tv_in "$TV_NS_C" ping -c1 -W1 -I $TV_C_TUN $TV_SRV >/dev/null
  for dir in up down; do
    vals=""
    for _ in $(seq "$RUNS"); do
      v=$(iperf $TV_C_TUN "$([ $dir = down ] && echo -R)")
      vals="$vals ${v:-0}"
    done
    python3 -c "import sys
r=$rate/1e6; v=[float(x)/r for x in '$vals'.split()]
print('  %6.0f Mbit/s %-4s ratio mean %.3f min %.3f max %.3f  (Mbit/s:%s)' % (r, '$dir', sum(v)/len(v), min(v), max(v), '$vals'))"
  done
done

echo "shaping bench: unshaped peer (bob) with alice + 100 peers shaped vs no limits"
for mode in none shaped none shaped; do
  if [ $mode = none ]; then restart "" || exit 1; else restart "alice:rate=10000000$IDLE" || exit 1; fi
  wait_for 20 tv_in "$TV_NS_C" ping -c1 -W1 -I $BOB_TUN $TV_SRV >/dev/null
  v=$(T=10 iperf $BOB_TUN)
  echo "  bob TCP up, limits $mode: ${v:-0} Mbit/s"
done
echo "shaping bench: done"
