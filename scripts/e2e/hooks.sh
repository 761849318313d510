#!/usr/bin/env bash
# End to end: wg-quick's PreUp/PostUp/PreDown/PostDown run by tunneld (issue 15), through /bin/sh
# with %i replaced by the interface name: PreUp before the interface exists, PostUp once it is up
# with its address and peers (wg show works), PreDown at shutdown while it still exists, PostDown
# after it is gone, each line in file order, its output in tunneld's log. A failing PreUp stops the
# start before any interface exists, a failing PostUp stops it and takes the interface down, both
# with an error naming the line. Needs root; ~10 s.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/topology.sh
source scripts/lib/check.sh
trap tv_cleanup EXIT
HOOKS=$TV_DIR/hooks.log

tv_topology_up
tv_tunneld_config e2e premium
cp "$TV_DIR/tunneld.conf" "$TV_DIR/base.conf"
# Each hook records its phase, the %i it was given, and what it saw of the interface.
sed -i "s#^\[Interface\]\$#[Interface]\n\
PreUp = echo \"preup %i \$(ip link show %i >/dev/null 2>\&1 \&\& echo exists || echo absent)\" >>$HOOKS\n\
PreUp = echo \"preup-second %i\" >>$HOOKS\n\
PostUp = echo \"postup %i \$(ip -o addr show dev %i | grep -q '$TV_GW_TUN/24' \&\& echo addressed) \$(wg show %i peers | grep -q '$TV_C_PUB' \&\& echo peers)\" >>$HOOKS\n\
PostUp = echo hello-from-postup-%i\n\
PreDown = echo \"predown %i \$(ip link show %i >/dev/null 2>\&1 \&\& echo exists || echo absent)\" >>$HOOKS\n\
PostDown = echo \"postdown %i \$(ip link show %i >/dev/null 2>\&1 \&\& echo exists || echo absent)\" >>$HOOKS#" "$TV_DIR/tunneld.conf"

echo "hooks: run in order with %i"
tv_gateway_tunneld_up || { tv_bad "tunneld starts"; tv_summary; exit 1; }
for _ in $(seq 50); do grep -q '^postup' "$HOOKS" 2>/dev/null && break; sleep 0.1; done
check_output "PreUp ran before the interface existed" "^preup $TV_IF_G absent\$" cat "$HOOKS"
check_output "PostUp ran with the address set and the peers configured" "^postup $TV_IF_G addressed peers\$" cat "$HOOKS"
check_output "a hook's output is in tunneld's log" "PostUp: hello-from-postup-$TV_IF_G" cat "$TV_DIR/tunneld.log"
kill -TERM "$TV_GW_PID"; wait "$TV_GW_PID" 2>/dev/null
check_output "PreDown ran while the interface existed" "^predown $TV_IF_G exists\$" cat "$HOOKS"
check_output "PostDown ran after it was gone" "^postdown $TV_IF_G absent\$" cat "$HOOKS"
check_output "in wg-quick's order, each line in file order" "^preup preup-second postup predown postdown \$" \
  bash -c "cut -d' ' -f1 '$HOOKS' | tr '\n' ' '"

echo "hooks: a failing PreUp or PostUp stops the start"
sed "s#^\[Interface\]\$#[Interface]\nPreUp = echo preup-says-no; exit 3#" "$TV_DIR/base.conf" >"$TV_DIR/tunneld.conf"
check_exit "PreUp exits 3: tunneld exits 1" 1 tv_in "$TV_NS_G" "$TV_TUNNELD" --config "$TV_DIR/tunneld.conf"
check_output "the error names the line and its exit status" "PreUp 'echo preup-says-no; exit 3' failed \(exit status 3\)" \
  tv_in "$TV_NS_G" "$TV_TUNNELD" --config "$TV_DIR/tunneld.conf"
check "no interface was made" bash -c "! ip -n $TV_NS_G link show $TV_IF_G"
sed "s#^\[Interface\]\$#[Interface]\nPostUp = false\nPostDown = echo postdown-ran >>$HOOKS#" "$TV_DIR/base.conf" >"$TV_DIR/tunneld.conf"
check_exit "PostUp fails: tunneld exits 1" 1 tv_in "$TV_NS_G" "$TV_TUNNELD" --config "$TV_DIR/tunneld.conf"
check_output "the error names the line" "PostUp 'false' failed \(exit status 1\)" \
  tv_in "$TV_NS_G" "$TV_TUNNELD" --config "$TV_DIR/tunneld.conf"
check "the interface is gone again" bash -c "! ip -n $TV_NS_G link show $TV_IF_G"
check "PostDown does not run after a failed start (like wg-quick)" bash -c "! grep -q postdown-ran '$HOOKS'"
tv_summary
