#!/usr/bin/env bash
# End to end: peers without restarts (issue 15). With alice streaming through tunneld,
# `tunnelctl peer add bob` appends bob to the config and has the daemon reload; bob's printed
# client config brings a wireguard-go client up that pings through; `peer disable bob` cuts him
# within WatchdogInterval + 1 s; `peer remove bob` ends his session with reason removed; alice's
# stream never stalls more than 1 s; tunneld's pid is the same throughout; each reload reply (and
# tunneld's log line) names the change (added bob, bob disabled, bob enabled, removed bob); `peer qr bob --png`
# decodes (zbarimg) to exactly the `peer config bob` text. Peers added with `wg set` are written
# back to the config (named peer-KEYPREFIX, DefaultTier) and survive a restart; `wg set … remove`
# removes them from it; kernel routes for AllowedIPs outside the interface subnet follow every
# change (wg set, peer add/remove with a reload). Needs root; ~50 s.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/topology.sh
source scripts/lib/check.sh
trap tv_cleanup EXIT  # also removes bob's UAPI socket ($TV_WG_B, topology.sh)
CTL="$TV_TUNNELCTL --config $TV_DIR/tunneld.conf"
TV_WATCHDOG=1s; export TV_WATCHDOG
store_sql() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1], timeout=10); [print("|".join(map(str,r))) for r in c.execute(sys.argv[2])]' "$TV_DIR/state/state.db" "$1"; }

tv_topology_up
tv_tunneld_config e2e premium
sed -i "s/^\[Interface\]$/[Interface]\nPublicEndpoint = $TV_GW_UNDERLAY:$TV_PORT/" "$TV_DIR/tunneld.conf"
tv_gateway_tunneld_up || { tv_bad "tunneld starts"; tv_summary; exit 1; }
TV_PIDS+=("$TV_GW_PID"); PID0=$TV_GW_PID
tv_client_up 0
TV_PIDS+=("$TV_WG_C_PID")
check "alice's traffic flows" tv_wait_tunnel
tv_spawn "$TV_NS_C" "$TV_DIR/alice-ping.log" ping -D -i 0.05 -W1 -I $TV_C_TUN $TV_SRV

echo "peers: add bob while alice streams"
$CTL peer add bob --tier free >"$TV_DIR/bob.conf" 2>"$TV_DIR/add.err"
check "peer add bob succeeded" test -s "$TV_DIR/bob.conf"
check_output "the daemon reloaded (not a restart) and says bob was added" '^tunneld reloaded: added bob; policy generation [0-9]+$' cat "$TV_DIR/add.err"
check_output "bob's client config has the gateway as endpoint" "^Endpoint = $TV_GW_UNDERLAY:$TV_PORT" cat "$TV_DIR/bob.conf"
BOB_ADDR=$(sed -n 's/^Address = \([0-9.]*\)\/32.*/\1/p' "$TV_DIR/bob.conf")
python3 - "$TV_DIR/bob.conf" "$TV_DIR/bob.key" "$TV_DIR/bob.peer" <<'PY'
import sys
sec = None; iface = {}; peer = {}
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("["): sec = line; continue
    if "=" in line and not line.startswith("#"):
        k, v = (x.strip() for x in line.split("=", 1))
        (iface if sec == "[Interface]" else peer)[k] = v
open(sys.argv[2], "w").write(iface["PrivateKey"] + "\n")
open(sys.argv[3], "w").write(peer["PublicKey"] + "\n")
PY
chmod 600 "$TV_DIR/bob.key"
tv_spawn "$TV_NS_C" "$TV_DIR/bob-wireguard-go.log" env WG_PROCESS_FOREGROUND=1 wireguard-go -f "$TV_WG_B"
for _ in $(seq 50); do [ -S "/var/run/wireguard/$TV_WG_B.sock" ] && break; sleep 0.1; done
tv_in "$TV_NS_C" wg set "$TV_WG_B" private-key "$TV_DIR/bob.key" peer "$(cat "$TV_DIR/bob.peer")" \
    endpoint $TV_GW_UNDERLAY:$TV_PORT allowed-ips 0.0.0.0/0
tv_in "$TV_NS_C" ip addr add "$BOB_ADDR/32" dev "$TV_WG_B"
tv_in "$TV_NS_C" ip link set "$TV_WG_B" mtu 1420 up
tv_in "$TV_NS_C" ip rule add from "$BOB_ADDR" table 78
tv_in "$TV_NS_C" ip route add default dev "$TV_WG_B" table 78
bob_ping() { tv_in "$TV_NS_C" ping -c1 -W1 -I "$BOB_ADDR" $TV_SRV; }
check "bob ($BOB_ADDR) pings through with the printed config" wait_for 10 bob_ping
check_output "peer list shows bob" 'bob' $CTL peer list

echo "peers: disable, remove"
check_output "the reload reply names the disable (not 'no peer changed')" '^tunneld reloaded: bob disabled; policy generation [0-9]+$' $CTL peer disable bob
check_output "… and so does tunneld's log line" 'reload: 0 peer\(s\) added, 0 removed, 1 changed: bob disabled' cat "$TV_DIR/tunneld.log"
check "bob is cut within WatchdogInterval + 1 s" bash -c "for i in \$(seq 20); do ip netns exec $TV_NS_C ping -c1 -W0.2 -I $BOB_ADDR $TV_SRV >/dev/null 2>&1 || exit 0; sleep 0.1; done; exit 1"
check_output "his session ended disabled" 'disabled' store_sql "SELECT end_reason FROM sessions WHERE peer = 'bob' ORDER BY id DESC LIMIT 1"
check_output "the reload reply names the enable" '^tunneld reloaded: bob enabled; policy generation [0-9]+$' $CTL peer enable bob
# wireguard-go notices its dead session (~15 s) and retries its handshake every 5 s.
check "enabled again, bob pings" wait_for 30 bob_ping
check_output "the reload reply names the removal" '^tunneld reloaded: removed bob; policy generation [0-9]+$' $CTL peer remove bob
sleep 1.5
check_output "peer remove: bob's session ended removed" 'removed' store_sql "SELECT end_reason FROM sessions WHERE peer = 'bob' ORDER BY id DESC LIMIT 1"
check "bob no longer gets through" bash -c "! ip netns exec $TV_NS_C ping -c2 -W1 -I $BOB_ADDR $TV_SRV"

echo "peers: wg set is written back; routes follow the peers"
keyname() { printf 'peer-%s' "$(printf %s "$1" | cut -c1-8 | tr /+ _-)"; }
route_to() { tv_in "$TV_NS_G" ip route show "$1"; }
no_route() { [ -z "$(route_to "$1")" ]; }
DAVE_PUB=$(wg genkey | wg pubkey); DAVE=$(keyname "$DAVE_PUB")
check "wg set adds dave" tv_in "$TV_NS_G" wg set "$TV_IF_G" peer "$DAVE_PUB" allowed-ips 10.99.0.50/32,10.77.0.0/24
# (keys hold + and /: fixed-string matches)
check "the config file has his [Peer] (PublicKey)" grep -qxF "PublicKey = $DAVE_PUB" "$TV_DIR/tunneld.conf"
check_output "named $DAVE by a Name line" "^Name = $DAVE\$" cat "$TV_DIR/tunneld.conf"
check_output "with his AllowedIPs" "allowed IPs: 10.99.0.50/32, 10.77.0.0/24" $CTL peer show "$DAVE"
check_output "and the default tier (free)" "^tier: free" $CTL peer show "$DAVE"
check_output "tunneld knows him by that name" "$DAVE" $CTL peers
check_output "wg set: route 10.77.0.0/24 dev $TV_IF_G" "dev $TV_IF_G" route_to 10.77.0.0/24
check "no route for 10.99.0.50 (inside the subnet)" no_route 10.99.0.50/32
$CTL peer add erin --ip 10.88.0.5 >/dev/null 2>&1
check_output "peer add (reload): route 10.88.0.5 dev $TV_IF_G" "dev $TV_IF_G" route_to 10.88.0.5
$CTL peer remove erin >/dev/null 2>&1
check "peer remove (reload): the route is gone" no_route 10.88.0.5
tv_in "$TV_NS_G" wg set "$TV_IF_G" peer "$DAVE_PUB" remove
check "wg set … remove: dave's [Peer] left the config" bash -c "! grep -qF '$DAVE_PUB' '$TV_DIR/tunneld.conf'"
check "and his route is gone" no_route 10.77.0.0/24
FRANK_PUB=$(wg genkey | wg pubkey); FRANK=$(keyname "$FRANK_PUB")
tv_in "$TV_NS_G" wg set "$TV_IF_G" peer "$FRANK_PUB" allowed-ips 10.99.0.51/32,10.66.0.0/24
check_output "wg set adds frank ($FRANK) to the file" "^Name = $FRANK\$" cat "$TV_DIR/tunneld.conf"
check "the file still checks" "$TV_TUNNELD" --check-config --config "$TV_DIR/tunneld.conf"

echo "peers: alice was never disturbed"
check "tunneld's pid is the same throughout ($PID0)" kill -0 "$PID0"
daemon_pid() { $CTL status --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])'; }
check_output "and it is the one running" "^$PID0\$" daemon_pid
GAP=$(python3 - "$TV_DIR/alice-ping.log" <<'PY'
import re, sys
ts = [float(m.group(1)) for m in (re.match(r'^\[([0-9.]+)\] \d+ bytes from', l) for l in open(sys.argv[1])) if m]
print(f"{max(b - a for a, b in zip(ts, ts[1:])):.2f}" if len(ts) > 1 else "99")
PY
)
check "alice's stream never stalled more than 1 s (longest gap $GAP s)" python3 -c "import sys; sys.exit(0 if float('$GAP') <= 1.0 else 1)"

echo "peers: a restart keeps what wg set added"
kill "$PID0"; wait "$PID0" 2>/dev/null
tv_gateway_tunneld_up || tv_bad "tunneld starts again"
TV_PIDS+=("$TV_GW_PID")
frank_allowed() { tv_in "$TV_NS_G" wg show "$TV_IF_G" allowed-ips | grep -F "$FRANK_PUB" | grep -q "10.66.0.0/24"; }
check "after the restart wg show lists frank with his AllowedIPs" frank_allowed
check_output "under his name" "$FRANK" $CTL peers
check_output "and his route is back" "dev $TV_IF_G" route_to 10.66.0.0/24
check "alice connects to the restarted gateway" wait_for 30 tv_wait_tunnel

echo "peers: QR code"
$CTL peer add carol --keep-client-key >"$TV_DIR/carol.conf" 2>/dev/null
$CTL peer qr carol --png "$TV_DIR/carol.png" >/dev/null 2>&1
$CTL peer config carol >"$TV_DIR/carol-config.txt" 2>/dev/null
if command -v zbarimg >/dev/null; then
  zbarimg --raw -q "$TV_DIR/carol.png" >"$TV_DIR/carol-qr.txt" 2>/dev/null
  # zbarimg ends what it prints with a newline of its own: compare without trailing newlines.
  check "the QR code decodes to exactly the peer config text" python3 -c 'import sys; a, b = (open(f).read().rstrip("\n") for f in sys.argv[1:3]); sys.exit(0 if a == b and a else 1)' "$TV_DIR/carol-qr.txt" "$TV_DIR/carol-config.txt"
else
  tv_bad "zbarimg is missing (scripts/deps.sh installs zbar-tools)"
fi
tv_summary
