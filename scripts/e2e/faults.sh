#!/usr/bin/env bash
# End to end: nothing lost silently (issue 13). A real wireguard-go client streams and pings
# through tunneld while the test breaks what tunneld leans on:
#   1. a full disk: the state directory is a small tmpfs; a filler file takes the rest, while the
#      client opens 300 short flows; then the disk is freed;
#   2. an exclusive lock on state.db held for 10 s by another process, during traffic;
#   3. kill -9 mid-transfer, three times, each followed by a restart;
#   4. 100 idle and 100 slow (a byte a second) clients on control.sock.
# Asserts: forwarding never stops (a 0.1 s ping loses ≤ 2 %, every restart aside), drops are
# counted where the operator looks (`status`, a marker with the same count), every flow the
# traffic made is either in the store or counted as dropped, no open flows or sessions of a
# crashed run remain after recovery, and root's CLI answers throughout (its latency is printed).
# Needs root; ~2 minutes. Run by scripts/test.sh.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/topology.sh
source scripts/lib/check.sh
STATE_MNT=""
tv_faults_cleanup() {
  [ -n "${LOCK_PID:-}" ] && kill "$LOCK_PID" 2>/dev/null
  [ -n "${SLOW_PID:-}" ] && kill "$SLOW_PID" 2>/dev/null
  # Stop the processes before unmounting the state directory they write to.
  for p in "${TV_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  [ -n "$STATE_MNT" ] && umount "$STATE_MNT" 2>/dev/null
  tv_cleanup
}
trap tv_faults_cleanup EXIT
CTL="$TV_TUNNELCTL --config $TV_DIR/tunneld.conf"
DB=$TV_DIR/state/state.db
store_sql() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1], timeout=20); [print("|".join(map(str,r))) for r in c.execute(sys.argv[2])]' "$DB" "$1"; }
gateway_up() { tv_gateway_tunneld_up && TV_PIDS+=("$TV_GW_PID"); }
# tunnelctl status answers (exit 0, within the CLI's own 5 s timeout). Before issue 13 a few idle
# clients made it time out; its latency is recorded and reported at the end, never asserted (a
# timing is a benchmark's business: the machine's load decides it, not tunneld).
STATUS_MS=()
status_answers() {
  local t0 t1; t0=$(date +%s%N); $CTL status >/dev/null 2>&1 || return 1; t1=$(date +%s%N)
  STATUS_MS+=($(( (t1 - t0) / 1000000 ))); echo "status in ${STATUS_MS[-1]} ms"
}
# check NAME status_answers, keeping the latency (check runs its command in a subshell).
check_status() {
  if status_answers >/dev/null 2>&1; then tv_ok "$1 (${STATUS_MS[-1]} ms)"; else tv_bad "$1" "tunnelctl status failed or timed out"; fi
}
# Loss (%) of the background ping between two line counts of its log.
ping_loss() {
  python3 - "$TV_DIR/ping.log" <<'PY'
import re, sys
seqs = [int(m.group(1)) for m in (re.search(r'icmp_seq=(\d+)', l) for l in open(sys.argv[1])) if m]
if not seqs: print(100.0); sys.exit()
sent = max(seqs); got = len(set(seqs))
print(f"{100.0 * (sent - got) / sent:.2f}")
PY
}

tv_topology_up
tv_tunneld_config e2e free
# A small state directory on its own tmpfs: the disk that fills up.
STATE_MNT=$TV_DIR/state
mkdir -p "$STATE_MNT"
mount -t tmpfs -o size=8m tvstate$TV_ID "$STATE_MNT" || { tv_bad "mount a tmpfs for the state directory"; tv_summary; exit 1; }
gateway_up || { tv_bad "tunneld starts"; tv_summary; exit 1; }
tv_client_up 0
TV_PIDS+=("$TV_WG_C_PID")
tv_spawn "$TV_NS_S" "$TV_DIR/netserver.log" python3 scripts/e2e/lib/netserver.py
check "traffic flows" tv_wait_tunnel
tv_spawn "$TV_NS_C" "$TV_DIR/ping.log" ping -i 0.1 -W1 $TV_SRV

# N distinct UDP flows (one datagram each), returns how many it sent. The source ports are
# BASE..BASE+N-1, chosen by the caller so no flow of one phase can share a 5-tuple with a flow
# of another that is still open in the gateway's table (kernel-chosen ports could, rarely:
# the gateway then rightly sees one flow, and a count of rows comes out one short).
make_flows() {
  tv_in "$TV_NS_C" python3 - "$TV_SRV" "$1" "$2" <<'PY'
import socket, sys
host, n, base = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sent = 0
for i in range(n):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", base + i)); s.sendto(b"x", (host, 7010 + (i % 50))); s.close(); sent += 1
print(sent)
PY
}
# Which source ports of BASE..BASE+N-1 have no flow row (printed when a count comes out short).
missing_flows() {
  store_sql "SELECT src_port FROM flows WHERE src_port BETWEEN $1 AND $(( $1 + $2 - 1 ))" |
    python3 -c 'import sys; have={int(l) for l in sys.stdin if l.strip()}; b,n=int(sys.argv[1]),int(sys.argv[2]); m=[p for p in range(b,b+n) if p not in have]; print("  missing source ports:", m[:20], "(%d)" % len(m))' "$1" "$2"
}

echo "faults: a full disk"
sleep 2
BEFORE=$(store_sql "SELECT count(*) FROM flows")
dd if=/dev/zero of="$STATE_MNT/filler" bs=64k 2>/dev/null  # fills the tmpfs
SENT=$(make_flows 300 20000)
sleep 8  # two flow sweeps and the writer's retries
check_output "status says the store is unavailable" 'store: UNAVAILABLE' $CTL status
check_status "root's CLI answers while the disk is full"
rm -f "$STATE_MNT/filler"
wait_for 15 bash -c "$CTL status | grep -q 'store: writable'"
check_output "status says the store is writable again" 'store: writable' $CTL status
sleep 2
AFTER=$(store_sql "SELECT count(*) FROM flows")
DROPPED=$($CTL status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["store"]["dropped"]["flows"])')
REACHED=$((AFTER - BEFORE))
echo "  $SENT flows made; $REACHED new flow rows reached the store; $DROPPED flow records counted as dropped"
check "every flow is in the store or counted as dropped ($REACHED + $DROPPED ≥ $SENT)" test $((REACHED + DROPPED)) -ge "$SENT"
[ $((REACHED + DROPPED)) -ge "$SENT" ] || missing_flows 20000 "$SENT"
if [ "$DROPPED" -gt 0 ]; then
  check_output "a marker names the outage and the same count" "store unavailable .*$DROPPED flow record" \
    store_sql "SELECT label FROM markers WHERE kind = 'automatic'"
else
  check "nothing dropped: every flow reached the store after the outage ($REACHED ≥ $SENT)" test "$REACHED" -ge "$SENT"
  check_output "a marker names the outage" "store unavailable" store_sql "SELECT label FROM markers WHERE kind = 'automatic'"
fi
check "forwarding never stopped during the full disk (ping loss ≤ 2 %: $(ping_loss) %)" \
  python3 -c "import sys; sys.exit(0 if float('$(ping_loss)') <= 2.0 else 1)"

echo "faults: an exclusive lock for 10 s"
FLOWS0=$(store_sql "SELECT count(*) FROM flows")
python3 -c 'import sqlite3,sys,time; c=sqlite3.connect(sys.argv[1], isolation_level=None); c.execute("BEGIN EXCLUSIVE"); print("locked", flush=True); time.sleep(10); c.execute("COMMIT")' "$DB" >"$TV_DIR/lock.log" 2>&1 &
LOCK_PID=$!
sleep 0.5
SENT2=$(make_flows 100 21000)
check_status "root's CLI answers during the lock"
wait "$LOCK_PID"; LOCK_PID=""
check_output "the lock was held" 'locked' cat "$TV_DIR/lock.log"
sleep 8
FLOWS1=$(store_sql "SELECT count(*) FROM flows")
DROPPED2=$($CTL status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["store"]["dropped"]["flows"])')
echo "  $SENT2 flows made during the lock; $((FLOWS1 - FLOWS0)) reached the store after it (drops now $DROPPED2)"
check "the lock lost nothing: every flow reached the store once it was released" test $((FLOWS1 - FLOWS0)) -ge "$SENT2"
[ $((FLOWS1 - FLOWS0)) -ge "$SENT2" ] || missing_flows 21000 "$SENT2"
check "and no new drops were counted" test "$DROPPED2" = "$DROPPED"

echo "faults: kill -9 mid-transfer, three times"
tv_spawn "$TV_NS_C" "$TV_DIR/iperf-client.log" bash -c "for i in 1 2 3 4 5 6; do iperf3 -c $TV_SRV -t 5 -J >/dev/null 2>&1 || true; done"
tv_spawn "$TV_NS_S" "$TV_DIR/iperf-server.log" iperf3 -s
for round in 1 2 3; do
  sleep 3
  make_flows 20 $((22000 + round * 100)) >/dev/null
  sleep 1
  kill -9 "$TV_GW_PID"; wait "$TV_GW_PID" 2>/dev/null
  KILLED_AT=$(date +%s%3N)
  rm -f "$TV_DIR/run/control.sock"
  gateway_up || tv_bad "tunneld restarts after kill -9 ($round)"
  OPEN=$(store_sql "SELECT (SELECT count(*) FROM flows WHERE closed_at IS NULL AND first_seen < $KILLED_AT) + (SELECT count(*) FROM sessions WHERE ended_at IS NULL AND started_at < $KILLED_AT)")
  check "round $round: no open flow or session of the crashed run remains" test "$OPEN" = 0
  GAP=$(store_sql "SELECT $KILLED_AT - max(closed_at) FROM flows WHERE close_reason = 'crash'")
  check "round $round: crashed flows closed at most 1.5 s before the kill (${GAP:-?} ms)" test -n "$GAP" -a "${GAP:-9999}" -le 1500
  check "round $round: traffic flows again" tv_wait_tunnel
done

echo "faults: slow and idle control clients"
python3 - "$TV_DIR/run/control.sock" >"$TV_DIR/slow.log" 2>&1 <<'PY' &
import socket, sys, time
path = sys.argv[1]; socks = []
for i in range(200):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(path); socks.append(s)
print("connected", len(socks), flush=True)
end = time.time() + 12
while time.time() < end:  # the second hundred send a byte a second, never a whole request
    for s in socks[100:]:
        try: s.send(b"{")
        except OSError: pass
    time.sleep(1)
PY
SLOW_PID=$!
sleep 2
check_output "200 clients connected" 'connected 200' cat "$TV_DIR/slow.log"
for i in 1 2 3 4 5 6 7 8; do check_status "root's status answers with 100 idle and 100 slow clients ($i)"; sleep 1; done
echo "faults: root's status latency (ms): ${STATUS_MS[*]} (median $(printf '%s\n' "${STATUS_MS[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'))"
kill "$SLOW_PID" 2>/dev/null; SLOW_PID=""

echo "faults: a clean stop leaves nothing open"
kill -TERM "$TV_GW_PID"; wait "$TV_GW_PID" 2>/dev/null
check_output "no open flows or sessions after a clean stop" '^0\|0$' \
  store_sql "SELECT (SELECT count(*) FROM flows WHERE closed_at IS NULL), (SELECT count(*) FROM sessions WHERE ended_at IS NULL)"
check "the store is intact" bash -c "python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"PRAGMA integrity_check\").fetchone()[0])' '$DB' | grep -qx ok"
tv_summary
