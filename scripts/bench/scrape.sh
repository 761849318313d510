#!/usr/bin/env bash
# Issue 17's scrape bar: iperf3 through tunneld with and without 1,000 scrapes of /metrics during
# the run ("no throughput change beyond noise"), in the same run, alternating A B B A … so drift
# cancels. The gateway (tunneld, every thread, its HTTP listener included) gets CPU 1; the
# wireguard-go client and both iperf3s CPU 0 (the client is the bottleneck there). In a deployment
# Prometheus scrapes from another machine, so what is measured is tunneld's own cost of answering,
# on the core that forwards: the scraper runs on CPU 1 as SCHED_IDLE (only in time no other thread
# of that core wants), so its own CPU (Python, the HTTP client) takes nothing from tunneld or the
# client, while tunneld's HTTP thread and the snapshot it reads compete at normal priority. A run
# where the scraper fell behind says so (`1000@Ns`: all answered after N s).
# Two scrape modes per round:
#   flat   1,000 scrapes back to back over one keep-alive connection (≈ 250/s here: 3,700× the
#          rate of a Prometheus that scrapes every 15 s)
#   paced  1,000 scrapes spread over the run (1000 / SECS per second)
# Also reports tunneld's CPU time per scrape with no traffic (2,000 scrapes, /proc ticks).
# Usage: scripts/bench/scrape.sh [SECS] [ROUNDS]      (defaults 10 and 4; holds /tmp/tv-quiet)
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS=${1:-10}; ROUNDS=${2:-4}
export PATH=/opt/swift/usr/bin:$PATH
[ -n "${TV_NO_BUILD:-}" ] || { scripts/deps.sh; swift build -c release --product tunneld >/dev/null; swift build -c release --product tunnelctl >/dev/null; }
while [ -e /tmp/tv-quiet ]; do echo "waiting: /tmp/tv-quiet exists (someone is measuring)"; sleep 10; done
touch /tmp/tv-quiet
source scripts/lib/topology.sh
RESULTS=$(mktemp /tmp/tv-bench.XXXXXX)
trap 'rm -f /tmp/tv-quiet "$RESULTS"; tv_cleanup' EXIT
export TV_FREE_SESSION=1h
tv_topology_up
tv_tunneld_config e2e free
sed -i "s/^\[Interface\]$/[Interface]\nMetricsListen = 127.0.0.1:9586/" "$TV_DIR/tunneld.conf"
tv_gateway_tunneld_up
taskset -a -p -c 1 "$TV_GW_PID" >/dev/null
tv_client_up 0
taskset -a -p -c 0 "$TV_WG_C_PID" >/dev/null
tv_wait_tunnel
tv_spawn "$TV_NS_S" "$TV_DIR/iperf3-server.log" taskset -c 0 iperf3 -s -B $TV_SRV
sleep 0.5
echo "== $(date -u +%FT%TZ) on $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); release build; ${SECS} s runs, $ROUNDS rounds"

scrape() { tv_in "$TV_NS_G" taskset -c 1 chrt --idle 0 python3 scripts/e2e/lib/scrape.py 127.0.0.1 9586 /metrics "$@"; }
ticks() { awk '{print $14+$15}' "/proc/$TV_GW_PID/stat"; }
HZ=$(getconf CLK_TCK)

# tunneld's CPU per scrape, no traffic.
T0=$(ticks); OUT=$(scrape 2000); T1=$(ticks)
echo "idle: $OUT; tunneld CPU $(python3 -c "print('%.1f' % (($T1-$T0)/$HZ*1e6/2000))") µs per scrape"

iperf() {  # Mbit/s received, client → server, SECS s
  tv_in "$TV_NS_C" taskset -c 0 iperf3 -c $TV_SRV -t "$SECS" -J 2>/dev/null \
    | python3 -c 'import json,sys; print("%.1f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e6))'
}
run() {  # $1 = none | flat | paced → one line "mode mbit scrapes-ok"
  local mode=$1 pid="" out="$TV_DIR/scrapes-$1.log" v
  case $mode in
    flat) scrape 1000 >"$out" 2>&1 & pid=$! ;;
    paced) scrape 1000 "$(python3 -c "print(1000/$SECS)")" >"$out" 2>&1 & pid=$! ;;
  esac
  v=$(iperf)
  [ -z "$pid" ] || wait "$pid"
  echo "$mode $v $( [ -z "$pid" ] && echo - || sed -n 's/^scrapes [0-9]* ok \([0-9]*\) .* seconds \([0-9.]*\)$/\1@\2s/p' "$out")"
}
for r in $(seq "$ROUNDS"); do
  # A B B A within a round, the order flipped every other round.
  if [ $((r % 2)) = 1 ]; then order="none flat paced paced flat none"; else order="flat none paced none paced flat"; fi
  for m in $order; do l=$(run "$m"); echo "round $r: $l"; echo "$r $l" >>"$RESULTS"; done
done

python3 - "$RESULTS" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
by = {}
for r, mode, v, s in rows:
    by.setdefault((int(r), mode), []).append(float(v))
rounds = sorted({k[0] for k in by})
def ci(xs):
    if len(xs) < 2: return (float("nan"), float("nan"))
    m, sd = st.mean(xs), st.stdev(xs)
    t = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}.get(len(xs) - 1, 2.0)
    return (m - t * sd / len(xs) ** 0.5, m + t * sd / len(xs) ** 0.5)
base = [st.mean(by[(r, "none")]) for r in rounds]
print("without scrapes: Mbit/s per round (mean of 2)", " ".join("%.0f" % b for b in base))
for mode in ("flat", "paced"):
    ratios = [st.mean(by[(r, mode)]) / st.mean(by[(r, "none")]) for r in rounds]
    lo, hi = ci(ratios)
    print(f"{mode:6s}: ratio with/without per round " + " ".join("%.3f" % x for x in ratios)
          + f"; median {st.median(ratios):.3f}, mean {st.mean(ratios):.3f}, 95% CI of the mean {lo:.3f}–{hi:.3f}")
# The noise floor: the two 'none' runs of one round against each other.
pairs = [by[(r, "none")][0] / by[(r, "none")][1] for r in rounds if len(by[(r, "none")]) == 2]
print("noise: first/second run without scrapes in a round " + " ".join("%.3f" % x for x in pairs))
PY
