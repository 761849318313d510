#!/usr/bin/env bash
# Gateway throughput with the live ring and capture: runs scripts/bench/gateway.sh (tunneld only)
# in three configurations back to back, ROUNDS times — capture off and nobody watching; capture at
# `full`; a `tunnelctl watch` consumer attached (refreshing view, output discarded); with
# TV_BENCH_CONFIGS also `nohist` (flow history recording off, TUNNELD_HISTORY=off) — and prints
# each configuration's medians and the ratio to the first. Needs root and release binaries.
#   Usage: scripts/bench/observe.sh [ROUNDS] [SECONDS]   (also TV_BENCH_WATCH_MODE=view|json|lines,
#          TV_BENCH_CONFIGS="off watch" to run a subset)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}; SECS=${2:-8}
OUT=$(mktemp /tmp/tv-observe-bench.XXXXXX)
export TV_BENCH_PPS_SEARCH=off
for r in $(seq "$ROUNDS"); do
  for cfg in ${TV_BENCH_CONFIGS:-off full watch}; do
    case $cfg in
      off)   env TV_NO_BUILD=1 scripts/bench/gateway.sh "$SECS" tunneld ;;
      nohist) env TV_NO_BUILD=1 TUNNELD_HISTORY=off scripts/bench/gateway.sh "$SECS" tunneld ;;
      full)  env TV_NO_BUILD=1 TV_BENCH_CAPTURE=full scripts/bench/gateway.sh "$SECS" tunneld ;;
      watch) env TV_NO_BUILD=1 TV_BENCH_WATCH=${TV_BENCH_WATCH_MODE:-view} scripts/bench/gateway.sh "$SECS" tunneld ;;
    esac 2>&1 | sed "s/^/$cfg $r | /" | tee -a "$OUT" | grep -E 'Gbit/s|pps|CPU|watcher|capture:' >&2
  done
done
python3 - "$OUT" <<'PY'
import sys, statistics, collections
vals = collections.defaultdict(lambda: collections.defaultdict(list))
names = ["TCP client->server Gbit/s", "TCP server->client Gbit/s", "UDP 64B pps received",
         "ping avg ms", "gateway CPU us/packet", "gateway CPU s/Gbit"]
for line in open(sys.argv[1]):
    cfg, _, rest = line.partition(" ")
    rest = rest.split("| ", 1)[-1].rstrip("\n")
    for n in names:
        if rest.startswith(n):
            try: vals[cfg][n].append(float(rest.split()[-2]))
            except ValueError: pass
print(f"{'metric (median of runs)':28} {'off':>10} {'full':>10} {'ratio':>6} {'watch':>10} {'ratio':>6}   runs")
for n in names:
    m = {c: statistics.median(vals[c][n]) if vals[c][n] else float('nan') for c in ("off", "full", "watch")}
    r = lambda c: m[c] / m["off"] if m["off"] else float('nan')
    print(f"{n:28} {m['off']:10.4g} {m['full']:10.4g} {r('full'):6.2f} {m['watch']:10.4g} {r('watch'):6.2f}   "
          + " / ".join(",".join(f"{v:.3g}" for v in vals[c][n]) for c in ("off", "full", "watch")))
PY
echo "raw output: $OUT" >&2
