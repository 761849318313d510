#!/usr/bin/env bash
# End to end: the clients' DNS through the gateway's own resolver, and host rules learning from
# it (docs/operations.md, "The clients' resolver"). The first run of scripts/e2e/lib/firstrun.sh:
# dnsmasq on the router answers blocked.example with 198.19.0.3; `tunnelctl init` set ClientDNS to
# the gateway's tunnel address; the phone (wg-quick, userspace wireguard-go, the config of
# `tunnelctl peer add`) takes it as its resolver. With `block host blocked.example` added to the
# default policy: a connection to 198.19.0.3 passes while no name is known for it; once the phone
# has resolved blocked.example through the tunnel, the next one is blocked by the host rule, and
# `tunnelctl refusals`, `flows --blocked` and `explain 'FLOW'` name the rule and the host; other
# addresses still pass. Needs root; ~20 s.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/topology.sh
source scripts/lib/check.sh
source scripts/e2e/lib/firstrun.sh
trap fr_cleanup EXIT

fr_setup || { tv_bad "tunnelctl init in the gateway namespace"; tv_summary; exit 1; }
check_output "init set ClientDNS to the gateway's tunnel address" '^ClientDNS = 10\.99\.0\.1$' cat "$FR_CONF"
cat >"$FR_GW/policies/60-blocked.rules" <<'RULES'
block host blocked.example name blocked-example reason "e2e: blocked by its name"
RULES
check_output "the policy with the host rule checks clean against the configuration" '0 errors, 0 warnings' $CTL policy check
fr_gateway_up || { tv_bad "tunneld starts"; tv_summary; exit 1; }
TV_PIDS+=("$TV_GW_PID")
fr_phone_up || { tv_bad "tunnelctl peer add phone + wg-quick up"; tv_summary; exit 1; }
check "the phone's tunnel is up" wait_for 15 tv_in "$TV_NS_C" ping -c1 -W1 $TV_GW_TUN

echo "client-dns: the phone's resolver is the gateway's dnsmasq, through the tunnel"
check_output "wg-quick gave the phone nameserver 10.99.0.1 (the DNS line of its config)" '^nameserver 10\.99\.0\.1$' cat "$TV_DIR/client-resolv.conf"
check_output "before any lookup a connection to $FR_BLOCKED passes (no name is known for it)" '^echoed$' \
  tv_in "$TV_NS_C" $TOOLS echo $FR_BLOCKED 7004 3
check_output "the phone resolves blocked.example (getent, the namespace's resolv.conf)" "^$FR_BLOCKED +blocked\.example" \
  tv_in "$TV_NS_C" getent hosts blocked.example
check_output "dnsmasq answered the phone's tunnel address" 'query\[A\] blocked\.example from 10\.99\.0\.2' cat "$TV_DIR/dnsmasq.log"

echo "client-dns: the host rule applies to the address the answer named"
check_output "a connection to $FR_BLOCKED is now blocked by 'block host blocked.example'" '^timeout$' \
  tv_in "$TV_NS_C" $TOOLS echo $FR_BLOCKED 7004 3
check_output "another address still passes" '^echoed$' tv_in "$TV_NS_C" $TOOLS echo $TV_SRV 7004 3
check "tunnelctl refusals names the host and the rule's reason" \
  wait_for 10 bash -c "$CTL refusals --since forever | grep -F 'tcp $FR_BLOCKED:7004 host blocked.example' | grep -q 'e2e: blocked by its name'"
check "tunnelctl flows --blocked shows the flow with its host and the rule (60-blocked.rules:1)" \
  wait_for 10 bash -c "$CTL flows --blocked --since forever | grep -F -- '-> $FR_BLOCKED:7004 ' | grep ' blocked.example ' | grep -q '60-blocked.rules:1'"
check_output "tunnelctl explain 'FLOW host blocked.example' names the rule" 'blocked-example' \
  $CTL explain "tcp 10.99.0.2:40000 -> $FR_BLOCKED:7004 host blocked.example"
check_exit "… and exits 1 (blocked)" 1 $CTL explain "tcp 10.99.0.2:40000 -> $FR_BLOCKED:7004 host blocked.example"
check_output "tunnelctl status counts the DNS answers tunneld learned from" '"dns-answers" : [1-9]' $CTL status --json
tv_summary
