#!/usr/bin/env bash
# End to end: operator events (issue 17 item 2) through the stderr fallback (no journald here):
# each event is one line with its UTC time and TUNNELVISION_EVENT=, PEER=, TIER=, REASON=, RULE=
# fields. A free peer (FreeSession 5 s) connects (session-start), its window ends (window-end,
# session-end REASON=free-limit), its handshakes during the pause are refused many times but
# logged once (refusal); a tier change (tier-change); `tunnelctl peer add|disable|remove` (peer-add,
# peer-disable, peer-remove); a policy reload and a refused one (policy-reload, RULE=file:line:col).
# Then each event says the tier and reason of the decision that caused it: bob, a second client in
# a [Tier trial] with a quota, uses it up (session-end, window-end and refusal say TIER=trial and
# quota, never free / free-limit); alice, premium by then with [Tier premium] IdleTimeout = 3s,
# goes idle, is disabled and expires (session-end and refusal with TIER=premium and
# idle / disabled / expired), and the reload replies name the change (`alice disabled`).
# EVENTS_VIA=journal (scripts/e2e/journal.sh) runs the same checks through libsystemd's
# sd_journal_sendv: tunneld starts in a mount namespace of its own where /run/systemd is a tmpfs
# and journal-capture.py listens on /run/systemd/journal/socket (the native protocol), with
# JOURNAL_STREAM naming its stderr file as systemd does; each event must then arrive there as one
# entry with its fields (and PRIORITY, SYSLOG_IDENTIFIER=tunneld), none fall back to stderr, and the
# text lines carry no time of their own. Needs root; ~90 s.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/topology.sh
source scripts/lib/check.sh
trap tv_cleanup EXIT
CTL="$TV_TUNNELCTL --config $TV_DIR/tunneld.conf"
LOG=$TV_DIR/tunneld.log
VIA=${EVENTS_VIA:-stderr}
EVLOG=$LOG; [ "$VIA" = journal ] && EVLOG=$TV_DIR/journal.txt
TV_FREE_SESSION=5s TV_FREE_PAUSE=60s TV_WATCHDOG=1s
export TV_FREE_SESSION TV_FREE_PAUSE TV_WATCHDOG
ev() { grep "TUNNELVISION_EVENT=$1 " "$EVLOG" || grep "TUNNELVISION_EVENT=$1\$" "$EVLOG"; }
one() { local n; n=$(grep -c "TUNNELVISION_EVENT=$1\( \|$\)" "$EVLOG"); [ "$n" = 1 ] || { echo "$n lines:"; ev "$1"; return 1; }; }
# tunneld with a journal of our own (EVENTS_VIA=journal): see the header.
journal_tunneld_up() {
  : >"$LOG"
  local stream; stream=$(stat -c %d:%i "$LOG")
  tv_spawn "$TV_NS_G" "$LOG" unshare -m --propagation private sh -c '
    mount -t tmpfs -o mode=0755 tvjournal /run/systemd && mkdir /run/systemd/journal || exit 1
    python3 scripts/e2e/lib/journal-capture.py /run/systemd/journal/socket "$1" 2>"$1.err" &
    for _ in $(seq 50); do [ -e "$1.ready" ] && break; sleep 0.1; done
    exec env JOURNAL_STREAM="$2" "$3" --config "$4" --foreground' sh "$EVLOG" "$stream" "$TV_TUNNELD" "$TV_DIR/tunneld.conf"
  TV_GW_PID=$TV_LAST_PID
  for _ in $(seq 100); do [ -S "$TV_DIR/run/control.sock" ] && return 0; sleep 0.1; done
  tv_log "tunneld did not start:"; cat "$LOG" "$EVLOG.err" >&2; return 1
}

tv_topology_up
tv_tunneld_config e2e free
sed -i "s/^\[Interface\]$/[Interface]\nPublicEndpoint = $TV_GW_UNDERLAY:$TV_PORT/" "$TV_DIR/tunneld.conf"
printf '\n[Tier trial]\nQuota = 256KiB\n\n[Tier premium]\nIdleTimeout = 3s\n' >>"$TV_DIR/tunneld.conf"
tv_bob_peer trial
if [ "$VIA" = journal ]; then
  journal_tunneld_up || { tv_bad "tunneld starts (with the test journal)"; tv_summary; exit 1; }
else
  tv_gateway_tunneld_up || { tv_bad "tunneld starts"; tv_summary; exit 1; }
fi
tv_client_up 1
TV_PIDS+=("$TV_WG_C_PID")

echo "events: a free session, its window end, the refusals of the pause"
check "alice connects" tv_wait_tunnel
tv_spawn "$TV_NS_C" "$TV_DIR/ping.log" ping -i 0.5 -W1 $TV_SRV   # keeps the client re-handshaking during the pause
ALICE_PING=$TV_LAST_PID
check_output "session-start with PEER and TIER" 'peer alice: session started \(free\) TUNNELVISION_EVENT=session-start PEER=alice TIER=free$' ev session-start
wait_for 15 grep -q 'TUNNELVISION_EVENT=window-end' "$EVLOG" >/dev/null
check_output "window-end with its reconnect time" 'TUNNELVISION_EVENT=window-end PEER=alice TIER=free REASON=free-limit RECONNECT_AT=20[0-9-]+T' ev window-end
check_output "session-end with REASON=free-limit" 'TUNNELVISION_EVENT=session-end PEER=alice TIER=free REASON=free-limit$' ev session-end
attempts() { $CTL refusals --json | python3 -c 'import json,sys; print(sum(r.get("count",1) for r in json.load(sys.stdin)))'; }
two_attempts() { [ "$(attempts 2>/dev/null || echo 0)" -ge 2 ]; }
wait_for 25 two_attempts >/dev/null
check "the pause refused alice's handshakes at least twice (tunnelctl refusals)" two_attempts
check_output "refusal: logged with its reason" 'TUNNELVISION_EVENT=refusal PEER=alice TIER=free REASON=free-pause$' ev refusal
check "… once for the whole pause" one refusal

echo "events: tier, peers, policy"
$CTL peer tier alice premium >/dev/null 2>&1
check_output "tier-change names both tiers" 'TUNNELVISION_EVENT=tier-change PEER=alice TIER=premium PREVIOUS_TIER=free$' ev tier-change
$CTL peer add carol --tier free >/dev/null 2>&1
check_output "peer-add" 'peer carol: added \(free\) TUNNELVISION_EVENT=peer-add PEER=carol TIER=free$' ev peer-add
$CTL peer disable carol >/dev/null 2>&1
check_output "peer-disable" 'TUNNELVISION_EVENT=peer-disable PEER=carol REASON=disabled$' ev peer-disable
$CTL peer remove carol >/dev/null 2>&1
check_output "peer-remove" 'TUNNELVISION_EVENT=peer-remove PEER=carol REASON=removed$' ev peer-remove
$CTL policy reload >/dev/null 2>&1
check_output "policy-reload (applied)" 'TUNNELVISION_EVENT=policy-reload REASON=reloaded POLICY_GENERATION=[0-9]+ POLICY_RULES=3$' ev policy-reload
printf 'blok proto tcp port 9\n' >"$TV_DIR/policies/06-broken.rules"
$CTL policy reload >/dev/null 2>&1
check_output "policy-reload (refused) names the rule file:line:column" \
  'TUNNELVISION_EVENT=policy-reload REASON=errors RULE=[^ ]*06-broken.rules:1:1 POLICY_GENERATION=' ev policy-reload
# Gone again: a reload with a refused rule file fails (exit 1), and the peer edits below reload.
rm -f "$TV_DIR/policies/06-broken.rules"
for e in session-start window-end tier-change peer-add peer-disable peer-remove; do
  check "$e appears once" one "$e"
done

echo "events: each says the tier and reason of its decision (quota, idle, disable, expiry)"
# bob (trial, Quota = 256KiB) sends well over it at once, then keeps pinging through his pause.
tv_bob_up
tv_in "$TV_NS_C" ping -I $TV_BOB_TUN -c 400 -i 0.01 -s 1200 -W1 -q $TV_SRV >/dev/null 2>&1
tv_spawn "$TV_NS_C" "$TV_DIR/bob-ping.log" ping -I $TV_BOB_TUN -i 0.5 -W1 $TV_SRV
evp() { grep "TUNNELVISION_EVENT=$1 PEER=$2 " "$EVLOG" || grep "TUNNELVISION_EVENT=$1 PEER=$2\$" "$EVLOG"; }
wait_for 10 grep -q 'TUNNELVISION_EVENT=window-end PEER=bob' "$EVLOG" >/dev/null
check_output "quota: bob's session-end says his tier and quota" 'TUNNELVISION_EVENT=session-end PEER=bob TIER=trial REASON=quota$' evp session-end bob
check_output "quota: bob's window-end says the same tier and reason" 'TUNNELVISION_EVENT=window-end PEER=bob TIER=trial REASON=quota RECONNECT_AT=20[0-9-]+T' evp window-end bob
check "… never free / free-limit" bash -c "! grep -q 'TUNNELVISION_EVENT=window-end PEER=bob TIER=free' '$EVLOG'"
# alice is premium (tier change above) and pinging: with the ping stopped, IdleTimeout ends her session.
alice_starts() { grep -c 'TUNNELVISION_EVENT=session-start PEER=alice' "$EVLOG"; }
alice_starts_above() { [ "$(alice_starts)" -gt "$1" ]; }
wait_for 20 alice_starts_above 1 >/dev/null
kill "$ALICE_PING" 2>/dev/null
wait_for 10 grep -q 'TUNNELVISION_EVENT=session-end PEER=alice TIER=premium REASON=idle' "$EVLOG" >/dev/null
check_output "idle: session-end with her tier in force" 'TUNNELVISION_EVENT=session-end PEER=alice TIER=premium REASON=idle$' evp session-end alice
n=$(alice_starts)
tv_spawn "$TV_NS_C" "$TV_DIR/ping2.log" ping -i 0.5 -W1 $TV_SRV
wait_for 25 alice_starts_above "$n" >/dev/null
check_output "disable: the reload reply names it" '^tunneld reloaded: alice disabled; policy generation [0-9]+$' $CTL peer disable alice
wait_for 5 grep -q 'TUNNELVISION_EVENT=session-end PEER=alice TIER=premium REASON=disabled' "$EVLOG" >/dev/null
check_output "disable: session-end with her tier" 'TUNNELVISION_EVENT=session-end PEER=alice TIER=premium REASON=disabled$' evp session-end alice
wait_for 20 grep -q 'TUNNELVISION_EVENT=refusal PEER=alice TIER=premium REASON=disabled' "$EVLOG" >/dev/null
check_output "disable: her refused handshakes, once, with her tier" 'TUNNELVISION_EVENT=refusal PEER=alice TIER=premium REASON=disabled$' evp refusal alice
n=$(alice_starts)
check_output "enable: the reload reply names it" '^tunneld reloaded: alice enabled; policy generation [0-9]+$' $CTL peer enable alice
wait_for 25 alice_starts_above "$n" >/dev/null
EXPIRES=$(date -u -d '+4 seconds' +%Y-%m-%dT%H:%M:%SZ)
sed -i "/^Name = alice\$/a Expires = $EXPIRES" "$TV_DIR/tunneld.conf"
check_output "expiry: the reload reply names the new Expires" "^tunneld reloaded: alice Expires never -> ${EXPIRES%Z}\\.000Z; policy generation [0-9]+\$" $CTL reload
wait_for 10 grep -q 'TUNNELVISION_EVENT=session-end PEER=alice TIER=premium REASON=expired' "$EVLOG" >/dev/null
check_output "expiry: session-end with her tier" 'TUNNELVISION_EVENT=session-end PEER=alice TIER=premium REASON=expired$' evp session-end alice
wait_for 20 grep -q 'TUNNELVISION_EVENT=refusal PEER=alice TIER=premium REASON=expired' "$EVLOG" >/dev/null
check_output "expiry: her refused handshakes, with her tier" 'TUNNELVISION_EVENT=refusal PEER=alice TIER=premium REASON=expired$' evp refusal alice
wait_for 25 grep -q 'TUNNELVISION_EVENT=refusal PEER=bob' "$EVLOG" >/dev/null
check_output "quota: bob's refused handshakes in his pause say trial and quota-pause" 'TUNNELVISION_EVENT=refusal PEER=bob TIER=trial REASON=quota-pause$' evp refusal bob
if [ "$VIA" = journal ]; then
  echo "events: through the journal"
  check "no event fell back to stderr" bash -c "! grep -q TUNNELVISION_EVENT= '$LOG'"
  check "every datagram parsed as a journal entry" bash -c "! grep -q '^UNPARSABLE' '$EVLOG'"
  check_output "each entry names tunneld and a priority" '^ok [1-9][0-9]*$' python3 -c '
import json, sys
n = 0
for l in open(sys.argv[1]):
    f = dict(json.loads(l)); n += 1
    if f.get("SYSLOG_IDENTIFIER") != "tunneld" or not f.get("PRIORITY", "").isdigit() or not f.get("MESSAGE"):
        print("bad entry", f); sys.exit(1)
print("ok", n)' "$EVLOG.json"
  check_output "text lines carry no time of their own (journald stamps them)" '^<[0-7]>interface' head -1 "$LOG"
else
  check_output "text lines carry their UTC time (no journald)" '^<[0-7]>20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z interface' head -1 "$LOG"
fi

tv_summary
