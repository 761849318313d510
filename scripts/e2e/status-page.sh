#!/usr/bin/env bash
# End to end: the per-peer status page (StatusListen = 10.99.0.1:80; docs/limits.md "Status page").
# alice (free) and bob (premium) are two wireguard-go interfaces in the client namespace (bob's
# traffic leaves by source routing, as in session.sh). Checks: curl through the tunnel from each
# shows only its own name and state (the other's name nowhere in the body), /status.json parses
# with the right peer and tier, no query selects another peer, 404/405/HEAD, the page is
# unreachable from the server namespace (outside the tunnel), a packet from alice's tunnel with
# bob's address cannot read bob's page (cryptokey routing drops it, counted), `tunnelctl status`
# shows the page's counters, a StatusListen address that is not the interface's is refused at
# start (and kept out by a reload), and a reload moves the page to another port or turns it off.
# Needs root; ~25 s.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/topology.sh
source scripts/lib/check.sh
trap tv_cleanup EXIT
CTL="$TV_TUNNELCTL --config $TV_DIR/tunneld.conf"
TV_FREE_SESSION=10m TV_FREE_PAUSE=1h TV_WATCHDOG=1s
export TV_FREE_SESSION TV_FREE_PAUSE TV_WATCHDOG
BOB_TUN=$TV_BOB_TUN
PAGE=http://$TV_GW_TUN/
JSON=http://$TV_GW_TUN/status.json

# curl from alice's / bob's tunnel address (source routing picks the interface); -sS: errors on stderr.
alice_get() { tv_in "$TV_NS_C" curl -sS --max-time 5 --interface $TV_C_TUN "$@"; }
bob_get() { tv_in "$TV_NS_C" curl -sS --max-time 5 --interface $BOB_TUN "$@"; }
gateway_up() { tv_gateway_tunneld_up && TV_PIDS+=("$TV_GW_PID"); }
# The body of $2 fetched by $1 (alice_get/bob_get) into $TV_DIR/$3; prints the HTTP status.
fetch() { "$1" -o "$TV_DIR/$3" -w '%{http_code}' "$2"; }
# json_field FILE KEY: one top-level field of a /status.json body.
json_field() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print("null" if v is None else v)' "$1" "$2"; }
# no_word FILE WORD: WORD (any case) is nowhere in FILE.
no_word() { ! grep -qi -- "$2" "$1"; }
# What alice gets when every request field names bob: a query, headers, a cookie.
alice_asks_for_bob() {
  alice_get -o "$TV_DIR/q.json" -H 'X-Peer: bob' -H "X-Forwarded-For: $BOB_TUN" -b 'peer=bob' "$JSON?peer=bob" \
    && json_field "$TV_DIR/q.json" peer
}
alice_page_for_bob_has_no_bob() { alice_get -H 'X-Peer: bob' -b 'peer=bob' -o "$TV_DIR/q.html" "$PAGE?peer=bob" && no_word "$TV_DIR/q.html" bob; }
bob_peer() { bob_get -o "$TV_DIR/bob2.json" "$JSON" && json_field "$TV_DIR/bob2.json" peer; }
# Outside the tunnel: curl must fail (connection refused or timed out), so these succeed then.
unreachable_outside() { ! ip netns exec "$TV_NS_S" curl -sS --max-time 3 -o "$TV_DIR/outside.txt" "$PAGE" 2>"$TV_DIR/outside.err"; }
unreachable_underlay() { ! ip netns exec "$TV_NS_C" curl -sS --max-time 3 -o /dev/null "http://$TV_GW_UNDERLAY/"; }
# From the gateway itself (not a peer's address): refused, or 403 with nothing about any peer.
gateway_itself() {
  local code
  code=$(ip netns exec "$TV_NS_G" curl -sS --max-time 3 -o "$TV_DIR/self.txt" -w '%{http_code}' "$PAGE" 2>/dev/null) || return 0
  echo "HTTP $code"; [ "$code" = 403 ] && no_word "$TV_DIR/self.txt" alice && no_word "$TV_DIR/self.txt" bob
}
spoof_not_bob() { ! grep -q '"peer" : "bob"' <<<"$SPOOF"; }
spoofed_drops() {
  $CTL status --json | python3 -c 'import json,sys; d=json.load(sys.stdin)["drops"]; print(sum(v for k,v in d.items() if "spoof" in k or "allowed" in k))'
}

tv_topology_up
tv_tunneld_config e2e free
sed -i "/^Address = /a StatusListen = $TV_GW_TUN:80" "$TV_DIR/tunneld.conf"
tv_bob_peer premium

echo "status-page: StatusListen must be an address of the interface"
sed "s/^StatusListen = .*/StatusListen = 10.99.0.77:80/" "$TV_DIR/tunneld.conf" >"$TV_DIR/bad.conf"
check_exit "tunneld --check-config refuses StatusListen = 10.99.0.77:80 (exit 1)" 1 "$TV_TUNNELD" --check-config --config "$TV_DIR/bad.conf"
check_output "and says which key, which value and what to write instead" \
  'StatusListen = 10\.99\.0\.77:80 in \[Interface\] is not an address of interface .*set StatusListen = 10\.99\.0\.1:80' \
  "$TV_TUNNELD" --check-config --config "$TV_DIR/bad.conf"

gateway_up || { tv_bad "tunneld starts"; tv_summary; exit 1; }
tv_client_up 0
TV_PIDS+=("$TV_WG_C_PID")  # spawned in $(…) by tv_client_up: remember it for the cleanup
tv_bob_up

echo "status-page: each peer sees its own page"
check "alice's tunnel is up" tv_wait_tunnel
check "bob's tunnel is up" wait_for 10 tv_in "$TV_NS_C" ping -c1 -W1 -I $BOB_TUN $TV_SRV
check_output "the log says where the page is served" "status page: serving http://$TV_GW_TUN:80/" cat "$TV_DIR/tunneld.log"
check_output "alice: GET / is 200" '^200$' fetch alice_get "$PAGE" alice.html
check_output "alice's page names alice" '<h1>alice</h1>' cat "$TV_DIR/alice.html"
check_output "alice's page shows her tier" '<tr><th>Tier</th><td>free</td></tr>' cat "$TV_DIR/alice.html"
check_output "alice's page shows her session time left" '<tr><th>Session time left</th><td>[0-9]+m[0-9]+s</td></tr>' cat "$TV_DIR/alice.html"
check "alice's page does not contain 'bob' anywhere" no_word "$TV_DIR/alice.html" bob
check_output "alice's page is a phone page that reloads itself, without script" 'http-equiv="refresh" content="30"' cat "$TV_DIR/alice.html"
check "alice's page has no <script>" no_word "$TV_DIR/alice.html" '<script' 
check_output "bob: GET / is 200" '^200$' fetch bob_get "$PAGE" bob.html
check_output "bob's page names bob" '<h1>bob</h1>' cat "$TV_DIR/bob.html"
check_output "bob's page shows premium" '<tr><th>Tier</th><td>premium</td></tr>' cat "$TV_DIR/bob.html"
check "bob's page does not contain 'alice' anywhere" no_word "$TV_DIR/bob.html" alice
check_output "alice: /status.json is 200" '^200$' fetch alice_get "$JSON" alice.json
check_output "alice's JSON parses: peer alice" '^alice$' json_field "$TV_DIR/alice.json" peer
check_output "alice's JSON: tier free" '^free$' json_field "$TV_DIR/alice.json" tier
check_output "alice's JSON: connected" '^connected$' json_field "$TV_DIR/alice.json" state
check_output "alice's JSON: her window ends at an ISO UTC time" '^20[0-9-]+T[0-9:.]+Z$' json_field "$TV_DIR/alice.json" windowEndsAt
check "alice's JSON does not contain 'bob'" no_word "$TV_DIR/alice.json" bob
check_output "bob: /status.json is 200" '^200$' fetch bob_get "$JSON" bob.json
check_output "bob's JSON parses: peer bob" '^bob$' json_field "$TV_DIR/bob.json" peer
check_output "bob's JSON: tier premium" '^premium$' json_field "$TV_DIR/bob.json" tier
check "bob's JSON does not contain 'alice'" no_word "$TV_DIR/bob.json" alice

# A number, not a check: 100 GETs of /status.json over one keep-alive connection from alice.
MANY=(); for _ in $(seq 100); do MANY+=(-o /dev/null "$JSON"); done
TIMES=$(alice_get -w '%{time_total}\n' "${MANY[@]}" 2>/dev/null)
echo "  info  100 GETs of /status.json through alice's tunnel: $(printf '%s\n' "$TIMES" | python3 -c 'import sys; t=[float(x) for x in sys.stdin if x.strip()]; print("%d answered, mean %.2f ms, max %.2f ms" % (len(t), 1000*sum(t)/max(1,len(t)), 1000*max(t or [0])))')"

echo "status-page: nothing the client sends chooses the peer"
check_output "alice asking /status.json?peer=bob (header X-Peer: bob, cookie peer=bob) still gets alice" '^alice$' alice_asks_for_bob
check "alice asking /?peer=bob sees no 'bob' in the page" alice_page_for_bob_has_no_bob
check_output "a path of no page is 404 with a hint" '^404$' fetch alice_get "http://$TV_GW_TUN/bob" nope.txt
check_output "the 404 names the pages" '/status.json' cat "$TV_DIR/nope.txt"
check_output "POST is 405" '^405$' alice_get -o /dev/null -w '%{http_code}' -X POST "$PAGE"
check_output "DELETE is 405" '^405$' alice_get -o /dev/null -w '%{http_code}' -X DELETE "$JSON"
check_output "a request body is refused (413, never kept)" '^413$' alice_get -o /dev/null -w '%{http_code}' --data x "$PAGE"
check_output "HEAD is 200" 'HTTP/1.1 200' alice_get -I "$PAGE"

echo "status-page: unreachable from outside the tunnel"
check "from the server namespace (routes 10.99.0.0/24 via the gateway) the page is unreachable" unreachable_outside
check_output "the port is closed there although 10.99.0.1 is local (SO_BINDTODEVICE): refused, not 403" \
  'Connection refused|Could not connect|Failed to connect' cat "$TV_DIR/outside.err"
check "and nothing about any peer came back" bash -c "! grep -qiE 'alice|bob' '$TV_DIR/outside.txt' 2>/dev/null"
check "nor on the gateway's underlay address" unreachable_underlay
check "from the gateway's own namespace: refused or 403, never a page" gateway_itself

echo "status-page: a spoofed inner source (bob's address in alice's tunnel) cannot read bob's page"
BEFORE=$(spoofed_drops)
tv_in "$TV_NS_C" ip rule add from $BOB_TUN to $TV_GW_TUN table 78 priority 100
tv_in "$TV_NS_C" ip route add default dev "$TV_WG_C" table 78
check_output "the spoofed packets leave by alice's interface" "dev $TV_WG_C" tv_in "$TV_NS_C" ip route get $TV_GW_TUN from $BOB_TUN
SPOOF_RC=0
SPOOF=$(tv_in "$TV_NS_C" curl -sS --max-time 4 --interface $BOB_TUN "$JSON" 2>&1) || SPOOF_RC=$?
check "curl from bob's address over alice's tunnel fails (rc $SPOOF_RC)" test "$SPOOF_RC" -ne 0
check "and never shows bob's page" spoof_not_bob
AFTER=$(spoofed_drops)
check "tunneld counted the spoofed packets as drops ($BEFORE -> $AFTER)" test "$AFTER" -gt "$BEFORE"
tv_in "$TV_NS_C" ip rule del from $BOB_TUN to $TV_GW_TUN table 78 priority 100
check_output "without the spoofing rule bob reads his own page again" '^bob$' bob_peer

echo "status-page: tunnelctl status"
check_output "tunnelctl status shows the page's counters" "^status page: http://$TV_GW_TUN/, [1-9][0-9]* request\(s\), [0-9]+ refused" $CTL status
check_output "tunnelctl status --json: statusPage with its address and port" '"address" : "10\.99\.0\.1"' $CTL status --json
check "no status page errors in the log" no_word "$TV_DIR/tunneld.log" 'status page: cannot' 

echo "status-page: a reload moves or stops the page (no restart)"
# The gateway's interface is up, so 8080 on its address is free.
sed -i "s/^StatusListen = .*/StatusListen = $TV_GW_TUN:8080/" "$TV_DIR/tunneld.conf"
check "tunnelctl reload applies StatusListen = $TV_GW_TUN:8080" $CTL reload
check_output "the log says the page moved" "status page: moved from $TV_GW_TUN:80 to $TV_GW_TUN:8080" cat "$TV_DIR/tunneld.log"
check_output "alice reads her page on the new port" '^alice$' bash -c \
  "ip netns exec $TV_NS_C curl -sS --max-time 5 --interface $TV_C_TUN -o '$TV_DIR/moved.json' http://$TV_GW_TUN:8080/status.json && python3 -c 'import json; print(json.load(open(\"$TV_DIR/moved.json\"))[\"peer\"])'"
check "the old port is closed" bash -c "! ip netns exec $TV_NS_C curl -sS --max-time 3 --interface $TV_C_TUN -o /dev/null $PAGE"
check_output "tunnelctl status shows the new port" "^status page: http://$TV_GW_TUN:8080/" $CTL status
sed -i "s/^StatusListen = .*/StatusListen = 10.99.0.77:80/" "$TV_DIR/tunneld.conf"
check_output "a reload with a StatusListen that is not the interface's warns and keeps the page" \
  'StatusListen = 10\.99\.0\.77:80 in \[Interface\] is not an address.*the status page is unchanged' $CTL reload
check_output "alice still reads her page on 8080" '^200$' alice_get -o /dev/null -w '%{http_code}' "http://$TV_GW_TUN:8080/status.json"
sed -i "s/^StatusListen = .*/StatusListen = off/" "$TV_DIR/tunneld.conf"
check "tunnelctl reload applies StatusListen = off" $CTL reload
check_output "the log says the page stopped" "status page: stopped serving on $TV_GW_TUN:8080" cat "$TV_DIR/tunneld.log"
check "the page is gone" bash -c "! ip netns exec $TV_NS_C curl -sS --max-time 3 --interface $TV_C_TUN -o /dev/null http://$TV_GW_TUN:8080/"
check "tunnelctl status has no status page line" bash -c "! $CTL status | grep -q '^status page:'"

tv_summary
