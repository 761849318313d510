#!/usr/bin/env bash
# End to end: packet capture and the live feed. A wireguard-go client sends traffic through
# tunneld with capture on at `full` and a small rotation size; the capture files must open with
# libpcap and tcpdump, match the daemon's per-packet accounting, keep every record readable across
# rotations, and give back exactly one flow on `capture extract`. `tunnelctl watch` runs piped the
# whole time and must keep going across a tunneld restart. Needs root. Run by scripts/test.sh.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/topology.sh
source scripts/lib/check.sh
trap tv_cleanup EXIT
CTL="$TV_TUNNELCTL --config $TV_DIR/tunneld.conf"
CAP="$TV_DIR/state/capture"
ROTATE=200000
export TUNNELD_CAPTURE_FILE_BYTES=$ROTATE
N=300   # UDP datagrams in the counted flow (each echoed)

tv_topology_up
tv_tunneld_config e2e
echo "capture: settings"
check_output "capture on --detail full writes the settings row" '^capture on, detail full' $CTL capture on --detail full
tv_gateway_tunneld_up || { tv_bad "tunneld starts"; tv_summary; exit 1; }
check "tunneld creates the live ring" test -f "$TV_DIR/run/live.ring"
check "tunneld logs that capture is on" grep -q 'capture: on, detail full' "$TV_DIR/tunneld.log"
tv_client_up 0
tv_spawn "$TV_NS_S" "$TV_DIR/netserver.log" python3 scripts/e2e/lib/netserver.py >/dev/null
wait_for 5 grep -q ready "$TV_DIR/netserver.log" >/dev/null

# The watcher: piped JSON, started before the traffic, left running across the restart.
"$TV_TUNNELCTL" --config "$TV_DIR/tunneld.conf" watch --json >"$TV_DIR/watch.jsonl" 2>"$TV_DIR/watch.err" &
WATCH=$!
TV_PIDS+=($WATCH)
sleep 1

echo "capture: traffic"
check "handshake completes and the server answers ping" tv_wait_tunnel
check_output "a counted UDP flow: $N datagrams, each echoed" "^echoed $N\$" tv_in "$TV_NS_C" python3 -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('0.0.0.0', 45678)); s.settimeout(2)
got = 0
for i in range($N):
    s.sendto(bytes([i % 256]) * 1000, ('$TV_SRV', 7003))
    try:
        s.recvfrom(2000); got += 1
    except OSError:
        pass
print('echoed', got)"
check_output "a 4 MiB TCP transfer (crosses many rotations)" '^intact' \
  tv_in "$TV_NS_C" python3 scripts/e2e/lib/netclient.py send-sha $TV_SRV 4
check_output "a blocked port times out" '^timeout' tv_in "$TV_NS_C" python3 scripts/e2e/lib/netclient.py connect $TV_SRV 7001 2
sleep 2.5   # the daemon flushes the capture once a second

echo "capture: files"
FILES=$(ls "$CAP"/capture-*.pcap 2>/dev/null)
NFILES=$(echo "$FILES" | grep -c pcap)
check "rotation made several files ($NFILES)" test "$NFILES" -ge 5
check "no file is larger than the rotation size" \
  bash -c "for f in $CAP/capture-*.pcap; do [ \$(stat -c %s \$f) -le $ROTATE ] || exit 1; done"
python3 scripts/e2e/lib/pcapcount.py $FILES >"$TV_DIR/pcapcount.txt" 2>&1; PC_RC=$?
check "every file opens with libpcap (pcap_open_offline) and reads to its end, raw IP" \
  bash -c "[ $PC_RC = 0 ] && ! grep -q -e cannot-open -e error-after $TV_DIR/pcapcount.txt && grep -q 'linktype \(12\|101\)' $TV_DIR/pcapcount.txt"
TCPDUMP_OK=1; LIBPCAP_TOTAL=0; TCPDUMP_TOTAL=0
for f in $FILES; do
  a=$(awk -v f="$f" '$1==f {print $2}' "$TV_DIR/pcapcount.txt")
  b=$(tcpdump -nn -r "$f" 2>"$TV_DIR/tcpdump.err" | wc -l)
  grep -qi -e truncated -e "bad dump" "$TV_DIR/tcpdump.err" && TCPDUMP_OK=0
  [ "$a" = "$b" ] || TCPDUMP_OK=0
  LIBPCAP_TOTAL=$((LIBPCAP_TOTAL + a)); TCPDUMP_TOTAL=$((TCPDUMP_TOTAL + b))
done
check "tcpdump -r reads every file without a truncated record, same counts as libpcap ($TCPDUMP_TOTAL)" test "$TCPDUMP_OK" = 1
check_output "capture list shows the files with sequence, size, times and packet counts" \
  "^1 +[0-9.]+ ?[kKMG]?i?B +20[0-9-]+T[0-9:.]+ +20[0-9-]+T[0-9:.]+ +[1-9][0-9]* +capture-000001\.pcap" $CTL capture list

echo "capture: the daemon's accounting"
# Ring records (one per packet the data path decided) of the counted UDP flow and the TCP flow.
read -r UDP_FLOW TCP_FLOW < <(python3 - "$TV_DIR/watch.jsonl" <<'PY'
import json, sys
udp = tcp = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["kind"] == "flow-open" and r["srcPort"] == 45678: udp = r["flowId"]
    if r["kind"] == "flow-open" and r["dstPort"] == 7000: tcp = r["flowId"]
print(udp, tcp)
PY
)
count_records() {  # flow id -> "packets captured-packets"
  python3 - "$TV_DIR/watch.jsonl" "$1" <<'PY'
import json, sys
n = c = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["kind"] == "packet" and r["flowId"] == int(sys.argv[2]):
        n += 1; c += r["capture"] is not None
print(n, c)
PY
}
read -r UDP_REC UDP_CAP < <(count_records "$UDP_FLOW")
read -r TCP_REC TCP_CAP < <(count_records "$TCP_FLOW")
check "watch saw the UDP flow's $((2*N)) packets, each with a capture location ($UDP_REC, $UDP_CAP)" \
  test "$UDP_REC" = $((2*N)) -a "$UDP_CAP" = $((2*N))
check "watch saw the TCP flow's packets, each captured ($TCP_REC, $TCP_CAP)" test "$TCP_REC" -gt 100 -a "$TCP_REC" = "$TCP_CAP"
CAPTURED_TOTAL=$(python3 -c "
import json; print(sum(1 for l in open('$TV_DIR/watch.jsonl') if json.loads(l)['kind']=='packet' and json.loads(l)['capture']))")
check "capture files hold exactly the packets the ring reported captured ($CAPTURED_TOTAL vs $LIBPCAP_TOTAL)" \
  test "$CAPTURED_TOTAL" = "$LIBPCAP_TOTAL"

echo "capture: extract"
check_output "extract the UDP flow" "^wrote $((2*N)) packet" $CTL capture extract --flow "$UDP_FLOW" -o "$TV_DIR/udp.pcap"
check_output "the extract opens with libpcap and has $((2*N)) packets" " $((2*N)) linktype" python3 scripts/e2e/lib/pcapcount.py "$TV_DIR/udp.pcap"
check_output "and only that flow's packets" '^0$' bash -c "tcpdump -nn -r $TV_DIR/udp.pcap 'not (udp port 45678 and udp port 7003)' 2>/dev/null | wc -l"
check_output "extract with a BPF filter: only the client's datagrams" "^wrote $N packet" \
  $CTL capture extract --flow "$UDP_FLOW" -o "$TV_DIR/udp-out.pcap" --filter "src host $TV_C_TUN"
check_output "extract the TCP flow across rotations: $TCP_REC packets" "^wrote $TCP_REC packet" \
  $CTL capture extract --flow "$TCP_FLOW" -o "$TV_DIR/tcp.pcap"
check_output "a bad BPF filter is a usage error" 'invalid BPF filter' \
  $CTL capture extract --flow "$UDP_FLOW" -o "$TV_DIR/x.pcap" --filter "bogus bogus"
check_exit "an unknown flow is exit 1" 1 $CTL capture extract --flow 999999 -o "$TV_DIR/x.pcap"

echo "capture: watch output"
# (grep the files directly: check_output pipes into grep -q, which can SIGPIPE a long output)
check "watch --json shows flow-open records" grep -q '"kind":"flow-open"' "$TV_DIR/watch.jsonl"
check "watch --json shows the blocked SYNs to port 7001, with the blocking rule" python3 - "$TV_DIR/watch.jsonl" <<'PY'
import json, sys
sys.exit(0 if any(r["dstPort"] == 7001 and r["length"] == 60 and r["tcpFlags"] == "S" and r["verdict"] == "block"
                  and (r["rule"] is not None or r["default"] is True)
                  for r in map(json.loads, open(sys.argv[1]))) else 1)
PY

echo "capture: restart"
BEFORE=$(wc -l <"$TV_DIR/watch.jsonl")
kill "$TV_GW_PID"; wait "$TV_GW_PID" 2>/dev/null
tv_gateway_tunneld_up || tv_bad "tunneld restarts"
wait_for 45 tv_in "$TV_NS_C" ping -c1 -W1 $TV_SRV
tv_in "$TV_NS_C" ping -c5 -i0.2 -q $TV_SRV >/dev/null 2>&1
sleep 1
check "watch is still running after the restart" kill -0 $WATCH
check_output "and says it re-attached" 're-attached to the new live feed' cat "$TV_DIR/watch.err"
AFTER=$(wc -l <"$TV_DIR/watch.jsonl")
check "and prints the new daemon's records ($BEFORE -> $AFTER lines)" bash -c "tail -n +$((BEFORE+1)) $TV_DIR/watch.jsonl | grep -q '\"kind\":\"packet\"'"
kill -INT $WATCH; wait $WATCH; RC=$?
check "watch exits 0 on SIGINT" test "$RC" = 0
check_output "watch piped (not --json) prints one line per record" 'packet out alice icmp 10\.99\.0\.2 > 198\.19\.0\.2 len 84 allow' \
  timeout 10 bash -c "(sleep 1; ip netns exec $TV_NS_C ping -c3 -i0.2 -q $TV_SRV >/dev/null) & $CTL watch --count=3"

echo "capture: off"
check_output "capture off" '^capture off' $CTL capture off
sleep 3
SIZE1=$(cat "$CAP"/capture-*.pcap | wc -c)
tv_in "$TV_NS_C" ping -c5 -i0.2 -q $TV_SRV >/dev/null 2>&1
sleep 1.5
SIZE2=$(cat "$CAP"/capture-*.pcap | wc -c)
check "with capture off nothing more is written ($SIZE1 = $SIZE2)" test "$SIZE1" = "$SIZE2"
check "and the daemon logged it" grep -q 'capture: off' "$TV_DIR/tunneld.log"

tv_summary
