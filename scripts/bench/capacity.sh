#!/usr/bin/env bash
# Gateway capacity (issue 18): the gateway under test pinned to CPU 0, the load generator
# (`tunnelbench wgload`: real handshakes, pre-encrypted transport from K peers, sendmmsg + UDP GSO)
# and the sink (`tunnelbench sink`, recvmmsg) pinned to CPU 1, so the client is no longer the limit.
# For each gateway (wireguard-go, tunneld with the 1,000-rule bench policy), payload size
# (64 B, 1420 B less headers) and peer count (1, 10, 100): the highest offered rate with <= 1 % loss
# client->server (doubling, then bisection), the packets/s the sink received there, the gateway's CPU per
# packet. Then server->client: `tunnelbench blast` plain UDP to the peers' tunnel addresses at
# the same search, counted (and sampled-decrypted) by `wgload --receive`. Both generators send
# CAP_BURST (default 64) consecutive datagrams of one peer before the next peer's, as senders'
# GSO and a router NIC's GRO hand the stack trains per flow (blast: one UDP GSO send each), with
# inner datagrams as Linux writes them (UDP checksum, IPv4 ID counting per flow). CAP_BURST=1 is
# strict round robin: no two consecutive datagrams of one flow, so neither gateway nor kernel can
# merge any (server->client, every datagram is then its own skb and blast's CPU, which also runs
# the server namespace's forwarding, is the limit at about 190 kpps).
#   Usage: scripts/bench/capacity.sh [ROUNDS] [wggo|tunneld|both]     (TV_NO_BUILD=1: use the builds)
#   CAP_SIZES="64 1392" CAP_PEERS="1 10 100" CAP_DIRS="up down" CAP_PROBES=6 CAP_START=32000
#   CAP_MAX=4000000 override the grid and the search; CAP_DEBUG=1 prints every probe on stderr.
#   CAP_FROM=LOG: no measuring, the table of a saved run's output (its per-measurement lines).
#   CAP_PERF=DIR: `perf record -g` of the gateway's CPU 0 (process, syscalls and softirq) during
#   every probe, into DIR/KIND-DIR-SIZE-RATE.data (then: perf report -i FILE --no-children).
# Prints one line per measurement and a table of tunneld / wireguard-go ratios with min..max over
# the rounds. Touches /tmp/tv-quiet while it runs (other engineers' benchmarks wait).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}; WHICH=${2:-both}
export PATH=/opt/swift/usr/bin:$PATH
source scripts/lib/topology.sh
[ -n "${TV_NO_BUILD:-}" ] || { scripts/deps.sh; swift build -c release --product tunneld >/dev/null; swift build -c release --product tunnelbench >/dev/null; }
BENCH=${TV_TUNNELBENCH:-$PWD/.build/release/tunnelbench}
SIZES=${CAP_SIZES:-64 1392}; PEERS=${CAP_PEERS:-1 10 100}; DIRS=${CAP_DIRS:-up down}; PROBES=${CAP_PROBES:-6}
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

perf_start() {  # $1 = dir $2 = size $3 = rate
  [ -n "${CAP_PERF:-}" ] || return 0
  mkdir -p "$CAP_PERF"
  perf record -q -C 0 -g -o "$CAP_PERF/$KIND-$1-$2-$3.data" >/dev/null 2>&1 &
  PERF_PID=$!; sleep 0.3
}
perf_stop() { [ -z "${PERF_PID:-}" ] || { kill -INT "$PERF_PID"; wait "$PERF_PID" 2>/dev/null || true; PERF_PID=; }; }

# One client->server probe at RATE pps: prints "OK|LOSS received_pps cpu_us_per_packet".
probe_up() {
  local rate=$1 size=$2 packets c0 c1 sent got
  packets=$(( rate * 2 )); [ $packets -le 1000000 ] || packets=1000000; [ $packets -ge 20000 ] || packets=20000
  tv_in "$TV_NS_S" taskset -c 1 "$BENCH" sink --listen $TV_SRV:$SINK_PORT --seconds 60 --idle 700 >"$TV_DIR/sink.out" &
  local sink=$!
  sleep 0.3
  perf_start up "$size" "$rate"
  c0=$(tv_cpu_ticks "$TV_GW_PID")
  tv_in "$TV_NS_C" taskset -c 1 "$BENCH" wgload --gateway $TV_GW_UNDERLAY:$TV_PORT --gateway-key "$TV_G_PUB" --peers "$TV_DIR/peers" \
      --to $TV_SRV:$SINK_PORT --size "$size" --packets $packets --rate "$rate" --seconds 20 \
      --burst "${CAP_BURST:-64}" >"$TV_DIR/wgload.out"
  wait $sink || true
  c1=$(tv_cpu_ticks "$TV_GW_PID"); perf_stop
  [ -z "${CAP_DEBUG:-}" ] || cat "$TV_DIR/wgload.out" "$TV_DIR/sink.out" >&2
  sent=$(awk '/^wgload: sent/{print $3}' "$TV_DIR/wgload.out"); got=$(awk '/^sink: [0-9]/{print $2}' "$TV_DIR/sink.out")
  verdict "$rate" "$(awk '/^wgload: sent/{print $9}' "$TV_DIR/wgload.out")" "${sent:-0}" "${got:-0}" "$c0" "$c1" \
    "$(awk '/^sink: [0-9]/{print $(NF-1)}' "$TV_DIR/sink.out")"
}

# verdict TARGET OFFERED_PPS SENT GOT CPU0 CPU1 RECEIVED_PPS: "OK|LOSS|GEN received_pps cpu_us_per_packet".
# LOSS: the gateway lost > 1 % of what the generator sent. GEN: nothing lost, but the generator
# offered < 95 % of the target, so the probe says nothing about the target rate (the generator, not
# the gateway, is the limit there). OK: the target was offered and <= 1 % lost.
verdict() {
  python3 - "$@" <<'PY'
import sys
target, sent, got, c0, c1 = float(sys.argv[1]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
def num(v):
    try: return float(v)
    except ValueError: return 0.0
offered, pps = num(sys.argv[2]), num(sys.argv[7])
v = "LOSS" if sent <= 0 or got < 0.99 * sent else ("GEN" if offered < 0.95 * target else "OK")
print(v, f"{pps:.0f}", f"{(c1 - c0) / 100 / max(1, got) * 1e6:.3f}")
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
  perf_start down "$size" "$rate"
  c0=$(tv_cpu_ticks "$TV_GW_PID")
  tv_in "$TV_NS_S" taskset -c 1 "$BENCH" blast --to "$targets" --port 9 --size "$size" --packets $packets --rate "$rate" \
      --burst "${CAP_BURST:-64}" >"$TV_DIR/blast.out"
  wait $rx || true
  c1=$(tv_cpu_ticks "$TV_GW_PID"); perf_stop
  [ -z "${CAP_DEBUG:-}" ] || cat "$TV_DIR/wgload.out" "$TV_DIR/blast.out" >&2
  got=$(awk '/^wgload: received/{print $3}' "$TV_DIR/wgload.out")
  verdict "$rate" "$(awk '/^blast: sent/{print $(NF-1)}' "$TV_DIR/blast.out")" "$packets" "${got:-0}" "$c0" "$c1" \
    "$(awk '/^wgload: received/{print $(NF-6)}' "$TV_DIR/wgload.out")"
}

# search DIR SIZE: the highest rate with <= 1 % loss. Doubling from CAP_START pps brackets it (the
# first LOSS), then PROBES bisection steps narrow the bracket to 1/2^PROBES of it (6: 1.6 %).
# Prints "RATE received_pps cpu_us_per_packet FLAG"; FLAG "gen" when the generator could not offer
# a rate the gateway had not yet failed at (the figure is then a floor: the gateway carries at least
# that much), "max" when the doubling reached CAP_MAX without a loss, else "-".
search() {
  local dir=$1 size=$2 lo=0 hi=0 rate=${CAP_START:-32000} best="0 0" flag=- r v mid t0
  while :; do
    t0=$(date +%s.%N); r=$(probe_$dir $rate "$size"); v=${r%% *}
    [ -z "${CAP_DEBUG:-}" ] || echo "  probe $dir $size $rate: $r ($(echo "$(date +%s.%N) - $t0" | bc) s)" >&2
    case $v in
      OK) lo=$rate; best=${r#* }; rate=$(( rate * 2 ))
          if [ $rate -gt "${CAP_MAX:-4000000}" ]; then flag=max; break; fi ;;
      LOSS) hi=$rate; break ;;
      *) [ $lo -gt 0 ] || best=${r#* }; flag=gen; break ;;
    esac
  done
  if [ "$flag" = - ]; then
    for _ in $(seq "$PROBES"); do
      mid=$(( (lo + hi) / 2 ))
      t0=$(date +%s.%N); r=$(probe_$dir $mid "$size"); v=${r%% *}
      [ -z "${CAP_DEBUG:-}" ] || echo "  probe $dir $size $mid: $r ($(echo "$(date +%s.%N) - $t0" | bc) s)" >&2
      case $v in
        OK) lo=$mid; best=${r#* } ;;
        LOSS) hi=$mid ;;
        *) flag=gen; break ;;
      esac
    done
  fi
  echo "$lo $best $flag"
}

run_one() {  # $1 = kind $2 = peers $3 = round
  local kind=$1 k=$2 round=$3 size dir res
  KIND=$kind
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

if [ -n "${CAP_FROM:-}" ]; then cp "$CAP_FROM" "$RESULTS"; ROUNDS=0; fi  # only the table, from a saved run's output
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
rows = collections.defaultdict(list)  # (kind, peers, size, dir) -> [(rate, pps, cpu, flag)]
for l in open(sys.argv[1]):
    f = l.split()
    if len(f) != 9 or f[0] not in ("wggo", "tunneld") or not f[1].isdigit(): continue  # a CAP_FROM log's other lines
    kind, k, size, d, rnd, rate, pps, cpu, flag = f
    rows[(kind, int(k), int(size), d)].append((float(rate), float(pps), float(cpu), flag, int(rnd)))
med = lambda v: sorted(v)[len(v) // 2] if v else 0
def fig(rs):  # median received pps, "≥" when any round was a floor (generator-bound or CAP_MAX)
    return ("≥" if any(r[3] != "-" for r in rs) else "") + f"{med([r[1] for r in rs]):.0f}"
print("received pps at the highest rate with <= 1 % loss, median of the rounds (≥: a floor, the generator's limit);")
print("Gbit/s of inner UDP payload at that rate; CPU: the gateway process's us per packet (softirq not included)")
print("ratio: of the medians (min..max: worst and best pairing over the rounds); paired: each round's tunneld / wireguard-go,")
print("measured back to back in that round, median (min..max)")
print(f"{'peers':>5} {'payload':>7} {'dir':>4} {'wireguard-go pps':>17} {'tunneld pps':>12} {'ratio (min..max)':>18} {'paired (min..max)':>19} {'Gbit/s wg-go/tunneld':>21} {'CPU us/pkt wg-go/tunneld':>25}")
for (kind, k, size, d) in sorted(x for x in rows if x[0] == "tunneld"):
    t = rows[(kind, k, size, d)]; w = rows.get(("wggo", k, size, d), [])
    tp = [r[1] for r in t]; wp = [r[1] for r in w]
    ratio = f"{med(tp)/med(wp):.2f} ({min(tp)/max(wp):.2f}..{max(tp)/min(wp):.2f})" if wp and min(wp) > 0 else "-"
    wr = {r[4]: r[1] for r in w}
    pr = sorted(r[1] / wr[r[4]] for r in t if wr.get(r[4], 0) > 0)
    paired = f"{med(pr):.2f} ({pr[0]:.2f}..{pr[-1]:.2f})" if pr else "-"
    gb = lambda v: f"{v * size * 8 / 1e9:.2f}"
    gbit = f"{gb(med(wp)) if wp else '-'} / {gb(med(tp))}"
    cpu = f"{med([r[2] for r in w]):.2f} / {med([r[2] for r in t]):.2f}" if w else f"- / {med([r[2] for r in t]):.2f}"
    print(f"{k:5d} {size:7d} {d:>4} {fig(w) if w else '-':>17} {fig(t):>12} {ratio:>18} {paired:>19} {gbit:>21} {cpu:>25}")
ks = sorted({k for (_, k, _, _) in rows})
if len(ks) > 1:
    for kind in ("tunneld", "wggo"):
        for size in sorted({x[2] for x in rows}):
            for d in sorted({x[3] for x in rows}):
                one, many = rows.get((kind, ks[0], size, d)), rows.get((kind, ks[-1], size, d))
                if one and many and med([r[1] for r in one]) > 0:
                    print(f"{kind} {size} B {d}: {ks[-1]} peers / {ks[0]} peer = {med([r[1] for r in many]) / med([r[1] for r in one]):.2f}")
PY
rm -f "$RESULTS"
