#!/usr/bin/env bash
# Host-learning benchmark (issue 14), one tunneld in the namespace topology, same run:
#   A = 1,000 port rules that never match (no host rules)      B = A + 1,000 `block host` rules
# alternated ROUNDS times by `tunnelctl policy reload`. Prints iperf3 TCP both ways and the time
# from TCP connect to a finished TLS handshake (openssl s_server, Python ssl client, 40 per round)
# — with B every new TLS flow is pending until its SNI is read — as medians with min–max spread,
# and the ratios B/A, also paired per round.   Usage: scripts/bench/hosts.sh [SECONDS] [ROUNDS]
# Never runs while /tmp/tv-quiet exists (someone else is measuring); holds it while measuring.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS=${1:-5}; ROUNDS=${2:-3}
export PATH=/opt/swift/usr/bin:$PATH
source scripts/lib/topology.sh
[ ! -e /tmp/tv-quiet ] || { echo "hosts bench: /tmp/tv-quiet exists (someone is measuring); try later" >&2; exit 2; }
touch /tmp/tv-quiet
cleanup() { tv_cleanup; rm -f /tmp/tv-quiet; }
trap cleanup EXIT
[ -n "${TV_NO_BUILD:-}" ] || { swift build -c release --product tunneld >/dev/null; swift build -c release --product tunnelctl >/dev/null; }

tv_topology_up
tv_tunneld_config bench
cp "$TV_DIR/policies/50-bench.rules" "$TV_DIR/A.rules"
{ cat "$TV_DIR/A.rules"; for i in $(seq 1000); do echo "block host h$i.example, *.t$i.example name h$i"; done; } >"$TV_DIR/B.rules"
tv_gateway_tunneld_up bench
tv_client_up 0
tv_wait_tunnel || { echo "tunnel did not come up"; exit 1; }
CTL="$TV_TUNNELCTL --config $TV_DIR/tunneld.conf"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=bench.test \
  -keyout "$TV_DIR/tls.key" -out "$TV_DIR/tls.crt" >/dev/null 2>&1
tv_spawn "$TV_NS_S" "$TV_DIR/s_server.log" openssl s_server -accept 4433 -cert "$TV_DIR/tls.crt" -key "$TV_DIR/tls.key" -quiet -naccept 100000
tv_spawn "$TV_NS_S" "$TV_DIR/iperf3.log" iperf3 -s
sleep 0.5

use() { cp "$TV_DIR/$1.rules" "$TV_DIR/policies/50-bench.rules"; $CTL policy reload >/dev/null; }
iperf() { tv_in "$TV_NS_C" iperf3 -c $TV_SRV -t "$SECS" $1 -J | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9)'; }
ttfb() {  # median ms from connect() to a finished TLS handshake over 40 connections
  tv_in "$TV_NS_C" python3 - "$TV_SRV" <<'PY'
import socket, ssl, statistics, sys, time
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
ts = []
for i in range(40):
    t0 = time.perf_counter()
    s = socket.create_connection((sys.argv[1], 4433), timeout=5)
    c = ctx.wrap_socket(s, server_hostname=f"allowed{i}.bench.test")
    ts.append((time.perf_counter() - t0) * 1000)
    c.close()
print(statistics.median(ts))
PY
}
declare -A R
for r in $(seq "$ROUNDS"); do
  order="A B"; [ $((r % 2)) -eq 0 ] && order="B A"  # ABBA: drift and load spread over both
  for p in $order; do
    use $p
    R[$p,up]+="$(iperf '') "; R[$p,down]+="$(iperf -R) "; R[$p,ttfb]+="$(ttfb) "
  done
done
$CTL status | grep -E 'host learning|drops' || true
python3 - <<PY
import statistics
R = {k: [float(x) for x in v.split()] for k, v in {
    "A,up": "${R[A,up]}", "A,down": "${R[A,down]}", "A,ttfb": "${R[A,ttfb]}",
    "B,up": "${R[B,up]}", "B,down": "${R[B,down]}", "B,ttfb": "${R[B,ttfb]}"}.items()}
def s(v): return f"{statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})"
print("rounds: $ROUNDS, iperf3 ${SECS} s each; A = 1,000 port rules, B = A + 1,000 host rules")
for m, unit in (("up", "Gbit/s client->server"), ("down", "Gbit/s server->client")):
    a, b = R["A," + m], R["B," + m]
    print(f"TCP {unit}: A {s(a)}  B {s(b)}  B/A {statistics.median(b)/statistics.median(a):.3f}")
    # each round measures A and B back to back (ABBA), so the round's own ratio cancels the
    # drift between rounds that the ratio of medians still carries
    print(f"    paired B/A per round: {s([y / x for x, y in zip(a, b)])}")
a, b = R["A,ttfb"], R["B,ttfb"]
print(f"TLS connect->handshake median ms: A {s(a)}  B {s(b)}  B-A {statistics.median(b)-statistics.median(a):+.3f} ms")
print(f"    paired B-A per round: {s([y - x for x, y in zip(a, b)])} ms")
PY
