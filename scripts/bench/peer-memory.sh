#!/usr/bin/env bash
# tunneld's resident memory with N peers configured (issue 15's bar: ≤ 64 MB at 10,000), fresh
# starts with 1 and N+1 peers, and where it goes: /proc/PID/smaps_rollup (file-backed vs anonymous)
# and, with HEAPTRACK=1, a heaptrack profile of the N-peer start (the top allocation sites by
# memory still allocated, printed with heaptrack_print).
#   scripts/bench/peer-memory.sh [N]          (default 10000)
# Needs root. Honours /tmp/tv-quiet.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/opt/swift/usr/bin:$PATH
N=${1:-10000}
[ -n "${TV_NO_BUILD:-}" ] || { scripts/deps.sh; swift build -c release --product tunneld >/dev/null; swift build -c release --product tunnelctl >/dev/null; }
while [ -e /tmp/tv-quiet ]; do echo "waiting: /tmp/tv-quiet exists (someone is measuring)"; sleep 10; done
touch /tmp/tv-quiet
source scripts/lib/topology.sh
bench_cleanup() { rm -f /tmp/tv-quiet; tv_cleanup; }
trap bench_cleanup EXIT
tv_topology_up
tv_tunneld_config e2e premium
sed -i "s#^Address = .*#Address = $TV_GW_TUN/16, $TV_GW_TUN6/64#" "$TV_DIR/tunneld.conf"
cp "$TV_DIR/tunneld.conf" "$TV_DIR/base.conf"
report() {
  awk '/^VmRSS/{printf "VmRSS %s kB", $2}' "/proc/$1/status"
  awk '/^Rss:/{r=$2} /^Anonymous:/{a=$2} END{printf " (file-backed %s, anonymous %s kB)\n", r - a, a}' "/proc/$1/smaps_rollup"
}
echo "== $(date -u +%FT%TZ) on $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); release build"
for n in 0 "$N"; do
  cp "$TV_DIR/base.conf" "$TV_DIR/tunneld.conf"
  python3 - "$TV_DIR/tunneld.conf" "$n" <<'PY'
import base64, os, sys
with open(sys.argv[1], "a") as f:
    for i in range(int(sys.argv[2])):
        k = base64.b64encode(os.urandom(32)).decode()
        f.write(f"\n[Peer]\nName = g{i}\nPublicKey = {k}\nAllowedIPs = 10.99.{1 + i // 250}.{1 + i % 250}/32\nTier = free\n")
PY
  rm -f "$TV_DIR/run/control.sock"
  if [ -n "${HEAPTRACK:-}" ] && [ "$n" != 0 ]; then
    tv_spawn "$TV_NS_G" "$TV_DIR/tunneld.log" heaptrack -o "$TV_DIR/heap" "$TV_TUNNELD" --config "$TV_DIR/tunneld.conf" --foreground
  else
    tv_spawn "$TV_NS_G" "$TV_DIR/tunneld.log" "$TV_TUNNELD" --config "$TV_DIR/tunneld.conf" --foreground
  fi
  for _ in $(seq 300); do [ -S "$TV_DIR/run/control.sock" ] && break; sleep 0.1; done
  sleep 2
  pid=$TV_LAST_PID   # under heaptrack: the tunneld process in the gateway namespace
  for p in $(ip netns pids "$TV_NS_G"); do [ "$(cat "/proc/$p/comm" 2>/dev/null)" = tunneld ] && pid=$p; done
  echo -n "tunneld with $((n + 1)) peers configured: "; report "$pid"
  kill "$pid" 2>/dev/null || true
  wait "$TV_LAST_PID" 2>/dev/null || true   # heaptrack writes its file when tunneld has exited
done
if [ -n "${HEAPTRACK:-}" ]; then
  f=$(find "$TV_DIR" -maxdepth 1 -name 'heap*' ! -name '*.txt' | head -1)
  [ -n "$f" ] || { echo "heaptrack wrote no profile: $(tail -3 "$TV_DIR/tunneld.log")"; exit 1; }
  heaptrack_print -f "$f" --print-peaks 0 --print-leaks 1 --print-allocators 0 --print-temporary 0 \
    --peak-limit 30 >"$TV_DIR/heap.txt" 2>&1 || true
  cp "$TV_DIR/heap.txt" /tmp/peer-memory-heap.txt; cp "$f" /tmp/peer-memory.heaptrack.${f##*.}; echo "heaptrack: /tmp/peer-memory-heap.txt, profile /tmp/peer-memory.heaptrack.${f##*.}"
fi
