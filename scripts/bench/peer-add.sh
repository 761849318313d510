#!/usr/bin/env bash
# Issue 15's benchmark: `tunnelctl peer add` of PEERS (default 1,000) peers one by one into a
# running tunneld (each add: key pair, allocation, atomic rewrite, reload over the control
# socket), while alice streams UDP through the tunnel (one datagram every 5 ms, client ns → server
# ns). Reports the time per add (median, p90, p99, max), the stream's inter-arrival gaps during the
# adds (p99 and max: the stall a streaming peer sees; bar: no stall > 50 ms), how much of that was
# the sender itself starved of CPU (gaps between send times) and each datagram's time through the
# tunnel (send to arrival on the one CLOCK_MONOTONIC: a stall of the path), lost datagrams, and
# tunneld's RSS with 1,000 and 10,000 peers configured (fresh starts; bar ≤ 64 MB at 10,000).
#   scripts/bench/peer-add.sh [PEERS] [BIG]      (defaults 1000 10000)
# Needs root. Honours /tmp/tv-quiet (waits while someone else measures; holds it while measuring).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/opt/swift/usr/bin:$PATH
PEERS=${1:-1000}; BIG=${2:-10000}
[ -n "${TV_NO_BUILD:-}" ] || { scripts/deps.sh; swift build -c release --product tunneld >/dev/null; swift build -c release --product tunnelctl >/dev/null; }
while [ -e /tmp/tv-quiet ]; do echo "waiting: /tmp/tv-quiet exists (someone is measuring)"; sleep 10; done
touch /tmp/tv-quiet
source scripts/lib/topology.sh
bench_cleanup() { rm -f /tmp/tv-quiet; tv_cleanup; }
trap bench_cleanup EXIT
tv_topology_up
tv_tunneld_config e2e premium
# A /16 so that PEERS addresses fit (the allocator takes the interface's first IPv4 subnet).
sed -i "s#^Address = .*#Address = $TV_GW_TUN/16, $TV_GW_TUN6/64\nPublicEndpoint = $TV_GW_UNDERLAY:$TV_PORT#" "$TV_DIR/tunneld.conf"
cp "$TV_DIR/tunneld.conf" "$TV_DIR/base.conf"
tv_gateway_tunneld_up
tv_client_up 0
tv_wait_tunnel
CTL="$TV_TUNNELCTL --config $TV_DIR/tunneld.conf"
rss_kb() { awk '/^VmRSS/{print $2}' "/proc/$1/status"; }
echo "== $(date -u +%FT%TZ) on $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); release build"
echo "tunneld RSS with 1 peer: $(rss_kb "$TV_GW_PID") kB"

# The stream: a receiver in the server ns records arrival times until a stop file appears.
cat >"$TV_DIR/rx.py" <<'PY'
import os, socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("0.0.0.0", 9999)); s.settimeout(0.2)
t = []
while not os.path.exists(sys.argv[2]):
    try: d = s.recv(64); t.append((struct.unpack("d", d[:8])[0], time.monotonic()))
    except socket.timeout: pass
open(sys.argv[1], "w").write("\n".join(f"{a:.6f} {b:.6f}" for a, b in t))
PY
cat >"$TV_DIR/tx.py" <<'PY'
import os, socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); n = 0; nxt = time.monotonic()
while not os.path.exists(sys.argv[2]):
    s.sendto(struct.pack("d", time.monotonic()) + b"x" * 24, (sys.argv[1], 9999)); n += 1
    nxt += 0.005; d = nxt - time.monotonic()
    if d > 0: time.sleep(d)
open(sys.argv[3], "w").write(str(n))
PY
tv_spawn "$TV_NS_S" "$TV_DIR/rx.log" python3 "$TV_DIR/rx.py" "$TV_DIR/arrivals" "$TV_DIR/stop-rx"
tv_spawn "$TV_NS_C" "$TV_DIR/tx.log" python3 "$TV_DIR/tx.py" "$TV_SRV" "$TV_DIR/stop" "$TV_DIR/sent"
sleep 1

: >"$TV_DIR/adds"
for i in $(seq 1 "$PEERS"); do
  t0=$(date +%s%N)
  $CTL peer add "b$i" >/dev/null 2>"$TV_DIR/add.err" || { echo "peer add b$i failed:"; cat "$TV_DIR/add.err"; exit 1; }
  t1=$(date +%s%N)
  echo $(( (t1 - t0) / 1000 )) >>"$TV_DIR/adds"
done
grep -q "tunneld reloaded" "$TV_DIR/add.err" || { echo "the last add did not reload tunneld:"; cat "$TV_DIR/add.err"; exit 1; }
sleep 1
touch "$TV_DIR/stop"; sleep 0.5; touch "$TV_DIR/stop-rx"  # the receiver stops after the last datagram landed
for _ in $(seq 50); do [ -s "$TV_DIR/arrivals" ] && [ -s "$TV_DIR/sent" ] && break; sleep 0.1; done
python3 - "$TV_DIR/adds" "$TV_DIR/arrivals" "$TV_DIR/sent" <<'PY'
import sys
def pct(v, p): v = sorted(v); return v[min(len(v) - 1, int(p / 100 * len(v)))]
adds = [int(x) / 1000 for x in open(sys.argv[1])]
print(f"peer add x{len(adds)} (incl. reload): median {pct(adds, 50):.1f} ms, p90 {pct(adds, 90):.1f} ms, "
      f"p99 {pct(adds, 99):.1f} ms, max {max(adds):.1f} ms; first 100 median {pct(adds[:100], 50):.1f} ms, "
      f"last 100 median {pct(adds[-100:], 50):.1f} ms")
rows = [tuple(map(float, l.split())) for l in open(sys.argv[2]) if l.strip()]
sent_t = [a for a, _ in rows]; t = [b for _, b in rows]
gaps = [(b - a) * 1000 for a, b in zip(t, t[1:])]
sgaps = [(b - a) * 1000 for a, b in zip(sent_t, sent_t[1:])]
delay = [(b - a) * 1000 for a, b in rows]  # one-way, client ns -> server ns (one CLOCK_MONOTONIC)
sent = int(open(sys.argv[3]).read())
print(f"stream (1 datagram / 5 ms) during the adds: {len(t)} of {sent} arrived; arrival gaps p50 {pct(gaps, 50):.1f} ms, "
      f"p99 {pct(gaps, 99):.1f} ms, p99.9 {pct(gaps, 99.9):.1f} ms, max {max(gaps):.1f} ms ({sum(g > 50 for g in gaps)} > 50 ms)")
print(f"  of which the sender's own (its send times): max gap {max(sgaps):.1f} ms ({sum(g > 50 for g in sgaps)} > 50 ms); "
      f"time through the tunnel p50 {pct(delay, 50):.2f} ms, p99 {pct(delay, 99):.2f} ms, p99.9 {pct(delay, 99.9):.2f} ms, "
      f"max {max(delay):.1f} ms ({sum(d > 50 for d in delay)} > 50 ms)")
PY
echo "tunneld RSS after $PEERS adds: $(rss_kb "$TV_GW_PID") kB ($(grep -c '^\[Peer\]' "$TV_DIR/tunneld.conf") peers)"

# RSS with N peers configured, each a fresh start.
kill "$TV_GW_PID"; wait "$TV_GW_PID" 2>/dev/null || true
for n in 1000 "$BIG"; do
  cp "$TV_DIR/base.conf" "$TV_DIR/tunneld.conf"
  python3 - "$TV_DIR/tunneld.conf" "$n" <<'PY'
import base64, os, sys
with open(sys.argv[1], "a") as f:
    for i in range(int(sys.argv[2])):
        k = base64.b64encode(os.urandom(32)).decode()
        f.write(f"\n[Peer]\nName = g{i}\nPublicKey = {k}\nAllowedIPs = 10.99.{1 + i // 250}.{1 + i % 250}/32\nTier = free\n")
PY
  rm -f "$TV_DIR/run/control.sock"
  t0=$(date +%s%N)
  tv_gateway_tunneld_up
  t1=$(date +%s%N)
  sleep 2
  echo "tunneld RSS with $((n + 1)) peers configured: $(rss_kb "$TV_GW_PID") kB (up in $(( (t1 - t0) / 1000000 )) ms)"
  kill "$TV_GW_PID"; wait "$TV_GW_PID" 2>/dev/null || true
done
