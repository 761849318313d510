#!/usr/bin/env bash
# Gateway throughput with the shared store on PostgreSQL vs the local SQLite store (issue 19 bar:
# >= 0.95x), in the same run: ROUNDS alternations of the same topology, a free-tier wireguard-go
# client (so its window and quota deltas go to PostgreSQL every second and its flows are
# journalled), iperf3 TCP client->server and server->client for SECS each.
# Usage: scripts/bench/shared-throughput.sh [SECS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS=${1:-8}; ROUNDS=${2:-3}
export PATH=/opt/swift/usr/bin:$PATH
source scripts/lib/topology.sh
source scripts/lib/pg.sh
[ -n "${TV_NO_BUILD:-}" ] || { scripts/deps.sh; swift build -c release --product tunneld >/dev/null; swift build -c release --product tunnelctl >/dev/null; }
PG_BENCH_DIR=$(mktemp -d /tmp/tunnelvision-pg.XXXXXX)
RESULTS=$(mktemp /tmp/tv-bench.XXXXXX)
trap 'tv_cleanup; pg_cluster_stop "$PG_BENCH_DIR"; rm -f "$RESULTS"' EXIT
pg_cluster_start "$PG_BENCH_DIR"
export TV_FREE_SESSION=1h

run_one() {  # $1 = local | postgresql
  TV_ID=$(( $$ % 10000 + RANDOM % 1000 ))
  TV_NS_C=tvc$TV_ID; TV_NS_G=tvg$TV_ID; TV_NS_S=tvs$TV_ID; TV_WG_C=tvwc$TV_ID; TV_IF_G=tvg$TV_ID
  TV_DIR=$(mktemp -d /tmp/tunnelvision-bench.XXXXXX)
  tv_topology_up
  tv_tunneld_config bench free
  [ "$1" = postgresql ] && sed -i "/^WatchdogInterval/a Store = $PG_CONNINFO\nGatewayName = gw-bench" "$TV_DIR/tunneld.conf"
  tv_gateway_tunneld_up bench
  tv_client_up 0
  tv_wait_tunnel || { echo "tunnel did not come up ($1)"; tail -n 20 "$TV_DIR"/*.log; exit 1; }
  tv_spawn "$TV_NS_S" "$TV_DIR/iperf3.log" iperf3 -s >/dev/null; sleep 0.5
  local up down
  up=$(tv_in "$TV_NS_C" iperf3 -c $TV_SRV -t "$SECS" -J | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9)')
  down=$(tv_in "$TV_NS_C" iperf3 -c $TV_SRV -t "$SECS" -R -J | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9)')
  if [ "$1" = postgresql ]; then
    "$TV_TUNNELCTL" --config "$TV_DIR/tunneld.conf" status | grep 'shared store' >&2 || { echo "no shared store line: not on PostgreSQL" >&2; exit 1; }
  fi
  echo "$1 $up $down" >>"$RESULTS"
  tv_cleanup
}

for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then run_one local; run_one postgresql; else run_one postgresql; run_one local; fi
done
python3 - "$RESULTS" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
for r in rows: print(f"  {r[0]:10} c->s {float(r[1]):.3f}  s->c {float(r[2]):.3f} Gbit/s")
for i, name in ((1, "TCP client->server Gbit/s"), (2, "TCP server->client Gbit/s")):
    loc = [float(r[i]) for r in rows if r[0] == "local"]
    pg = [float(r[i]) for r in rows if r[0] == "postgresql"]
    ratios = [p / l for p, l in zip(pg, loc)]
    print(f"{name:28} SQLite median {statistics.median(loc):.3f}  PostgreSQL median {statistics.median(pg):.3f}  "
          f"ratio median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}, {len(ratios)} rounds)")
PY
