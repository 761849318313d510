#!/usr/bin/env bash
# Runs scripts/bench/gateway.sh (wireguard-go, then tunneld) ROUNDS times and prints, per metric,
# every run's ratio tunneld / wireguard-go and the medians. Needs root and release binaries.
#   Usage: scripts/bench/compare.sh [ROUNDS] [SECONDS]   (environment passes through: TV_GRO=on,
#          TUNNELD_OFFLOAD=off, TV_BENCH_PPS_SEARCH=off, …)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}; SECS=${2:-8}
OUT=$(mktemp /tmp/tv-compare-bench.XXXXXX)
[ -n "${TV_NO_BUILD:-}" ] || { scripts/deps.sh; swift build -c release --product tunneld >/dev/null; swift build -c release --product tunnelctl >/dev/null; }
for r in $(seq "$ROUNDS"); do
  echo "== round $r ($(date +%T), load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  TV_NO_BUILD=1 scripts/bench/gateway.sh "$SECS" both | tee -a "$OUT" >&2
done
python3 - "$OUT" <<'PY'
import sys, statistics, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    parts = line.rsplit(None, 3)
    if len(parts) == 4 and not line.startswith("metric"):
        try: vals = (float(parts[1]), float(parts[2]), float(parts[3]))
        except ValueError: continue  # a metric not measured (e.g. TV_BENCH_PPS_SEARCH=off)
        rows[parts[0].strip()].append(vals)
print(f"{'metric (median of rounds)':28} {'wireguard-go':>13} {'tunneld':>11} {'ratio':>6}   ratios per round")
for name, vals in rows.items():
    med = lambda k: statistics.median(v[k] for v in vals)
    print(f"{name:28} {med(0):13.4g} {med(1):11.4g} {med(2):6.2f}   " + ", ".join(f"{v[2]:.2f}" for v in vals))
PY
echo "raw output: $OUT" >&2
