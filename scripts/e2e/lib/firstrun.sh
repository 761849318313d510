# A router's first run in the namespaces of scripts/lib/topology.sh, for scripts/e2e/first-run.sh
# and client-dns.sh. Source after topology.sh and check.sh; call fr_setup.
#
#   gateway ns: a default route out of its "WAN" (the server side, 198.19.0.1), dnsmasq answering
#               on port 53 of every address (server.example → 198.19.0.2, blocked.example →
#               198.19.0.3), then `tunnelctl init` and tunneld with what init wrote
#   client ns:  the phone: the client config of `tunnelctl peer add phone`, brought up by wg-quick
#               with the userspace wireguard-go (no kernel module is used), its DNS line handed to
#               a resolvconf stand-in that writes the namespace's resolv.conf
#   server ns:  scripts/e2e/lib/netserver.py on 198.19.0.2 and 198.19.0.3

FR_GW=$TV_DIR/gw                       # init's --config directory
FR_CONF=$FR_GW/tunneld.conf
FR_WGQ=tvq$TV_ID                       # wg-quick names the interface after the file
FR_CLIENT_CONF=$TV_DIR/$FR_WGQ.conf
FR_BLOCKED=198.19.0.3
CTL="$TV_TUNNELCTL --config $FR_CONF"
TOOLS="python3 scripts/e2e/lib/hosttools.py"

# Everything the setup made outside TV_DIR and the namespaces: the client namespace's resolv.conf
# (ip netns exec mounts /etc/netns/NS/resolv.conf) and wireguard-go's UAPI socket.
fr_cleanup() {
  tv_cleanup
  rm -rf "/etc/netns/$TV_NS_C"
  rm -f "/var/run/wireguard/$FR_WGQ.sock"
}

# in the client namespace, with the resolvconf stand-in first in PATH
fr_client() { tv_in "$TV_NS_C" env PATH="$TV_DIR/bin:$PATH" WG_QUICK_USERSPACE_IMPLEMENTATION=wireguard-go "$@"; }

fr_setup() {
  tv_topology_up
  tv_in "$TV_NS_S" ip addr add $FR_BLOCKED/24 dev vs$TV_ID
  tv_in "$TV_NS_G" ip route add default via $TV_SRV dev vgs$TV_ID
  tv_spawn "$TV_NS_S" "$TV_DIR/netserver.log" python3 scripts/e2e/lib/netserver.py
  # dnsmasq as a router runs it: listening on every address (no interface options), so it will
  # answer on the tunnel address once tunneld has brought it up.
  tv_spawn "$TV_NS_G" "$TV_DIR/dnsmasq.log" dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts \
    --pid-file= --user=root --log-queries --log-facility=- \
    --address=/server.example/$TV_SRV --address=/blocked.example/$FR_BLOCKED
  for _ in $(seq 50); do tv_in "$TV_NS_G" grep -q ':0035 ' /proc/net/udp && break; sleep 0.1; done

  mkdir -p "$TV_DIR/bin" "/etc/netns/$TV_NS_C" "$TV_DIR/state" "$TV_DIR/run"
  : >"/etc/netns/$TV_NS_C/resolv.conf"
  cat >"$TV_DIR/bin/resolvconf" <<SH
#!/bin/sh
# resolvconf(8) stand-in for wg-quick in the client namespace: -a IFACE takes the lines wg-quick
# pipes in as the namespace's resolv.conf (and keeps a copy to check), -d IFACE empties it.
case "\$1" in
  -a) tee "$TV_DIR/client-resolv.conf" >"/etc/netns/$TV_NS_C/resolv.conf" ;;
  -d) : >"/etc/netns/$TV_NS_C/resolv.conf" ;;
esac
SH
  chmod 755 "$TV_DIR/bin/resolvconf"

  echo "first run: tunnelctl init in the gateway namespace"
  FR_INIT_OUT=$(tv_in "$TV_NS_G" "$TV_TUNNELCTL" init --config "$FR_CONF" --endpoint $TV_GW_UNDERLAY --subnet6 fd99::/64 2>&1)
  FR_INIT_RC=$?
  printf '%s\n' "$FR_INIT_OUT" | sed 's/^/  | /'
  [ "$FR_INIT_RC" -eq 0 ] || return 1
  # Only what a shared test host needs: a unique interface name (the UAPI socket is not per
  # namespace) and state and runtime directories of its own.
  sed -i "s|^Name = tv0$|Name = $TV_IF_G|; s|^# StateDirectory = .*|StateDirectory = $TV_DIR/state|; s|^# RuntimeDirectory = .*|RuntimeDirectory = $TV_DIR/run|" "$FR_CONF"
}

# tunneld in the gateway namespace with init's configuration; waits for its control socket.
fr_gateway_up() {
  tv_spawn "$TV_NS_G" "$TV_DIR/tunneld.log" "$TV_TUNNELD" --config "$FR_CONF" --foreground
  TV_GW_PID=$TV_LAST_PID
  for _ in $(seq 100); do [ -S "$TV_DIR/run/control.sock" ] && return 0; sleep 0.1; done
  cat "$TV_DIR/tunneld.log" >&2; return 1
}

# `tunnelctl peer add phone`, its printed config brought up by wg-quick in the client namespace.
fr_phone_up() {
  tv_in "$TV_NS_G" $CTL peer add phone --keep-client-key >"$FR_CLIENT_CONF" 2>"$TV_DIR/peer-add.err" || { cat "$TV_DIR/peer-add.err"; return 1; }
  chmod 600 "$FR_CLIENT_CONF"
  fr_client wg-quick up "$FR_CLIENT_CONF" >"$TV_DIR/wg-quick.log" 2>&1 || { cat "$TV_DIR/wg-quick.log"; return 1; }
}
