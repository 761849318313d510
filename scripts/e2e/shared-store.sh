#!/usr/bin/env bash
# End to end (issue 19): two tunneld gateways in two namespaces share one PostgreSQL (a throw-away
# cluster, Unix socket only) with `Store =`; one wireguard-go client with one key (FreeSession =
# 60s, FreePause = 30s: B's window outlasts the outage). Its window runs on gateway A; when it ends the client switches its
# endpoint to gateway B and is refused there until the pause ends; `tunnelctl session` agrees on
# both gateways; the window B then opens is known to A; the database stopped for 30 s stops
# nothing (B keeps forwarding, status says UNAVAILABLE, then reachable again) and loses nothing
# (every history row B journalled is in PostgreSQL exactly once afterwards). `tunnelctl retention
# set` on A is what B's `retention show` reports (and B's own copy); during the outage `set` writes
# nothing (exit 1) and `show` names --local. Needs root; ~2.5 min.
# Gateway B's interface has its own name: the UAPI socket /var/run/wireguard/NAME.sock is one
# file system for every namespace.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/topology.sh
source scripts/lib/check.sh
source scripts/lib/pg.sh

TV_NS_B=tvh$TV_ID            # gateway B's namespace (gateway A is the topology's $TV_NS_G)
B_UNDERLAY=198.18.1.1; C_UNDERLAY_B=198.18.1.2
PG_TEST_DIR=$(mktemp -d /tmp/tunnelvision-pg.XXXXXX)   # not under TV_DIR: that is 0700 root, and the server runs as tvpg
shared_cleanup() {
  local p
  for p in $(ip netns pids "$TV_NS_B" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
  sleep 0.2
  for p in $(ip netns pids "$TV_NS_B" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
  ip netns del "$TV_NS_B" 2>/dev/null || true
  pg_cluster_stop "$PG_TEST_DIR"
  rm -f "/var/run/wireguard/tvb$TV_ID.sock"
  tv_cleanup
}
trap shared_cleanup EXIT
TV_FREE_SESSION=60s TV_FREE_PAUSE=30s TV_WATCHDOG=1s
export TV_FREE_SESSION TV_FREE_PAUSE TV_WATCHDOG
CTL_A="$TV_TUNNELCTL --config $TV_DIR/tunneld.conf"
CTL_B="$TV_TUNNELCTL --config $TV_DIR/b/tunneld.conf"

# `allowedUntil` of alice as gateway $1 (a|b) reports it.
allowed_until() {
  local ctl=$CTL_A; [ "$1" = b ] && ctl=$CTL_B
  $ctl session alice --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin).get("allowedUntil") or "")'
}
session_state() {
  local ctl=$CTL_A; [ "$1" = b ] && ctl=$CTL_B
  $ctl session alice --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin).get("state"))'
}
sql() { psql "$PG_CONNINFO" -Atc "$1"; }
ping_gw() { tv_in "$TV_NS_C" ping -c1 -W1 -q $TV_GW_TUN >/dev/null 2>&1; }
wait_ping() { for _ in $(seq "${1:-30}"); do ping_gw && return 0; sleep 0.5; done; return 1; }
# Points the client's one peer (same key on both gateways) at $1: removed and set again, so the
# next packet starts a fresh handshake there.
client_endpoint() {
  tv_in "$TV_NS_C" wg set "$TV_WG_C" peer "$TV_G_PUB" remove
  tv_in "$TV_NS_C" wg set "$TV_WG_C" peer "$TV_G_PUB" endpoint "$1:$TV_PORT" allowed-ips 10.99.0.0/24,fd99::/64,198.19.0.0/24,fd98::/64
}
# Waits (≤ $2 s) until command $1 succeeds.
eventually() { local i; for i in $(seq $(( ${2:-5} * 4 ))); do eval "$1" && return 0; sleep 0.25; done; return 1; }

pg_cluster_start "$PG_TEST_DIR" || { tv_bad "a PostgreSQL cluster starts"; tv_summary; exit 1; }
tv_topology_up
# Gateway B: its own namespace and link to the client, the same key (one peer for the client).
ip netns add "$TV_NS_B"
tv_in "$TV_NS_B" ip link set lo up
ip link add vh$TV_ID netns "$TV_NS_C" type veth peer name vgh$TV_ID netns "$TV_NS_B"
tv_in "$TV_NS_C" ip addr add $C_UNDERLAY_B/30 dev vh$TV_ID
tv_in "$TV_NS_B" ip addr add $B_UNDERLAY/30 dev vgh$TV_ID
tv_in "$TV_NS_C" ip link set vh$TV_ID up
tv_in "$TV_NS_B" ip link set vgh$TV_ID up

tv_tunneld_config e2e free
# Both gateways read the shared retention every second between prunes (default 60 s).
export TUNNELD_SETTINGS_POLL_MS=1000
STORE="Store = $PG_CONNINFO"
sed -i "/^WatchdogInterval/a $STORE\nGatewayName = gw-a" "$TV_DIR/tunneld.conf"
mkdir -p "$TV_DIR/b/state" "$TV_DIR/b/run"
sed -e "s|^StateDirectory = .*|StateDirectory = $TV_DIR/b/state|" -e "s|^RuntimeDirectory = .*|RuntimeDirectory = $TV_DIR/b/run|" \
    -e "s|^GatewayName = .*|GatewayName = gw-b|" -e "s|^Name = $TV_IF_G\$|Name = tvb$TV_ID|" "$TV_DIR/tunneld.conf" >"$TV_DIR/b/tunneld.conf"
tv_gateway_tunneld_up && TV_PIDS+=("$TV_GW_PID") || { tv_bad "gateway A starts"; tv_summary; exit 1; }
ip netns exec "$TV_NS_B" "$TV_TUNNELD" --config "$TV_DIR/b/tunneld.conf" --foreground >"$TV_DIR/b/tunneld.log" 2>&1 &
for _ in $(seq 100); do [ -S "$TV_DIR/b/run/control.sock" ] && break; sleep 0.1; done
check "gateway B starts" test -S "$TV_DIR/b/run/control.sock"
check_output "status names the shared store and this gateway (A)" "shared store: postgresql, gateway gw-a" $CTL_A status
check_output "status names the shared store and this gateway (B)" "shared store: postgresql, gateway gw-b" $CTL_B status

echo "shared: retention is one setting for every gateway"
check_output "tunnelctl retention set on A stores it in the shared store" "stored: retention in the shared store .* for every gateway" \
  $CTL_A retention set flows=3d sessions=12d
check_output "tunnelctl retention show on B reports A's value" "^flows +3d$" $CTL_B retention show
check_output "… and where it came from" "^retention: the shared store .*, every gateway's \(set on gw-a at " $CTL_B retention show
check_output "… capture stays B's own" "^capture: this gateway's state.db \(not shared\)" $CTL_B retention show
check "B's tunneld keeps a copy in its own state.db (retention show --local)" \
  eventually '$CTL_B retention show --local 2>/dev/null | grep -Eq "^sessions +12d$"' 5
check_output "B logs the shared retention it applies" "settings: retention from the shared store \(set on gw-a at .*flows=3d" cat "$TV_DIR/b/tunneld.log"
check "B's status says its retention is the shared store's, set on gw-a" \
  eventually '$CTL_B status 2>/dev/null | grep -q "retention: the shared store.s (set on gw-a at "' 5
check "A and B each set another key at once: both keys stay (compare-and-set)" \
  bash -c "$CTL_A retention set refusals=33d >/dev/null & $CTL_B retention set markers=44d >/dev/null & wait; \
           $CTL_A retention show | grep -Eq '^refusals +33d$' && $CTL_A retention show | grep -Eq '^markers +44d$'"

echo "shared: the window runs on A"
tv_client_up 0
TV_PIDS+=("$TV_WG_C_PID")
check "the client's traffic flows through gateway A" wait_ping
check_output "the window is in PostgreSQL, opened by gw-a (epoch 1)" "^alice\|1\|gw-a$" sql "SELECT peer, epoch, gateway FROM tv_windows"
A_UNTIL=$(allowed_until a)
check "tunnelctl session on B reads A's window from PostgreSQL at once (no sync pass to wait for)" \
  bash -c '[ -n "$1" ] && [ "$($2 session alice --json | python3 -c "import json,sys; r=json.load(sys.stdin); print(r[\"allowedUntil\"], r[\"windowGateway\"])")" = "$1 gw-a" ]' _ "$A_UNTIL" "$CTL_B"
check_output "… and names the gateway that opened it" "disconnected, .* left in its window .*\\[window opened on gw-a\\]$" $CTL_B session alice
check "tunnelctl session --local on B: its own copy agrees within a pass" \
  eventually '[ -n "$A_UNTIL" ] && [ "$($CTL_B session alice --local --json 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)[\"allowedUntil\"] or \"\")")" = "$A_UNTIL" ]' 5
check_output "B reports the peer in its window, not connected there" "disconnected" session_state b

echo "shared: the window ends; the client moves to B and is refused until the pause ends"
until_s=$(python3 -c "import datetime,sys; print(datetime.datetime.fromisoformat(sys.argv[1].replace('Z','+00:00')).timestamp())" "$A_UNTIL")
sleep "$(python3 -c "import time; print(max(0, $until_s - time.time() + 2))")"
check "traffic through A stops at the window's end" bash -c "! ip netns exec $TV_NS_C ping -c2 -W1 -q $TV_GW_TUN"
client_endpoint $B_UNDERLAY
check "gateway B refuses the paused peer (no traffic)" bash -c "! ip netns exec $TV_NS_C ping -c3 -W1 -q $TV_GW_TUN"
check_output "B says paused" "^paused$" session_state b
check_output "B recorded the refused handshakes of the pause" "refused|pause" $CTL_B explain alice
check_output "A says paused too" "^paused$" session_state a
check_output "still one window in PostgreSQL (epoch 1)" "^1\|gw-a$" sql "SELECT epoch, gateway FROM tv_windows WHERE peer = 'alice'"
reconnect_s=$(python3 -c "print($until_s + 30)")
sleep "$(python3 -c "import time; print(max(0, $reconnect_s - time.time() + 0.5))")"
check "after the pause the client gets in through B" wait_ping 40
check_output "B opened the next window (epoch 2, gw-b)" "^2\|gw-b$" sql "SELECT epoch, gateway FROM tv_windows WHERE peer = 'alice'"
B_UNTIL=$(allowed_until b)
check "A knows B's window (session agrees)" eventually '[ -n "$B_UNTIL" ] && [ "$(allowed_until a)" = "$B_UNTIL" ]' 5

echo "shared: PostgreSQL stops for 30 s mid-traffic: nothing stops, nothing is lost"
journal_depth() { $CTL_B status --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["shared"]["journalDepth"])'; }
# Distinct UDP flows through B to its tunnel address: N sends, each from its own source port
# (SPORT_BASE+i, bound explicitly: kernel-chosen ephemeral ports can repeat within a batch, and two
# sends from one port are one flow, CI run of 2026-12-04 counted 39 of 40).
udp_flows() {
  tv_in "$TV_NS_C" python3 -c 'import socket,sys,time
n,dst,port,base=int(sys.argv[1]),sys.argv[2],int(sys.argv[3]),int(sys.argv[4])
for i in range(n):
    s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.bind(("",base+i)); s.sendto(b"x",(dst,port)); s.close(); time.sleep(0.05)' "$1" "$TV_GW_TUN" "$2" "$3"
}
pg_cluster_pause "$PG_TEST_DIR"
OUTAGE_START=$(date +%s%3N)
check "forwarding through B goes on while the database is down" wait_ping 10
check_output "status says the shared store is UNAVAILABLE" "shared store: postgresql UNAVAILABLE since" bash -c "sleep 2; $CTL_B status"
check_exit "tunnelctl flows cannot read the shared store: exit 1, never an empty list" 1 $CTL_A flows
check_output "it names the store and why" "cannot read the shared store host=.*: PostgreSQL connect failed" $CTL_A flows
check_output "it offers --local" "own history .*: add --local" $CTL_A flows
check_output "tunnelctl flows --local reads B's own store meanwhile (no GATEWAY column)" "^ID +PEER +FLOW" $CTL_B flows --local
check_exit "tunnelctl session cannot read the window from the shared store: exit 1, never a guess" 1 $CTL_B session alice
check_output "tunnelctl session --local answers from B's copy meanwhile" "alice \\(free\\): " $CTL_B session alice --local
check_exit "tunnelctl retention set cannot reach the shared store: exit 1" 1 $CTL_A retention set flows=1d
check_output "… writes nothing and says what to do" "nothing was written: .*try again once the database answers" $CTL_A retention set flows=1d
check_output "… not even A's own copy" "^flows +3d$" $CTL_A retention show --local
check_exit "tunnelctl retention show cannot know the shared retention: exit 1" 1 $CTL_B retention show
check_output "… and offers --local" "own copy .*: add --local" $CTL_B retention show
check_output "retention show --local on B: the last shared retention B read" "^flows +3d$" $CTL_B retention show --local
check "B's status: the last shared retention, kept while the store is away" \
  eventually '$CTL_B status 2>/dev/null | grep -Eq "retention: the last shared one read \(set on gw-. at .*\), kept while the store does not answer"' 5
check_output "B logs the retention fall-back once" "^1$" bash -c "sleep 2.5; grep -c \"settings: cannot read the shared store's retention\" $TV_DIR/b/tunneld.log"
udp_flows 20 9999 41000
check_output "the outage is logged once" "^1$" grep -c "shared store (postgresql): .*enforced from memory" "$TV_DIR/b/tunneld.log"
# The session ends during the outage (kicked by the operator on B) and a new one starts: both
# rows must ship. The client notices the kick by WireGuard's timers (≈15–30 s).
$CTL_B kick alice >/dev/null 2>&1
check "after a kick during the outage the client reconnects to B" wait_ping 80
udp_flows 20 9998 42000
check_output "status shows the history journal's depth while the database is away" "^[1-9][0-9]*$" journal_depth
sleep "$(python3 -c "import time; print(max(0, $OUTAGE_START/1000 + 30 - time.time()))")"
check "still forwarding at the end of the outage" wait_ping 20
pg_cluster_resume "$PG_TEST_DIR"
check_output "status says reachable again" "shared store: postgresql, gateway gw-b, last sync" bash -c "sleep 3; $CTL_B status"
check_output "the recovery is logged" "reachable again" cat "$TV_DIR/b/tunneld.log"
check_output "the window survived the outage (epoch 2)" "^2\|gw-b$" sql "SELECT epoch, gateway FROM tv_windows WHERE peer = 'alice'"
check "the journal drains once the database is back" eventually '[ "$(journal_depth)" = 0 ]' 10
check_output "B logs that the shared retention reads again" "settings: the shared store's retention reads again" cat "$TV_DIR/b/tunneld.log"
# Every flow, session and refusal row B has is in PostgreSQL exactly once (primary key (gateway,
# id); counted against B's own store), and the outage's traffic is there: 20 + 20 flows.
local_count() { sqlite3 "$TV_DIR/b/state/state.db" "SELECT count(*) FROM $1"; }
pg_count() { sql "SELECT count(*) FROM $1 WHERE gateway = 'gw-b'"; }
for fam in flows sessions refusals markers; do
  check_output "every $fam row of gateway B is in PostgreSQL exactly once" "^$(local_count $fam)$" pg_count tv_$fam
done
check_output "the 40 flows sent during the outage shipped (dst ports 9999, 9998)" "^40$" \
  sql "SELECT count(*) FROM tv_flows WHERE gateway = 'gw-b' AND dst_port IN (9998, 9999) AND first_seen >= $OUTAGE_START"
# On a miss, say which sends are absent where: B's own store or only PostgreSQL.
if [ "$(sql "SELECT count(*) FROM tv_flows WHERE gateway = 'gw-b' AND dst_port IN (9998, 9999) AND first_seen >= $OUTAGE_START")" != 40 ]; then
  echo "  flows of the outage in PostgreSQL: $(sql "SELECT string_agg(dst_port || '/' || src_port, ' ' ORDER BY dst_port, src_port) FROM tv_flows WHERE gateway = 'gw-b' AND dst_port IN (9998, 9999)")"
  echo "  in B's store: $(sqlite3 "$TV_DIR/b/state/state.db" "SELECT group_concat(dst_port || '/' || src_port, ' ') FROM flows WHERE dst_port IN (9998, 9999)" 2>&1)"
  $CTL_B status 2>&1 | sed 's/^/  B status: /'
fi
check_output "the session the outage ended shipped with its reason" "admin-kick" \
  sql "SELECT end_reason FROM tv_sessions WHERE gateway = 'gw-b' AND peer = 'alice' AND ended_at >= $OUTAGE_START"
check_output "B's refusals of the pause shipped" "^[1-9]" sql "SELECT count(*) FROM tv_refusals WHERE gateway = 'gw-b' AND kind = 'session'"
# tunnelctl on gateway A reads every gateway's history from PostgreSQL, each row with its gateway.
check_output "tunnelctl flows on A lists B's outage flows, GATEWAY gw-b" "gw-b +alice +udp .*:9999 " $CTL_A flows
check_output "tunnelctl flows --gateway gw-b on A: every flow B recorded" "^$(local_count flows)$" \
  bash -c "$CTL_A flows --gateway gw-b --json | python3 -c 'import json,sys; r=json.load(sys.stdin); print(len(r) if all(x[\"gateway\"] == \"gw-b\" for x in r) else -1)'"
check_output "tunnelctl timeline on A shows the session B's operator kicked" "gw-b +session-end +alice +session ended \\(admin-kick\\)" \
  $CTL_A timeline --since 1h
check_output "gateway A's history is there under its own name" "^[1-9]" sql "SELECT count(*) FROM tv_sessions WHERE gateway = 'gw-a'"

echo "shared: a tier change and a disable made on gateway A apply on gateway B (propagation measured)"
ms_now() { date +%s%3N; }
tier_on_b() { $CTL_B session alice --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin).get("tier"))'; }
T=$(ms_now); $CTL_A peer tier alice premium >/dev/null
check "B applies A's tier change (tunnelctl session on B: premium)" eventually '[ "$(tier_on_b)" = premium ]' 5
echo "  measured: tier change on A seen on B after $(( $(ms_now) - T )) ms (sync pass 1 s, polled every 250 ms)"
check "premium on B: the client gets in through B whatever its window" wait_ping 40
T=$(ms_now); $CTL_A peer disable alice >/dev/null
check "B applies A's disable, although B's own config admits alice" \
  eventually 'grep -q "shared store: alice disabled on gw-a" "$TV_DIR/b/tunneld.log"' 5
echo "  measured: disable on A applied on B after $(( $(ms_now) - T )) ms (sync pass 1 s, polled every 250 ms)"
check "B refuses the disabled peer (no traffic)" bash -c "sleep 1; ! ip netns exec $TV_NS_C ping -c3 -W1 -q $TV_GW_TUN"
check_output "tunnelctl explain on B says why: disabled on gw-a, shared" "alice: refused — disabled on gw-a at .*shared by every gateway" \
  $CTL_B explain alice
# The client notices the cut session by WireGuard's timers (≈15 s without an answer), then its
# handshakes are refused: recorded on B with reason disabled.
check "B recorded the refused handshakes with reason disabled" \
  eventually '[ "$(sqlite3 "$TV_DIR/b/state/state.db" "SELECT count(*) FROM refusals WHERE peer = '"'alice'"' AND reason = '"'disabled'"'")" -gt 0 ]' 40
$CTL_A peer enable alice >/dev/null
check "B applies A's enable" eventually 'grep -q "shared store: alice enabled on gw-a" "$TV_DIR/b/tunneld.log"' 5
check "after the enable the client gets in through B again" wait_ping 40
tv_summary
