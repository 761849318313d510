#!/usr/bin/env bash
# End to end: issue 16's per-peer rate shaping and flow caps in the data path (docs/limits.md).
# alice gets RateUp = RateDown = 10 Mbit/s and MaxFlows = 50 as her own [Peer] keys
# (scripts/e2e/lib/setlimits.py writes them), bob (premium) nothing. Checks: bob holds 500 concurrent TCP flows while alice opens
# hers, alice's 51st concurrent flow is refused (flow-limit counted), bob's 500 all still echo;
# iperf3 TCP each direction (-R for down) reaches 9–10.5 Mbit/s; an iperf3 UDP flood at 50 Mbit/s
# is held to ≤ 10.5 Mbit/s (rate-overflow counted); then tunneld restarts with MaxFlows 50 for
# alice (a fresh flow table) for the flow caps. Needs root and iperf3; ~2 minutes.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/topology.sh
source scripts/lib/check.sh
trap tv_cleanup EXIT
CTL="$TV_TUNNELCTL --config $TV_DIR/tunneld.conf"
BOB_TUN=$TV_BOB_TUN
RATE=${LIMITS_RATE:-10000000}
setlimits() { python3 scripts/e2e/lib/setlimits.py "$TV_DIR/tunneld.conf" "$1"; }

# Mbit/s received in an iperf3 -J run (TCP: the receiver's sum; UDP: what the receiver got).
iperf_mbit() {
  python3 -c 'import json,sys
d=json.load(sys.stdin)["end"]
s=d.get("sum_received") or d.get("sum")
print("%.2f" % (s["bits_per_second"]/1e6))'
}
in_range() { python3 -c "import sys; sys.exit(0 if $2 <= float('$1') <= $3 else 1)"; }
# alice's live flows in the daemon's table (the 'live' rows of `tunnelctl flows --peer alice`).
alice_flows() { $CTL flows --peer alice 2>/dev/null | grep -cE ' alice .* live( |$)' || true; }
drop_count() { $CTL status 2>/dev/null | grep -Eo "$1[^0-9]*[0-9]+" | grep -Eo '[0-9]+$' | head -1; }

tv_topology_up
tv_tunneld_config e2e premium
tv_bob_peer premium
setlimits "alice:rateUp=$RATE,rateDown=$RATE"
tv_gateway_tunneld_up && TV_PIDS+=("$TV_GW_PID") || { tv_bad "tunneld starts"; tv_summary; exit 1; }
tv_client_up 0
TV_PIDS+=("$TV_WG_C_PID")
tv_bob_up
tv_spawn "$TV_NS_S" "$TV_DIR/netserver.log" python3 scripts/e2e/lib/netserver.py >/dev/null
tv_spawn "$TV_NS_S" "$TV_DIR/iperf3.log" iperf3 -s -p 5201 >/dev/null
sleep 0.5

echo "limits: setup"
check "alice's traffic flows" tv_wait_tunnel
check "bob's traffic flows" wait_for 10 tv_in "$TV_NS_C" ping -c2 -W2 -I $BOB_TUN $TV_SRV
check_output "tunnelctl session shows alice's rate from the config" 'rate [0-9.]+ [kMG]bit/s each way' $CTL session alice --json

echo "limits: rate shaping (RateUp = RateDown = $((RATE / 1000000)) Mbit/s for alice)"
LO=$(python3 -c "print($RATE * 0.9 / 1e6)"); HI=$(python3 -c "print($RATE * 1.05 / 1e6)")
UP=$(tv_in "$TV_NS_C" iperf3 -c $TV_SRV -B $TV_C_TUN -t 10 -O 2 -J 2>/dev/null | iperf_mbit)
check "iperf3 TCP up (alice sends) reaches ${LO}–${HI} Mbit/s: $UP" in_range "${UP:-0}" "$LO" "$HI"
DOWN=$(tv_in "$TV_NS_C" iperf3 -c $TV_SRV -B $TV_C_TUN -t 10 -O 2 -R -J 2>/dev/null | iperf_mbit)
check "iperf3 TCP down (-R, alice receives) reaches ${LO}–${HI} Mbit/s: $DOWN" in_range "${DOWN:-0}" "$LO" "$HI"
UDP=$(tv_in "$TV_NS_C" iperf3 -c $TV_SRV -B $TV_C_TUN -u -b 50M -l 1200 -t 5 -J 2>/dev/null | iperf_mbit)
check "iperf3 UDP flood at 50 Mbit/s up is held to ≤ $HI Mbit/s: $UDP" in_range "${UDP:-99}" 0.1 "$HI"
UDPD=$(tv_in "$TV_NS_C" iperf3 -c $TV_SRV -B $TV_C_TUN -u -b 50M -l 1200 -t 5 -R -J 2>/dev/null | iperf_mbit)
check "iperf3 UDP flood at 50 Mbit/s down is held to ≤ $HI Mbit/s: $UDPD" in_range "${UDPD:-99}" 0.1 "$HI"
check_output "tunnelctl status counts rate-overflow-up drops" 'rate-overflow-up' $CTL status
check_output "tunnelctl status counts rate-overflow-down drops" 'rate-overflow-down' $CTL status
BOB=$(tv_in "$TV_NS_C" iperf3 -c $TV_SRV -B $BOB_TUN -t 5 -J 2>/dev/null | iperf_mbit)
check "bob (unshaped) is not held to alice's rate: $BOB Mbit/s" in_range "${BOB:-0}" "$HI" 1e9

# A fresh flow table for the caps (the iperf3 flows above linger in TIME_WAIT), with MaxFlows 50.
kill "$TV_GW_PID"; wait "$TV_GW_PID" 2>/dev/null; rm -f "$TV_DIR/run/control.sock"
setlimits "alice:rateUp=$RATE,rateDown=$RATE,maxFlows=50"
tv_gateway_tunneld_up && TV_PIDS+=("$TV_GW_PID") || { tv_bad "tunneld restarts"; tv_summary; exit 1; }
check "alice reconnects after the restart" wait_for 40 tv_in "$TV_NS_C" ping -c1 -W1 -I $TV_C_TUN $TV_SRV
check "bob reconnects after the restart" wait_for 40 tv_in "$TV_NS_C" ping -c1 -W1 -I $BOB_TUN $TV_SRV
$CTL flows --peer alice 2>&1 | head -5 | sed "s/^/    flows: /"
echo "limits: flow caps (MaxFlows 50 for alice; bob unlimited)"
PRE=$(alice_flows)
tv_spawn "$TV_NS_C" "$TV_DIR/bob-flows.log" python3 scripts/e2e/lib/flowhold.py hold $BOB_TUN $TV_SRV 500 20 >/dev/null
check "bob opens 500 concurrent flows" wait_for 30 grep -q 'connected 500/500' "$TV_DIR/bob-flows.log"
FREE=$((50 - PRE))
ALICE_OUT=$(tv_in "$TV_NS_C" python3 scripts/e2e/lib/flowhold.py open $TV_C_TUN $TV_SRV $((FREE + 1)) 2>&1)
check_output "alice: $FREE new flows connect beside her $PRE live ones (50 in all)" "connected $FREE/$((FREE + 1))" echo "$ALICE_OUT"
check_output "alice: the 51st concurrent flow is refused (times out)" "first failure at $((FREE + 1)) \(timeout\)" echo "$ALICE_OUT"
check_output "tunnelctl status counts flow-limit drops" 'flow-limit' $CTL status
sleep 1.5  # the refusal row goes through the store writer
check_output "tunnelctl refusals records the coalesced flow-limit refusal" 'alice .*flow-limit' $CTL refusals --peer alice
check "bob's 500 flows are all still alive" wait_for 30 grep -q 'alive 500/500' "$TV_DIR/bob-flows.log"
check_output "bob can still open new flows" 'connected 5/5' tv_in "$TV_NS_C" python3 scripts/e2e/lib/flowhold.py open $BOB_TUN $TV_SRV 5
echo "limits: summary up=$UP down=$DOWN udp-up=$UDP udp-down=$UDPD bob=$BOB Mbit/s"
tv_summary
