#!/usr/bin/env bash
# End to end: host rules decide live traffic (issue 14, docs/hosts.md). A real wireguard-go client
# talks through tunneld to servers in the server namespace: TLS (openssl s_server) by SNI, HTTP by
# Host (curl), plain TCP by the DNS name the client looked up through the tunnel, QUIC by the SNI
# of its Initial; `reject` answers with a TCP RST; `tunnelctl flows` shows each host. Needs root.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/topology.sh
source scripts/lib/check.sh
trap tv_cleanup EXIT
TOOLS="python3 scripts/e2e/lib/hosttools.py"
CTL="$TV_TUNNELCTL --config $TV_DIR/tunneld.conf"
TRACKER=198.19.0.3   # a second server address: the one the DNS server answers for tracker.test
TRACKER2=198.19.0.4  # a third: what it answers for tcp-tracker.test (asked over TCP)

tv_topology_up
tv_in "$TV_NS_S" ip addr add $TRACKER/24 dev vs$TV_ID
tv_in "$TV_NS_S" ip addr add $TRACKER2/24 dev vs$TV_ID
mkdir -p "$TV_DIR/hostpolicy"
cat >"$TV_DIR/hostpolicy/10-hosts.rules" <<'RULES'
# End-to-end policy for host rules.
default allow
default in block
allow in proto icmp,icmpv6 reason "e2e: the server may ping the client"
reject host smtp-relay.test reason "e2e: a host rule before the port rule"
reject proto tcp port 2525 reason "e2e: no SMTP, whatever the host"
block host blocked.test, ads.example.com, tracker.test, tcp-tracker.test, quic-blocked.test reason "e2e: blocked host"
reject host rejected.test reason "e2e: rejected host"
allow host ok.test port 2526 reason "e2e: a named flow to the banner server"
reject proto tcp port 2526 reason "e2e: the banner port without a name"
RULES
tv_tunneld_config "$TV_DIR/hostpolicy"
tv_gateway_tunneld_up || { tv_bad "tunneld starts"; tv_summary; exit 1; }
tv_client_up 0

# Servers: TLS on 4433, HTTP on 8080, DNS on 53, a UDP sink on 443, echo on 7004 (netserver).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=e2e.test \
  -keyout "$TV_DIR/tls.key" -out "$TV_DIR/tls.crt" >/dev/null 2>&1
# openssl s_server serves one connection at a time, and a blocked client's connection stays open on
# its side (the gateway drops the client's FIN too): one server for allow/block, one for reject.
for port in 4433 4434; do
  tv_spawn "$TV_NS_S" "$TV_DIR/s_server-$port.log" openssl s_server -accept $port -cert "$TV_DIR/tls.crt" -key "$TV_DIR/tls.key" -www -quiet
done
mkdir -p "$TV_DIR/www"; echo "hello from the server" >"$TV_DIR/www/index.html"
tv_spawn "$TV_NS_S" "$TV_DIR/http.log" python3 -m http.server 8080 --bind $TV_SRV --directory "$TV_DIR/www"
tv_spawn "$TV_NS_S" "$TV_DIR/dns.log" $TOOLS dns-server $TV_SRV tracker.test $TRACKER tcp-tracker.test $TRACKER2
tv_spawn "$TV_NS_S" "$TV_DIR/udp.log" $TOOLS udp-sink $TV_SRV 443 "$TV_DIR/quic.log"
tv_spawn "$TV_NS_S" "$TV_DIR/netserver.log" python3 scripts/e2e/lib/netserver.py
tv_spawn "$TV_NS_S" "$TV_DIR/banner.log" $TOOLS banner-server $TV_SRV 2526
tv_spawn "$TV_NS_S" "$TV_DIR/smtp.log" $TOOLS banner-server $TV_SRV 2525
wait_for 5 grep -q ready "$TV_DIR/banner.log" >/dev/null
wait_for 5 grep -q ready "$TV_DIR/smtp.log" >/dev/null
wait_for 5 grep -q ready "$TV_DIR/dns.log" >/dev/null
wait_for 5 grep -q ready "$TV_DIR/udp.log" >/dev/null
wait_for 5 grep -q ready "$TV_DIR/netserver.log" >/dev/null
check "handshake completes and the server answers ping through the tunnel" tv_wait_tunnel
wait_for 5 tv_in "$TV_NS_C" bash -c "exec 3<>/dev/tcp/$TV_SRV/8080" >/dev/null

# tls NAME [PORT]: "handshake" when the TLS handshake with SNI NAME completes, "reset" on a TCP
# RST, "no-handshake" otherwise (within 4 s).
tls() {
  local out
  out=$(tv_in "$TV_NS_C" timeout 4 openssl s_client -connect $TV_SRV:${2:-4433} -servername "$1" -brief </dev/null 2>&1)
  if grep -q 'CONNECTION ESTABLISHED' <<<"$out"; then echo handshake
  elif grep -Eqi 'errno=104|reset by peer' <<<"$out"; then echo reset
  else echo no-handshake; fi
}
# http HOST: the status code of GET / with that Host header (000: no answer within 3 s).
http() { tv_in "$TV_NS_C" curl -s -o /dev/null -w '%{http_code}\n' --max-time 3 -H "Host: $1" http://$TV_SRV:8080/; }

# The live feed from here on: each decided flow's host arrives as a flow-host record.
$CTL watch --json >"$TV_DIR/watch.jsonl" 2>"$TV_DIR/watch.err" &
WATCH_PID=$!
TV_PIDS+=("$WATCH_PID")
sleep 0.5
echo "hosts: TLS SNI"
check_output "openssl s_client -servername allowed.test completes the handshake" '^handshake$' tls allowed.test
check_output "openssl s_client -servername blocked.test is blocked (same address and port)" '^no-handshake$' tls blocked.test

echo "hosts: reject"
check_output "-servername allowed.test passes on the second server" '^handshake$' tls allowed.test 4434
check_output "-servername rejected.test is answered with a TCP RST" '^reset$' tls rejected.test 4434

check_output "a server that speaks first decides the flow reject: the client is reset, not left waiting" '^reset$' \
  tv_in "$TV_NS_C" $TOOLS banner-client $TV_SRV 2526 4

echo "hosts: decided early when no host can change the action"
# Every host gives port 2525 reject (the host rule before it rejects too): the SYN is answered
# with a RST at once. A flow that waited for its host would complete its handshake first and be
# reset only when the server's banner came ("reset", not "refused").
check_output "TCP to port 2525 (reject port after a reject host rule) is refused at once: no handshake" '^refused$' \
  tv_in "$TV_NS_C" $TOOLS banner-client $TV_SRV 2525 3
check "… the server never accepted a connection" bash -c "! grep -q accepted '$TV_DIR/smtp.log'"
check "tunnelctl refusals records it by the port rule, without a host" \
  wait_for 10 bash -c "$CTL refusals --since forever | grep 'tcp $TV_SRV:2525 ' | grep -v ' host ' | grep -q 'no SMTP, whatever the host'"
check_output "tunnelctl policy test agrees for the flow without a host" 'no SMTP, whatever the host' \
  $CTL policy test "tcp $TV_C_TUN -> $TV_SRV:2525"

echo "hosts: HTTP Host"
check_output "curl -H 'Host: www.example.com' gets 200" '^200$' http www.example.com
check_output "curl -H 'Host: ads.example.com' is blocked" '^000$' http ads.example.com

echo "hosts: DNS-learned names"
check_output "plain TCP to $TRACKER passes before any lookup" '^echoed$' tv_in "$TV_NS_C" $TOOLS echo $TRACKER 7004 3
check_output "the client resolves tracker.test through the tunnel" "^answer $TRACKER\$" tv_in "$TV_NS_C" $TOOLS resolve $TV_SRV tracker.test
check_output "plain TCP to the answered address is blocked by 'block host tracker.test'" '^timeout$' \
  tv_in "$TV_NS_C" $TOOLS echo $TRACKER 7004 3
check_output "plain TCP to another address still passes" '^echoed$' tv_in "$TV_NS_C" $TOOLS echo $TV_SRV 7004 3
check_output "plain TCP to $TRACKER2 passes before any lookup" '^echoed$' tv_in "$TV_NS_C" $TOOLS echo $TRACKER2 7004 3
check_output "the client resolves tcp-tracker.test over TCP (the answer cut over two segments)" "^answer $TRACKER2\$" \
  tv_in "$TV_NS_C" $TOOLS resolve-tcp $TV_SRV tcp-tracker.test
check_output "plain TCP to the address learned over TCP is blocked by 'block host tcp-tracker.test'" '^timeout$' \
  tv_in "$TV_NS_C" $TOOLS echo $TRACKER2 7004 3

echo "hosts: QUIC Initial SNI"
: >"$TV_DIR/quic.log"
tv_in "$TV_NS_C" $TOOLS quic-initial $TV_SRV 443 quic-blocked.test >/dev/null
sleep 0.5
check_output "a QUIC Initial naming quic-blocked.test does not reach the server" '^0$' grep -c got "$TV_DIR/quic.log"
tv_in "$TV_NS_C" $TOOLS quic-initial $TV_SRV 443 quic-ok.test >/dev/null
quic_arrived() { [ "$(grep -c got "$TV_DIR/quic.log")" -ge 1 ]; }
check "a QUIC Initial naming quic-ok.test does" wait_for 3 quic_arrived

echo "hosts: visible to the operator"
kill "$WATCH_PID" 2>/dev/null; wait "$WATCH_PID" 2>/dev/null
flow_host() {  # flow_host HOST VERDICT: watch saw a flow-host record of alice's for HOST with VERDICT
  python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["kind"] == "flow-host" and r["host"] == sys.argv[2] and r["verdict"] == sys.argv[3] and r["peer"] == "alice" and r["flowId"]:
        print("seen"); break' "$TV_DIR/watch.jsonl" "$1" "$2"
}
check_output "tunnelctl watch shows allowed.test's flow with its host (flow-host, allow)" '^seen$' flow_host allowed.test allow
check_output "… and blocked.test's, blocked" '^seen$' flow_host blocked.test block
check_output "… and ads.example.com's (HTTP Host)" '^seen$' flow_host ads.example.com block
check_output "… and the flow to the address tracker.test resolved to (its DNS name)" '^seen$' flow_host tracker.test block
check_output "tunnelctl status counts host learning" 'host learning: pending [1-9]' $CTL status
check_output "status --json has the counters" '"dns-answers" : [1-9]' $CTL status --json
for h in allowed.test blocked.test rejected.test ads.example.com tracker.test quic-blocked.test quic-ok.test; do
  check "tunnelctl flows shows $h" wait_for 10 bash -c "$CTL flows --since forever | grep -q ' $h '"
done
check "tunnelctl refusals names the host of a refused flow (ads.example.com, HTTP Host)" \
  wait_for 10 bash -c "$CTL refusals --since forever | grep -q 'tcp $TV_SRV:8080 host ads.example.com'"
check "tunnelctl refusals --json carries it" \
  wait_for 10 bash -c "$CTL refusals --since forever --json | grep -q '\"host\" : \"tracker.test\"'"
check_output "tunnelctl explain FLOW with host lists the daemon's blocked flows of that name" \
  "\(blocked\.test\) block by .*, out" $CTL explain "tcp $TV_C_TUN -> $TV_SRV:4433 host blocked.test"
check_output "tunnelctl policy test agrees: blocked by the host rule" '^verdict block' \
  $CTL policy test "tcp $TV_C_TUN -> $TV_SRV:4433 host blocked.test"
check_output "tunnelctl policy check no longer says host rules are for policy test only" 'waits up to 1 s' \
  $CTL policy check
tv_summary
