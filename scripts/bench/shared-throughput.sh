#!/usr/bin/env bash
# Gateway throughput with the shared store on PostgreSQL vs the local SQLite store (issue 19 bar:
# >= 0.95x), in the same run: ROUNDS alternations of the same topology, a free-tier wireguard-go
# client (so its window and quota deltas go to PostgreSQL every second and its flows are
# journalled), iperf3 TCP client->server and server->client for SECS each.
# TV_PIN=1 (the default) gives the gateway (tunneld, all its threads) CPU 1 and everything else —
# the wireguard-go client, both iperf3s, the PostgreSQL server — CPU 0: on this 2-core machine the
# unpinned runs spread ±10 % from run to run (the scheduler moving the client and iperf3 onto the
# gateway's core), more than the difference the bar asks about. PostgreSQL runs on its own machine
# in a deployment; what is measured is the gateway's own cost of the shared store (its sync thread,
# the journal triggers, the handshake-time statement), which stays on the gateway's core.
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
PIN=${TV_PIN:-1}
ON0=(); [ "$PIN" = 1 ] && ON0=(taskset -c 0)
if [ "$PIN" = 1 ]; then  # the server and the processes it already forked; later backends inherit it
  PM=$(head -1 "$PG_BENCH_DIR/data/postmaster.pid")
  for p in "$PM" $(ps --ppid "$PM" -o pid=); do taskset -a -p -c 0 "$p" >/dev/null; done
fi

# CPU seconds the PostgreSQL server (all its processes) has used so far.
pg_cpu() {
  local pm; pm=$(head -1 "$PG_BENCH_DIR/data/postmaster.pid")
  python3 - "$pm" $(ps --ppid "$pm" -o pid=) <<'PY'
import os, sys
hz = os.sysconf("SC_CLK_TCK"); t = 0
for p in sys.argv[1:]:
    try: f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split(); t += int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])
    except OSError: pass
print(t / hz)
PY
}

# CPU seconds process $1 (all its threads) has used so far.
proc_cpu() { python3 -c 'import os,sys; f=open(f"/proc/{sys.argv[1]}/stat").read().rsplit(")",1)[1].split(); print((int(f[11])+int(f[12]))/os.sysconf("SC_CLK_TCK"))' "$1"; }

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
  if [ "$PIN" = 1 ]; then
    taskset -a -p -c 1 "$TV_GW_PID" >/dev/null
    taskset -a -p -c 0 "$TV_WG_C_PID" >/dev/null
  fi
  tv_spawn "$TV_NS_S" "$TV_DIR/iperf3.log" "${ON0[@]}" iperf3 -s >/dev/null; sleep 0.5
  local up down cpu0 gw0; cpu0=$(pg_cpu); gw0=$(proc_cpu "$TV_GW_PID")
  up=$(tv_in "$TV_NS_C" "${ON0[@]}" iperf3 -c $TV_SRV -t "$SECS" -J | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9)')
  down=$(tv_in "$TV_NS_C" "${ON0[@]}" iperf3 -c $TV_SRV -t "$SECS" -R -J | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9)')
  local gwcpu; gwcpu=$(python3 -c "print($(proc_cpu "$TV_GW_PID") - $gw0)")
  echo "  $1: the PostgreSQL server used $(python3 -c "print(round($(pg_cpu) - $cpu0, 2))") CPU s during the $((2 * SECS)) s of traffic" >&2
  if [ "$1" = postgresql ]; then
    "$TV_TUNNELCTL" --config "$TV_DIR/tunneld.conf" status | grep 'shared store' >&2 || { echo "no shared store line: not on PostgreSQL" >&2; exit 1; }
  fi
  # The gateway's CPU per byte forwarded (both directions): what the shared store could add to
  # the gateway itself, independent of the client being the bottleneck.
  echo "$1 $up $down $(python3 -c "print($gwcpu * 1e9 / (($up + $down) * 1e9 / 8 * $SECS))")" >>"$RESULTS"
  tv_cleanup
}

for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then run_one local; run_one postgresql; else run_one postgresql; run_one local; fi
done
python3 - "$RESULTS" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
for r in rows: print(f"  {r[0]:10} c->s {float(r[1]):.3f}  s->c {float(r[2]):.3f} Gbit/s  gateway {float(r[3]):.2f} CPU ns/byte")
for i, name in ((1, "TCP client->server Gbit/s"), (2, "TCP server->client Gbit/s")):
    loc = [float(r[i]) for r in rows if r[0] == "local"]
    pg = [float(r[i]) for r in rows if r[0] == "postgresql"]
    ratios = [p / l for p, l in zip(pg, loc)]
    print(f"{name:28} SQLite median {statistics.median(loc):.3f}  PostgreSQL median {statistics.median(pg):.3f}  "
          f"ratio median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}, {len(ratios)} rounds)")
loc = [float(r[3]) for r in rows if r[0] == "local"]
pg = [float(r[3]) for r in rows if r[0] == "postgresql"]
ratios = [l / p for p, l in zip(pg, loc)]
print(f"{'gateway CPU ns/byte':28} SQLite median {statistics.median(loc):.3f}  PostgreSQL median {statistics.median(pg):.3f}  "
      f"efficiency ratio (SQLite/PostgreSQL) median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")
PY
