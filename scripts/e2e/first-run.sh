#!/usr/bin/env bash
# End to end: a router's first run (scripts/e2e/lib/firstrun.sh) and the default policy set.
# In the gateway namespace, with a default route and dnsmasq listening on every address:
# `tunnelctl init` chooses 10.99.0.0/24 (free there), the WAN interface, ClientDNS = the gateway's
# tunnel address (a resolver listens), writes the key (0600), the configuration and the default
# policy set, and refuses a second run; `tunneld --check-config` passes with no peers and no
# warning; tunneld starts from that configuration; the client config of `tunnelctl peer add
# phone` comes up under wg-quick (userspace wireguard-go) with its DNS line. With the default
# policy the phone reaches the gateway's status page (curl), its DNS (getent, through the
# tunnel: dnsmasq logs the phone's tunnel address) and ping (v4 and v6) and the Internet side,
# and not the gateway's other ports. Needs root; ~20 s.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/topology.sh
source scripts/lib/check.sh
source scripts/e2e/lib/firstrun.sh
trap fr_cleanup EXIT

echo "first-run: tunneld $TV_TUNNELD, tunnelctl $TV_TUNNELCTL"
fr_setup || { tv_bad "tunnelctl init in the gateway namespace"; tv_summary; exit 1; }
echo "first-run: what init wrote"
check "the private key is mode 0600" test "$(stat -c %a "$FR_GW/private.key")" = 600
check "tunneld.conf is mode 0640" test "$(stat -c %a "$FR_CONF")" = 640
check "the default policy set is in policies/ ($(ls "$FR_GW/policies" | tr '\n' ' '))" diff <(ls policies) <(ls "$FR_GW/policies")
check_output "the tunnel is 10.99.0.0/24 (free in this namespace), gateway 10.99.0.1" '^Address = 10\.99\.0\.1/24, fd99::1/64$' cat "$FR_CONF"
check_output "ClientDNS is the gateway's tunnel address: dnsmasq listens on every address" '^ClientDNS = 10\.99\.0\.1$' cat "$FR_CONF"
check_output "init says so" "ClientDNS: 10\.99\.0\.1 \(a resolver listens" printf '%s' "$FR_INIT_OUT"
check_output "the WAN interface is the default route's" "^WAN interface: vgs$TV_ID\$" printf '%s' "$FR_INIT_OUT"
check_output "StatusListen on the gateway's tunnel address" '^StatusListen = 10\.99\.0\.1:80$' cat "$FR_CONF"
check_output "MetricsListen on loopback" '^MetricsListen = 127\.0\.0\.1:9586$' cat "$FR_CONF"
check_output "the next commands are printed" 'tunnelctl peer add phone --qr' printf '%s' "$FR_INIT_OUT"
check_exit "a second init refuses (exit 1)" 1 tv_in "$TV_NS_G" "$TV_TUNNELCTL" init --config "$FR_CONF"
check_output "… naming the configuration" "$FR_CONF exists: init never overwrites" tv_in "$TV_NS_G" "$TV_TUNNELCTL" init --config "$FR_CONF"
# Without --endpoint: the WAN interface's address, commented as such.
tv_in "$TV_NS_G" "$TV_TUNNELCTL" init --config "$TV_DIR/gw2/tunneld.conf" --subnet6 off >"$TV_DIR/init2.out" 2>&1
check_output "without --endpoint, PublicEndpoint is the WAN interface's address" "^PublicEndpoint = $TV_GW_LAN:51820\$" cat "$TV_DIR/gw2/tunneld.conf"

echo "first-run: --check-config with no peers"
check_exit "tunneld --check-config passes (exit 0)" 0 tv_in "$TV_NS_G" "$TV_TUNNELD" --check-config --config "$FR_CONF"
check_output "… with 0 peers and the 5 default files" '0 peer\(s\), policy .*: [0-9]+ rule\(s\) in 5 file\(s\)' \
  tv_in "$TV_NS_G" "$TV_TUNNELD" --check-config --config "$FR_CONF"
check "… and no warning" bash -c "! '$TV_TUNNELD' --check-config --config '$FR_CONF' 2>&1 | grep -q warning"
check_output "tunnelctl policy check --config: 0 errors, 0 warnings" '0 errors, 0 warnings' $CTL policy check

fr_gateway_up || { tv_bad "tunneld starts with init's configuration"; tv_summary; exit 1; }
TV_PIDS+=("$TV_GW_PID")
fr_phone_up || { tv_bad "tunnelctl peer add phone + wg-quick up"; tv_summary; exit 1; }
echo "first-run: the phone, through wg-quick (userspace wireguard-go)"
check_output "the client config has the DNS line" '^DNS = 10\.99\.0\.1$' cat "$FR_CLIENT_CONF"
check_output "wg-quick ran wireguard-go, not a kernel module" 'wireguard-go' cat "$TV_DIR/wg-quick.log"
check_output "wg-quick handed the DNS line to resolvconf" '^nameserver 10\.99\.0\.1$' cat "$TV_DIR/client-resolv.conf"
check "the phone pings the gateway (IPv4)" wait_for 15 tv_in "$TV_NS_C" ping -c1 -W1 $TV_GW_TUN
check "the phone pings the gateway (IPv6)" wait_for 5 tv_in "$TV_NS_C" ping -6 -c1 -W1 $TV_GW_TUN6
check_output "the phone's status page (curl http://10.99.0.1/) names the phone" '<h1>phone</h1>' \
  tv_in "$TV_NS_C" curl -sS --max-time 5 http://$TV_GW_TUN/
check_output "the phone resolves server.example with the gateway's dnsmasq" "^$TV_SRV +server\.example" \
  tv_in "$TV_NS_C" getent hosts server.example
check_output "… through the tunnel: dnsmasq saw the query from the phone's tunnel address" 'query\[A\] server\.example from 10\.99\.0\.2' \
  cat "$TV_DIR/dnsmasq.log"
check_output "the phone reaches the Internet side (the server, default allow)" '^echoed$' tv_in "$TV_NS_C" $TOOLS echo $TV_SRV 7004 3
check_output "the gateway's other ports are blocked (ssh: timeout, not refused)" '^timeout$' tv_in "$TV_NS_C" $TOOLS echo $TV_GW_TUN 22 2
check "… by the default set's 10-gateway.rules (tunnelctl flows --blocked: its rule and reason)" \
  wait_for 10 bash -c "$CTL flows --blocked --since forever | grep -F -- '-> $TV_GW_TUN:22 ' | grep '10-gateway.rules:' | grep -q 'only DNS, the status page and ping on the gateway'"
check_output "tunnelctl peers shows the phone" '^phone ' $CTL peers
tv_summary
