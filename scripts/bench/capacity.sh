#!/usr/bin/env bash
# Gateway capacity (issue 18): the gateway under test pinned to CPU 0, the load generator
# (`tunnelbench wgload`: real handshakes, pre-encrypted transport from K peers, sendmmsg + UDP GSO)
# and the sink (`tunnelbench sink`, recvmmsg) pinned to CPU 1, so the client is no longer the limit.
# For each gateway (wireguard-go, tunneld with the 1,000-rule bench policy), payload size
# (64 B, 1420 B less headers) and peer count (1, 10, 100): the highest offered rate with <= 1 % loss
# client->server (binary search), the packets/s the sink received there, and the gateway's CPU per
# packet. Then server->client: `tunnelbench blast` plain UDP to the peers' tunnel addresses at
# the same search, counted (and sampled-decrypted) by `wgload --receive`.
#   Usage: scripts/bench/capacity.sh [ROUNDS] [wggo|tunneld|both]     (TV_NO_BUILD=1: use the builds)
#   CAP_SIZES="64 1392" CAP_PEERS="1 10 100" CAP_DIRS="up down" CAP_PROBES=7 override the grid.
# Prints one line per measurement and a table of tunneld / wireguard-go ratios with min..max over
# the rounds. Touches /tmp/tv-quiet while it runs (other engineers' benchmarks wait).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}; WHICH=${2:-both}
export PATH=/opt/swift/usr/bin:$PATH
source scripts/lib/topology.sh
[ -n "${TV_NO_BUILD:-}" ] || { scripts/deps.sh; swift build -c release --product tunneld >/dev/null; swift build -c release --product tunnelbench >/dev/null; }
BENCH=${TV_TUNNELBENCH:-$PWD/.build/release/tunnelbench}
SIZES=${CAP_SIZES:-64 1392}; PEERS=${CAP_PEERS:-1 10 100}; DIRS=${CAP_DIRS:-up down}; PROBES=${CAP_PROBES:-7}
RESULTS=$(mktemp /tmp/tv-capacity.XXXXXX)
touch /tmp/tv-quiet
SINK_PORT=9000

peer_keys() {  # $1 = K: writes $TV_DIR/peers (private key, tunnel address) and the public keys
  local k=$1 i priv
  : >"$TV_DIR/peers"; : >"$TV_DIR/peers.pub"
  for i in $(seq 1 "$k"); do
    priv=$(wg genkey)
    echo "$priv 10.99.$(( 1 + i / 250 )).$(( 1 + i % 250 ))" >>"$TV_DIR/peers"
    echo "$(echo "$priv" | wg pubkey) 10.99.$(( 1 + i / 250 )).$(( 1 + i % 250 ))" >>"$TV_DIR/peers.pub"
  done
}

gateway_up() {  # $1 = wggo | tunneld, with the peers of $TV_DIR/peers.pub
  local kind=$1 pub ip
  if [ "$kind" = wggo ]; then
    tv_gateway_wggo_up
    tv_in "$TV_NS_G" ip addr change $TV_GW_TUN/16 dev "$TV_IF_G" 2>/dev/null || tv_in "$TV_NS_G" ip addr add $TV_GW_TUN/16 dev "$TV_IF_G"
    while read -r pub ip; do tv_in "$TV_NS_G" wg set "$TV_IF_G" peer "$pub" allowed-ips "$ip/32"; done <"$TV_DIR/peers.pub"
  else
    tv_tunneld_config bench
    # Server->client runs are new inbound flows: allow them, as wireguard-go (no policy) does.
    echo "default in allow" >"$TV_DIR/policies/90-capacity.rules"
    sed -i "s|^Address = .*|Address = $TV_GW_TUN/16, $TV_GW_TUN6/64|" "$TV_DIR/tunneld.conf"
    local n=0
    while read -r pub ip; do
      n=$((n + 1)); printf '\n[Peer]\nName = load%d\nPublicKey = %s\nAllowedIPs = %s/32\nTier = premium\n' "$n" "$pub" "$ip" >>"$TV_DIR/tunneld.conf"
    done <"$TV_DIR/peers.pub"
    TUNNELD_HISTORY=off tv_gateway_tunneld_up bench
  fi
  taskset -a -p -c 0 "$TV_GW_PID" >/dev/null
  # The server ns answers for the whole tunnel range through the gateway.
  tv_in "$TV_NS_S" ip route replace 10.99.0.0/16 via $TV_GW_LAN
}

# One client->server probe at RATE pps: prints "OK|LOSS received_pps cpu_us_per_packet".
probe_up() {
  local rate=$1 size=$2 packets c0 c1 sent got
  packets=$(( rate * 2 )); [ $packets -le 1000000 ] || packets=1000000; [ $packets -ge 20000 ] || packets=20000
  tv_in "$TV_NS_S" taskset -c 1 "$BENCH" sink --listen $TV_SRV:$SINK_PORT --seconds 60 --idle 700 >"$TV_DIR/sink.out" &
  local sink=$!
  sleep 0.3
  c0=$(tv_cpu_ticks "$TV_GW_PID")
  tv_in "$TV_NS_C" taskset -c 1 "$BENCH" wgload --gateway $TV_GW_UNDERLAY:$TV_PORT --gateway-key "$TV_G_PUB" --peers "$TV_DIR/peers" \
      --to $TV_SRV:$SINK_PORT --size "$size" --packets $packets --rate "$rate" --seconds 20 >"$TV_DIR/wgload.out"
  wait $sink || true
  c1=$(tv_cpu_ticks "$TV_GW_PID")
  [ -z "${CAP_DEBUG:-}" ] || cat "$TV_DIR/wgload.out" "$TV_DIR/sink.out" >&2
  sent=$(awk '/^wgload: sent/{print $3}' "$TV_DIR/wgload.out"); got=$(awk '/^sink: [0-9]/{print $2}' "$TV_DIR/sink.out")
  python3 - "${sent:-0}" "${got:-0}" "$c0" "$c1" "$(awk '/^sink: [0-9]/{print $(NF-1)}' "$TV_DIR/sink.out")" <<'PY'
import sys
sent, got, c0, c1, pps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5] or 0)
ok = sent > 0 and got >= 0.99 * sent
print("OK" if ok else "LOSS", f"{pps:.0f}", f"{(c1 - c0) / 100 / max(1, got) * 1e6:.3f}")
PY
}

# One server->client probe: blast RATE pps at the peers' tunnel addresses, wgload --receive counts.
probe_down() {
  local rate=$1 size=$2 packets c0 c1 got targets
  packets=$(( rate * 2 )); [ $packets -le 1000000 ] || packets=1000000; [ $packets -ge 20000 ] || packets=20000
  targets=$(awk '{print $2}' "$TV_DIR/peers" | paste -sd,)
  tv_in "$TV_NS_C" taskset -c 1 "$BENCH" wgload --gateway $TV_GW_UNDERLAY:$TV_PORT --gateway-key "$TV_G_PUB" --peers "$TV_DIR/peers" \
      --receive --seconds 120 >"$TV_DIR/wgload.out" &
  local rx=$!
  for _ in $(seq 100); do grep -q "receiving" "$TV_DIR/wgload.out" 2>/dev/null && break; sleep 0.1; done
  c0=$(tv_cpu_ticks "$TV_GW_PID")
  tv_in "$TV_NS_S" taskset -c 1 "$BENCH" blast --to "$targets" --port 9 --size "$size" --packets $packets --rate "$rate" >"$TV_DIR/blast.out"
  wait $rx || true
  c1=$(tv_cpu_ticks "$TV_GW_PID")
  [ -z "${CAP_DEBUG:-}" ] || cat "$TV_DIR/wgload.out" "$TV_DIR/blast.out" >&2
  got=$(awk '/^wgload: received/{print $3}' "$TV_DIR/wgload.out")
  python3 - "$packets" "${got:-0}" "$c0" "$c1" "$(awk '/^wgload: received/{print $(NF-6)}' "$TV_DIR/wgload.out")" <<'PY'
import sys
sent, got, c0, c1 = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
try: pps = float(sys.argv[5])
except ValueError: pps = 0.0
ok = got >= 0.99 * sent
print("OK" if ok else "LOSS", f"{pps:.0f}", f"{(c1 - c0) / 100 / max(1, got) * 1e6:.3f}")
PY
}

search() {  # $1 = up|down $2 = size: binary search for the highest rate with <= 1 % loss
  local dir=$1 size=$2 lo=2000 hi mid best="0 0" r
  hi=$([ "$size" -le 128 ] && echo 1500000 || echo 400000)
  for _ in $(seq "$PROBES"); do
    mid=$(( (lo + hi) / 2 ))
    r=$(probe_$dir $mid "$size")
    if [ "${r%% *}" = OK ]; then lo=$mid; best=${r#* }; else hi=$mid; fi
  done
  echo "$lo $best"
}

run_one() {  # $1 = kind $2 = peers $3 = round
  local kind=$1 k=$2 round=$3 size dir res
  TV_ID=$(( $$ % 10000 + RANDOM % 1000 ))
  TV_NS_C=tvc$TV_ID; TV_NS_G=tvg$TV_ID; TV_NS_S=tvs$TV_ID; TV_WG_C=tvwc$TV_ID; TV_IF_G=tvg$TV_ID
  TV_DIR=$(mktemp -d /tmp/tunnelvision-capacity.XXXXXX)
  trap 'tv_cleanup; rm -f /tmp/tv-quiet' EXIT
  tv_topology_up
  peer_keys "$k"
  gateway_up "$kind"
  for size in $SIZES; do
    for dir in $DIRS; do
      res=$(search "$dir" "$size")
      echo "$kind $k $size $dir $round $res" | tee -a "$RESULTS"
    done
  done
  tv_cleanup; trap - EXIT
}

for round in $(seq "$ROUNDS"); do
  for k in $PEERS; do
    case "$WHICH" in
      both) run_one wggo "$k" "$round"; run_one tunneld "$k" "$round" ;;
      *) run_one "$WHICH" "$k" "$round" ;;
    esac
  done
done
rm -f /tmp/tv-quiet
python3 - "$RESULTS" <<'PY'
import sys, collections
rows = collections.defaultdict(list)  # (kind, peers, size, dir) -> [(rate, pps, cpu)]
for l in open(sys.argv[1]):
    kind, k, size, d, rnd, rate, pps, cpu = l.split()
    rows[(kind, int(k), int(size), d)].append((float(rate), float(pps), float(cpu)))
print(f"{'peers':>5} {'payload':>7} {'dir':>4} {'wireguard-go pps':>18} {'tunneld pps':>18} {'ratio (min..max)':>18} {'CPU us/pkt wg-go/tunneld':>26}")
for (kind, k, size, d) in sorted(x for x in rows if x[0] == "tunneld"):
    t = rows[(kind, k, size, d)]; w = rows.get(("wggo", k, size, d), [])
    tp = [r[1] for r in t]; wp = [r[1] for r in w]
    med = lambda v: sorted(v)[len(v) // 2] if v else 0
    ratio = f"{med(tp)/med(wp):.2f} ({min(tp)/max(wp):.2f}..{max(tp)/min(wp):.2f})" if wp and min(wp) > 0 else "-"
    cpu = f"{med([r[2] for r in w]):.2f} / {med([r[2] for r in t]):.2f}" if w else f"- / {med([r[2] for r in t]):.2f}"
    print(f"{k:5d} {size:7d} {d:>4} {med(wp):18.0f} {med(tp):18.0f} {ratio:>18} {cpu:>26}")
PY
rm -f "$RESULTS"
