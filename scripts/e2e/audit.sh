#!/usr/bin/env bash
# End to end (issue 6): the daemon's automatic markers (start, policy reload, stop), tunnelctl
# audit/timeline/retention/prune against the store the running daemon writes, and a settings row
# that is not JSON (the daemon starts with factory values and logs it). Needs root; all in
# network namespaces made (and removed) here. Run by scripts/test.sh.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/topology.sh
source scripts/lib/check.sh
trap tv_cleanup EXIT
CTL="$TV_TUNNELCTL --config $TV_DIR/tunneld.conf"

tv_topology_up
tv_tunneld_config e2e
tv_gateway_tunneld_up || { tv_bad "tunneld starts"; tv_summary; exit 1; }

echo "audit: daemon markers"
check_output "the daemon marks its start with generation and rule-file hash" \
  'tunneld started \(version=[^ ]+ pid=[0-9]+ generation=[0-9]+ rules=3 files=blake2s:[0-9a-f]{32}\)' $CTL audit list
check_output "tunnelctl audit start while the daemon runs" "^audit session 1 'e2e run' started" $CTL audit start e2e run
check_exit "a second audit start is refused" 1 $CTL audit start another
check_output "and names the open one" "audit session 1 'e2e run' is already open" $CTL audit start another
check_output "tunnelctl audit mark attaches to the open session" "^marker [0-9]+ 'before reload' .*\(audit session 1\)" $CTL audit mark before reload
printf 'block proto tcp port 7005 reason "e2e: audit"\n' >"$TV_DIR/policies/07-audit.rules"
GEN=$($CTL policy show | sed -n 's/^policy generation \([0-9]*\).*/\1/p')
check_output "policy reload" "generation $((GEN+1))" $CTL policy reload
wait_for 5 sh -c "$CTL audit list | grep -q 'policy reloaded'"
check_output "the reload is marked with the new generation and a new hash" \
  "policy reloaded \\(generation=$((GEN+1)) rules=4 files=blake2s:[0-9a-f]{32}\\)" $CTL audit list
H1=$($CTL audit list --json | sed -n 's/.*"detail" : "version.*files=\(blake2s:[0-9a-f]*\)".*/\1/p')
H2=$($CTL audit list --json | sed -n 's/.*"detail" : "generation=.*files=\(blake2s:[0-9a-f]*\)".*/\1/p')
check "the hash changed with the rule files" test -n "$H1" -a -n "$H2" -a "$H1" != "$H2"
check_output "the timeline interleaves the markers" 'audit-start .*e2e run' $CTL timeline --since 10m

echo "audit: retention and prune with the daemon running"
check_output "retention set" '^flows: 7d -> 1d' $CTL retention set flows=1d pcap-bytes=1GiB
check_output "retention show reads it back" '^flows +1d$' $CTL retention show
check_output "a misspelt key gets a suggestion" "did you mean 'refusals'" $CTL retention set refusal=3d
check_output "prune --dry-run" '^dry run: would remove' $CTL prune --dry-run
check_output "prune" '^removed [0-9]+ rows' $CTL prune

echo "audit: stop and restart"
kill -TERM "$TV_GW_PID"
wait_for 10 sh -c "! kill -0 $TV_GW_PID 2>/dev/null"
check_output "the daemon marks its stop" 'tunneld stopping' $CTL audit list
check_output "audit mark works with the daemon down" "^marker [0-9]+ 'daemon down'" $CTL audit mark daemon down
check_output "audit stop" "^audit session 1 'e2e run' stopped" $CTL audit stop
sqlite3 "$TV_DIR/state/state.db" "UPDATE settings SET json = 'flows=7d oops' WHERE id = 1"
check_exit "retention show: a row that is not JSON is an error (exit 1)" 1 $CTL retention show
check_output "showing the raw text" 'flows=7d oops' $CTL retention show
tv_gateway_tunneld_up || tv_bad "tunneld starts with a settings row that is not JSON"
wait_for 5 grep -q 'factory values' "$TV_DIR/tunneld.log"
check_output "and logs that it runs with factory values" '^<3>[0-9T:.Z-]+ settings: the settings row is not a JSON object.*factory values' cat "$TV_DIR/tunneld.log"
wait_for 5 sh -c "$CTL audit list --since 1m | grep -q 'tunneld started'"
check_output "the restart is marked too" 'tunneld started.*rules=4' $CTL audit list --since 1m

tv_summary
