#!/usr/bin/env bash
# Every benchmark in one run (minutes, not seconds): the micro-benchmarks of tunnelbench, then the
# namespace benchmarks (gateway throughput vs wireguard-go, memory). Needs root for the latter.
#   scripts/bench/all.sh [GATEWAY_SECONDS]     output also saved to /tmp/tunnelvision-bench.txt
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH=/opt/swift/usr/bin:$PATH
scripts/deps.sh
swift build -c release >/dev/null || exit 1
B=.build/release/tunnelbench
{
  echo "== $(date -u +%FT%TZ) on $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
  for g in policy packet wireguard offload store ring; do
    echo; echo "== tunnelbench $g"
    case $g in
      ring) $B ring stress --lossless ;;
      store) $B store writer ;;
      *) $B $g ;;
    esac
  done
  echo; echo "== tunnelbench store prune (1,000,000 rows, concurrent writer)"; $B store prune
  if [ "$(id -u)" -eq 0 ]; then
    echo; echo "== gateway: tunneld vs wireguard-go"; TV_NO_BUILD=1 scripts/bench/gateway.sh "${1:-8}" both
    echo; echo "== memory"; TV_NO_BUILD=1 scripts/bench/memory.sh
  fi
} 2>&1 | tee /tmp/tunnelvision-bench.txt
