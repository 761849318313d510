# Network-namespace topology shared by the end-to-end tests, the demo and the benchmarks.
# Source it; it defines functions and variables, runs nothing by itself.
#
#   client ns (wireguard-go)  ──veth 198.18.0.0/30──▶  gateway ns (tunneld or wireguard-go)
#        tunnel 10.99.0.2, fd99::2                       tunnel 10.99.0.1/24, fd99::1/64
#                                                         ──veth 198.19.0.0/24, fd98::/64──▶ server ns
#                                                                                 198.19.0.2, fd98::2
# Every name carries TV_ID (default: this shell's pid) so parallel runs never collide, and
# tv_cleanup removes exactly what was made here (namespaces, sockets, processes it started).

TV_ID=${TV_ID:-$$}
TV_NS_C=tvc$TV_ID; TV_NS_G=tvg$TV_ID; TV_NS_S=tvs$TV_ID
TV_WG_C=tvwc$TV_ID          # client's wireguard-go interface
TV_IF_G=tvg$TV_ID            # gateway's tunnel interface (tunneld or wireguard-go)
TV_WG_B=tvwb$TV_ID          # bob's wireguard-go interface (a second client; tv_bob_peer, tv_bob_up)
TV_BOB_TUN=10.99.0.3
TV_GW_UNDERLAY=198.18.0.1; TV_C_UNDERLAY=198.18.0.2
TV_GW_LAN=198.19.0.1; TV_SRV=198.19.0.2; TV_GW_LAN6=fd98::1; TV_SRV6=fd98::2
TV_GW_TUN=10.99.0.1; TV_C_TUN=10.99.0.2; TV_GW_TUN6=fd99::1; TV_C_TUN6=fd99::2
TV_PORT=51820
TV_PIDS=()
TV_DIR=${TV_DIR:-$(mktemp -d /tmp/tunnelvision-e2e.XXXXXX)}
mkdir -p "$TV_DIR"

tv_log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
tv_in() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

# Starts a background command inside a namespace and remembers its pid for cleanup; the pid is
# also left in TV_LAST_PID. Never call it in $(…): the pid would be recorded in a subshell only.
tv_spawn() {
  local ns=$1 log=$2; shift 2
  ip netns exec "$ns" "$@" >"$log" 2>&1 &
  TV_LAST_PID=$!
  TV_PIDS+=($!)
}

tv_cleanup() {
  local p
  # Processes started here, then anything still inside our namespaces (started by them).
  for ns in "$TV_NS_C" "$TV_NS_G" "$TV_NS_S"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do TV_PIDS+=("$p"); done
  done
  for p in "${TV_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 0.3
  for p in "${TV_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  TV_PIDS=()
  for ns in "$TV_NS_C" "$TV_NS_G" "$TV_NS_S"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -f "/var/run/wireguard/$TV_WG_C.sock" "/var/run/wireguard/$TV_IF_G.sock" "/var/run/wireguard/$TV_WG_B.sock"
  rm -rf "/dev/shm/tunnelvision-run-$TV_ID" "/dev/shm/tunnelvision-run-$TV_ID-client"
  [ -n "${TV_KEEP_DIR:-}" ] || rm -rf "$TV_DIR"
}

# Namespaces, veths, addresses, routes and forwarding; no tunnel yet.
tv_topology_up() {
  ip netns add "$TV_NS_C"; ip netns add "$TV_NS_G"; ip netns add "$TV_NS_S"
  for ns in "$TV_NS_C" "$TV_NS_G" "$TV_NS_S"; do tv_in "$ns" ip link set lo up; done
  ip link add vc$TV_ID netns "$TV_NS_C" type veth peer name vgc$TV_ID netns "$TV_NS_G"
  ip link add vs$TV_ID netns "$TV_NS_S" type veth peer name vgs$TV_ID netns "$TV_NS_G"
  tv_in "$TV_NS_C" ip addr add $TV_C_UNDERLAY/30 dev vc$TV_ID
  tv_in "$TV_NS_G" ip addr add $TV_GW_UNDERLAY/30 dev vgc$TV_ID
  tv_in "$TV_NS_G" ip addr add $TV_GW_LAN/24 dev vgs$TV_ID
  tv_in "$TV_NS_G" ip -6 addr add $TV_GW_LAN6/64 dev vgs$TV_ID nodad
  tv_in "$TV_NS_S" ip addr add $TV_SRV/24 dev vs$TV_ID
  tv_in "$TV_NS_S" ip -6 addr add $TV_SRV6/64 dev vs$TV_ID nodad
  tv_in "$TV_NS_C" ip link set vc$TV_ID up
  tv_in "$TV_NS_G" ip link set vgc$TV_ID up
  tv_in "$TV_NS_G" ip link set vgs$TV_ID up
  tv_in "$TV_NS_S" ip link set vs$TV_ID up
  tv_in "$TV_NS_S" ip route add 10.99.0.0/24 via $TV_GW_LAN
  tv_in "$TV_NS_S" ip -6 route add fd99::/64 via $TV_GW_LAN6
  tv_in "$TV_NS_G" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
  # TV_GRO=on: generic receive offload on the gateway's two veths, as a router's physical NICs
  # have it by default (a veth has it off). Applies to whichever gateway runs.
  if [ "${TV_GRO:-off}" = on ]; then
    tv_in "$TV_NS_G" ethtool -K vgc$TV_ID gro on
    tv_in "$TV_NS_G" ethtool -K vgs$TV_ID gro on
  fi
  tv_keys
}

tv_keys() {
  TV_C_PRIV=$(wg genkey); TV_C_PUB=$(echo "$TV_C_PRIV" | wg pubkey)
  TV_G_PRIV=$(wg genkey); TV_G_PUB=$(echo "$TV_G_PRIV" | wg pubkey)
  echo "$TV_C_PRIV" >"$TV_DIR/client.key"; echo "$TV_G_PRIV" >"$TV_DIR/gateway.key"
  chmod 600 "$TV_DIR"/*.key
}

# The client: wireguard-go in the client namespace, peer = the gateway, routes to the server LAN.
tv_client_up() {
  local keepalive=${1:-0}
  tv_spawn "$TV_NS_C" "$TV_DIR/client-wireguard-go.log" env WG_PROCESS_FOREGROUND=1 wireguard-go -f "$TV_WG_C"
  TV_WG_C_PID=$TV_LAST_PID
  for _ in $(seq 50); do [ -S "/var/run/wireguard/$TV_WG_C.sock" ] && break; sleep 0.1; done
  tv_in "$TV_NS_C" wg set "$TV_WG_C" private-key "$TV_DIR/client.key" \
      peer "$TV_G_PUB" endpoint $TV_GW_UNDERLAY:$TV_PORT persistent-keepalive "$keepalive" \
      allowed-ips 10.99.0.0/24,fd99::/64,198.19.0.0/24,fd98::/64
  tv_in "$TV_NS_C" ip addr add $TV_C_TUN/24 dev "$TV_WG_C"
  tv_in "$TV_NS_C" ip -6 addr add $TV_C_TUN6/64 dev "$TV_WG_C" nodad
  tv_in "$TV_NS_C" ip link set "$TV_WG_C" mtu 1420 up
  tv_in "$TV_NS_C" ip route add 198.19.0.0/24 dev "$TV_WG_C"
  tv_in "$TV_NS_C" ip -6 route add fd98::/64 dev "$TV_WG_C"
}

# The client as tunneld instead of wireguard-go (benchmarks: the same faster client for both
# gateways, issue 18): interface $TV_WG_C with the client's key and tunnel address, one premium
# peer = the gateway (Endpoint set, so tunneld initiates), policy "allow everything", routes to the
# server LAN. $1 = taskset CPU list (optional). Leaves the pid in TV_CLIENT_PID.
tv_client_tunneld_up() {
  local cpus=${1:-} d=$TV_DIR/client
  mkdir -p "$d/state" "$d/policies" "/dev/shm/tunnelvision-run-$TV_ID-client"
  ln -sfn "/dev/shm/tunnelvision-run-$TV_ID-client" "$d/run"
  printf 'default allow\ndefault in allow\n' >"$d/policies/10-client.rules"
  cat >"$d/tunneld.conf" <<CONF
[Interface]
Name = $TV_WG_C
PrivateKeyFile = $TV_DIR/client.key
ListenPort = $((TV_PORT + 1))
Address = $TV_C_TUN/24, $TV_C_TUN6/64
MTU = 1420
StateDirectory = $d/state
RuntimeDirectory = $d/run
PolicyDirectory = $d/policies

[Peer]
Name = gateway
PublicKey = $TV_G_PUB
Endpoint = $TV_GW_UNDERLAY:$TV_PORT
AllowedIPs = 10.99.0.0/24, fd99::/64, 198.19.0.0/24, fd98::/64
Tier = premium
CONF
  tv_spawn "$TV_NS_C" "$TV_DIR/client-tunneld.log" ${cpus:+taskset -c "$cpus"} "$TV_TUNNELD" --config "$d/tunneld.conf" --foreground
  TV_CLIENT_PID=$TV_LAST_PID
  for _ in $(seq 100); do [ -S "$d/run/control.sock" ] && break; sleep 0.1; done
  [ -S "$d/run/control.sock" ] || { tv_log "client tunneld did not start:"; cat "$TV_DIR/client-tunneld.log" >&2; return 1; }
  # tunneld routes its peers' AllowedIPs itself; replace keeps this idempotent either way.
  tv_in "$TV_NS_C" ip route replace 198.19.0.0/24 dev "$TV_WG_C"
  tv_in "$TV_NS_C" ip -6 route replace fd98::/64 dev "$TV_WG_C"
}

# bob, a second client in the client namespace: his own key ($TV_DIR/bob.key, public key in
# TV_BOB_PUB) and wireguard-go interface ($TV_WG_B) with address $TV_BOB_TUN. Packets from that
# address leave by his interface (policy routing, table 77), so `ping -I $TV_BOB_TUN` and
# `curl --interface $TV_BOB_TUN` are bob's.
# tv_bob_peer [TIER]: his key, and his [Peer] (Name = bob, Tier TIER, default premium) appended
# to $TV_DIR/tunneld.conf.
tv_bob_peer() {
  local tier=${1:-premium} priv
  priv=$(wg genkey); TV_BOB_PUB=$(echo "$priv" | wg pubkey)
  echo "$priv" >"$TV_DIR/bob.key"; chmod 600 "$TV_DIR/bob.key"
  printf '\n[Peer]\nName = bob\nPublicKey = %s\nAllowedIPs = %s/32\nTier = %s\n' "$TV_BOB_PUB" $TV_BOB_TUN "$tier" \
    >>"$TV_DIR/tunneld.conf"
}
# tv_bob_up [KEEPALIVE]: starts his interface (persistent keepalive, default 0 = off).
tv_bob_up() {
  local keepalive=${1:-0}
  tv_spawn "$TV_NS_C" "$TV_DIR/bob-wireguard-go.log" env WG_PROCESS_FOREGROUND=1 wireguard-go -f "$TV_WG_B"
  for _ in $(seq 50); do [ -S "/var/run/wireguard/$TV_WG_B.sock" ] && break; sleep 0.1; done
  tv_in "$TV_NS_C" wg set "$TV_WG_B" private-key "$TV_DIR/bob.key" \
      peer "$TV_G_PUB" endpoint $TV_GW_UNDERLAY:$TV_PORT allowed-ips 0.0.0.0/0 persistent-keepalive "$keepalive"
  tv_in "$TV_NS_C" ip addr add $TV_BOB_TUN/32 dev "$TV_WG_B"
  tv_in "$TV_NS_C" ip link set "$TV_WG_B" mtu 1420 up
  tv_in "$TV_NS_C" ip rule add from $TV_BOB_TUN table 77
  tv_in "$TV_NS_C" ip route add default dev "$TV_WG_B" table 77
  tv_in "$TV_NS_C" sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
      "net.ipv4.conf.$TV_WG_B.rp_filter=0"
}

# The rival gateway: wireguard-go in the gateway namespace with the same keys and addresses.
tv_gateway_wggo_up() {
  tv_spawn "$TV_NS_G" "$TV_DIR/gateway-wireguard-go.log" env WG_PROCESS_FOREGROUND=1 wireguard-go -f "$TV_IF_G"
  TV_GW_PID=$TV_LAST_PID
  for _ in $(seq 50); do [ -S "/var/run/wireguard/$TV_IF_G.sock" ] && break; sleep 0.1; done
  tv_in "$TV_NS_G" wg set "$TV_IF_G" private-key "$TV_DIR/gateway.key" listen-port $TV_PORT \
      peer "$TV_C_PUB" allowed-ips $TV_C_TUN/32,$TV_C_TUN6/128
  tv_in "$TV_NS_G" ip addr add $TV_GW_TUN/24 dev "$TV_IF_G"
  tv_in "$TV_NS_G" ip -6 addr add $TV_GW_TUN6/64 dev "$TV_IF_G" nodad
  tv_in "$TV_NS_G" ip link set "$TV_IF_G" mtu 1420 up
}

# Waits until the client can ping the server through the tunnel (or fails after ~15 s).
tv_wait_tunnel() {
  for _ in $(seq 30); do
    tv_in "$TV_NS_C" ping -c1 -W1 -q $TV_SRV >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  return 1
}

# CPU time (user+system, clock ticks) of a process.
tv_cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }

# Writes a tunneld config for this topology to $TV_DIR/tunneld.conf.
#   $1 = policy set: bench (1,000 rules that never match the test traffic + default allow),
#        e2e (tcp port 7001 blocked, port 7002 rejected), or a directory to copy.
#   Extra [Peer] sections can be appended by the caller afterwards.
tv_tunneld_config() {
  local policy=${1:-e2e} tier=${2:-premium}
  mkdir -p "$TV_DIR/policies" "$TV_DIR/state"
  # RuntimeDirectory on tmpfs, as /run is on a router: the live ring is a shared file mapping, and
  # on a disk-backed file page writeback would tax every record the daemon publishes.
  mkdir -p "/dev/shm/tunnelvision-run-$TV_ID"
  ln -sfn "/dev/shm/tunnelvision-run-$TV_ID" "$TV_DIR/run"
  case "$policy" in
    bench)
      python3 - "$TV_DIR/policies/50-bench.rules" <<'PY'
import sys, random
random.seed(7)
with open(sys.argv[1], "w") as f:
    f.write("# 1,000 generated rules that the benchmark traffic never matches.\ndefault allow\n")
    for i in range(1000):
        a, b = random.randrange(1, 223), random.randrange(256)
        if a in (10, 198, 127): a = 11
        proto = random.choice(["tcp", "udp"])
        f.write(f"block proto {proto} to {a}.{b}.0.0/16 port {random.randrange(1, 65000)} name r{i}\n")
PY
      ;;
    e2e)
      cat >"$TV_DIR/policies/10-e2e.rules" <<'RULES'
# End-to-end test policy: one blocked and one rejected TCP port on the server.
default allow
default in block
allow in proto icmp,icmpv6 reason "e2e: the server may ping the client"
block proto tcp port 7001 reason "e2e: blocked port"
reject proto tcp,udp port 7002 reason "e2e: rejected port"
RULES
      ;;
    *) cp "$policy"/*.rules "$TV_DIR/policies/" ;;
  esac
  cat >"$TV_DIR/tunneld.conf" <<CONF
[Interface]
Name = $TV_IF_G
PrivateKeyFile = $TV_DIR/gateway.key
ListenPort = $TV_PORT
Address = $TV_GW_TUN/24, $TV_GW_TUN6/64
MTU = 1420
StateDirectory = $TV_DIR/state
RuntimeDirectory = $TV_DIR/run
PolicyDirectory = $TV_DIR/policies
FreeSession = ${TV_FREE_SESSION:-15m}
FreePause = ${TV_FREE_PAUSE:-45m}
WatchdogInterval = ${TV_WATCHDOG:-5s}

[Peer]
Name = alice
PublicKey = $TV_C_PUB
AllowedIPs = $TV_C_TUN/32, $TV_C_TUN6/128
Tier = $tier
CONF
}

# Starts tunneld in the gateway namespace with $TV_DIR/tunneld.conf (written by tv_tunneld_config
# unless it exists) and waits for its control socket.
tv_gateway_tunneld_up() {
  [ -f "$TV_DIR/tunneld.conf" ] || tv_tunneld_config "${1:-e2e}"
  tv_spawn "$TV_NS_G" "$TV_DIR/tunneld.log" "$TV_TUNNELD" --config "$TV_DIR/tunneld.conf" --foreground
  TV_GW_PID=$TV_LAST_PID
  for _ in $(seq 100); do [ -S "$TV_DIR/run/control.sock" ] && return 0; sleep 0.1; done
  tv_log "tunneld did not start:"; cat "$TV_DIR/tunneld.log" >&2; return 1
}
TV_TUNNELD=${TV_TUNNELD:-$PWD/.build/release/tunneld}
TV_TUNNELCTL=${TV_TUNNELCTL:-$PWD/.build/release/tunnelctl}
