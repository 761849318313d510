#!/usr/bin/env bash
# End to end: bringing an existing wg-quick server over (issue 15). Each of three real-world server
# files (Tests/ControlTests/Golden/wgquick: pivpn, wg-easy, hand-written with PostUp iptables) is
# given this run's keys (the gateway's, and the first peer's replaced by a wireguard-go client's),
# imported with `tunnelctl import -o`, checked (`tunneld --check-config` OK, every peer named from
# its comment or key), run by tunneld — its PostUp iptables lines included, in the gateway's own
# namespace — and the client connects through it and pings the gateway's tunnel address; PostDown
# undoes the iptables rules at shutdown. Needs root; ~30 s.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/topology.sh
source scripts/lib/check.sh
trap tv_cleanup EXIT

tv_topology_up
mkdir -p "$TV_DIR/policies" "$TV_DIR/state" "/dev/shm/tunnelvision-run-$TV_ID"
ln -sfn "/dev/shm/tunnelvision-run-$TV_ID" "$TV_DIR/run"
printf 'default allow\n' >"$TV_DIR/policies/10-allow.rules"
PSK=$(wg genpsk); echo "$PSK" >"$TV_DIR/psk"
tv_spawn "$TV_NS_C" "$TV_DIR/client-wireguard-go.log" env WG_PROCESS_FOREGROUND=1 wireguard-go -f "$TV_WG_C"
for _ in $(seq 50); do [ -S "/var/run/wireguard/$TV_WG_C.sock" ] && break; sleep 0.1; done
tv_in "$TV_NS_C" ip link set "$TV_WG_C" mtu 1420 up

for f in pivpn wg-easy hand; do
  echo "import: $f"
  # This run's keys and directories into the wg-quick file; prints the first peer's address and
  # the gateway's, and whether the first peer has a preshared key.
  read -r C_ADDR G_ADDR HAS_PSK < <(python3 - "Tests/ControlTests/Golden/wgquick/$f.conf" "$TV_DIR/$f.conf" <<PY
import re, sys
out, sec, peer_i, c_addr, g_addr, psk = [], None, 0, None, None, "no"
for line in open(sys.argv[1]):
    s = line.strip()
    if s.startswith("["):
        sec = s.lower(); peer_i += sec == "[peer]"
        out.append(line)
        if sec == "[interface]":
            out += ["Name = $TV_IF_G\n", "StateDirectory = $TV_DIR/state\n", "RuntimeDirectory = $TV_DIR/run\n",
                    "PolicyDirectory = $TV_DIR/policies\n"]
        continue
    k = s.split("=", 1)[0].strip().lower() if "=" in s and not s.startswith("#") else ""
    v = s.split("=", 1)[1].strip() if k else ""
    if sec == "[interface]" and k == "privatekey": line = "PrivateKey = $TV_G_PRIV\n"
    if sec == "[interface]" and k == "listenport": line = "ListenPort = $TV_PORT\n"
    if sec == "[interface]" and k == "address" and g_addr is None: g_addr = re.split(r"[,/ ]", v)[0]
    if sec == "[peer]" and peer_i == 1:
        if k == "publickey": line = "PublicKey = $TV_C_PUB\n"
        if k == "presharedkey": line = "PresharedKey = $PSK\n"; psk = "yes"
        if k == "allowedips" and c_addr is None: c_addr = re.split(r"[,/ ]", v)[0]
    out.append(line)
open(sys.argv[2], "w").write("".join(out))
print(c_addr, g_addr, psk)
PY
)
  chmod 600 "$TV_DIR/$f.conf"
  rm -f "$TV_DIR/$f.imported.conf"
  check "tunnelctl import -o writes the TunnelVision config" $TV_TUNNELCTL import "$TV_DIR/$f.conf" -o "$TV_DIR/$f.imported.conf"
  check_output "check-config OK" "OK — interface $TV_IF_G, 2 peer\(s\)" "$TV_TUNNELD" --check-config --config "$TV_DIR/$f.imported.conf"
  case $f in
    pivpn) names="phone laptop" ;;
    wg-easy) names="Alice-Phone bob" ;;
    hand) names="carol peer-NTU1NTU1" ;;
  esac
  got=$($TV_TUNNELCTL --config "$TV_DIR/$f.imported.conf" peer list --json | python3 -c 'import json,sys; print(" ".join(p["peer"] for p in json.load(sys.stdin)))')
  check "names taken from the comments (or the key): $names" test "$got" = "$names"
  cp "$TV_DIR/$f.imported.conf" "$TV_DIR/tunneld.conf"
  rm -f "$TV_DIR/run/control.sock"
  tv_gateway_tunneld_up || { tv_bad "$f: tunneld starts"; continue; }
  first=${names%% *}
  tv_in "$TV_NS_C" ip addr flush dev "$TV_WG_C"
  tv_in "$TV_NS_C" ip addr add "$C_ADDR/32" dev "$TV_WG_C"
  tv_in "$TV_NS_C" wg set "$TV_WG_C" private-key "$TV_DIR/client.key" peer "$TV_G_PUB" \
      preshared-key "$([ "$HAS_PSK" = yes ] && echo "$TV_DIR/psk" || echo /dev/null)" \
      endpoint $TV_GW_UNDERLAY:$TV_PORT allowed-ips "$G_ADDR/32"
  tv_in "$TV_NS_C" ip route replace "$G_ADDR/32" dev "$TV_WG_C"
  gw_ping() { tv_in "$TV_NS_C" ping -c1 -W1 "$G_ADDR"; }
  check "a client ($first, $C_ADDR) connects and pings the gateway ($G_ADDR)" wait_for 15 gw_ping
  check_output "tunneld shows $first's handshake" "^$first .* connected" $TV_TUNNELCTL --config "$TV_DIR/tunneld.conf" peers
  if grep -q '^PostUp = iptables' "$TV_DIR/tunneld.conf"; then
    check_output "its PostUp iptables rules are in place" "^-A FORWARD -[io] " tv_in "$TV_NS_G" iptables -S FORWARD
  fi
  kill "$TV_GW_PID"; wait "$TV_GW_PID" 2>/dev/null
  if grep -q '^PostDown = iptables' "$TV_DIR/tunneld.conf"; then
    check "PostDown removed them at shutdown" bash -c "! ip netns exec $TV_NS_G iptables -S FORWARD | grep -q -- '^-A FORWARD'"
  fi
  # The client's session is over: a fresh handshake for the next gateway.
  tv_in "$TV_NS_C" wg set "$TV_WG_C" peer "$TV_G_PUB" remove
done
tv_summary
