#!/usr/bin/env bash
# End-to-end test of interface bring-up over rtnetlink (Gateway's NetlinkInterfaceConfigurator),
# as root, inside a network namespace this script creates and removes (also on failure).
# Runs `tunneld --selftest-bringup` (a hidden diagnostic mode) and checks with `ip` that MTU,
# addresses, link state and routes are exactly as asked, that SIGTERM undoes all of it, and that
# kernel errors come back as clean messages naming the operation and errno.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ "$(id -u)" -eq 0 ] || { echo "netlink.sh: needs root (creates a network namespace)"; exit 1; }

TUNNELD=${TUNNELD:-}
if [ -z "$TUNNELD" ]; then
  for c in .build/release/tunneld .build/debug/tunneld; do [ -x "$c" ] && { TUNNELD=$c; break; }; done
fi
[ -n "$TUNNELD" ] || { echo "netlink.sh: build tunneld first (swift build)"; exit 1; }
TUNNELD=$(readlink -f "$TUNNELD")

NS="tvnl$$"
WORK=$(mktemp -d /tmp/tv-netlink.XXXXXX)
PID=""
cleanup() {
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then kill -KILL "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
ip netns add "$NS"

pass=0
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$WORK"/out "$WORK"/err 2>/dev/null || true; exit 1; }
ok() { echo "ok: $*"; pass=$((pass+1)); }
wait_for_line() {  # FILE TEXT SECONDS
  local i=0
  while ! grep -qx -- "$2" "$1" 2>/dev/null; do
    i=$((i+1)); [ $i -gt $(( $3 * 10 )) ] && return 1; sleep 0.1
  done
}
expect_in() {  # WHAT TEXT PATTERN
  grep -qE -- "$3" <<<"$2" || fail "$1: expected /$3/ in:"$'\n'"$2"
}
expect_not_in() {
  ! grep -qE -- "$3" <<<"$2" || fail "$1: did not expect /$3/ in:"$'\n'"$2"
}

# --- case 1: bring up, check, tear down, check ----------------------------------------------
ip netns exec "$NS" "$TUNNELD" --selftest-bringup tv0 1380 10.99.0.1/24 fd99::1/64 \
  --route 10.50.0.0/16 192.168.77.0/24 fd50::/48 --hold-after-teardown >"$WORK/out" 2>"$WORK/err" &
PID=$!
wait_for_line "$WORK/out" ready 10 || fail "bring-up did not report ready"

link=$(ip -n "$NS" -d link show tv0)
expect_in "link" "$link" "mtu 1380 "
expect_in "link" "$link" "<[^>]*[,<]UP[,>]"
expect_in "link" "$link" "tun type tun pi off"
ok "tv0 is a TUN (no packet info), up, mtu 1380"

addr=$(ip -n "$NS" addr show dev tv0)
expect_in "addr" "$addr" "inet 10\.99\.0\.1/24 "
expect_in "addr" "$addr" "inet6 fd99::1/64 "
ok "addresses 10.99.0.1/24 and fd99::1/64 present"

r4=$(ip -n "$NS" route show dev tv0)
r6=$(ip -n "$NS" -6 route show dev tv0)
expect_in "route" "$r4" "^10\.50\.0\.0/16 proto static scope link"
expect_in "route" "$r4" "^192\.168\.77\.0/24 proto static scope link"
expect_in "route" "$r4" "^10\.99\.0\.0/24 proto kernel"
expect_in "route -6" "$r6" "^fd50::/48 proto static"
expect_in "route -6" "$r6" "^fd99::/64 proto kernel"
ok "routes 10.50.0.0/16, 192.168.77.0/24, fd50::/48 (proto static) and the connected subnets present"

kill -TERM "$PID"
wait_for_line "$WORK/out" "teardown: done" 10 || fail "tear-down did not finish"
[ ! -s "$WORK/err" ] || fail "tear-down reported errors"
link=$(ip -n "$NS" -d link show tv0)
expect_in "link after" "$link" "mtu 1500 "
expect_not_in "link after" "$link" "<[^>]*[,<]UP[,>]"
addr=$(ip -n "$NS" addr show dev tv0)
expect_not_in "addr after" "$addr" "inet 10\.99|inet6 fd99"
r4=$(ip -n "$NS" route show dev tv0)
r6=$(ip -n "$NS" -6 route show dev tv0)
[ -z "$r4" ] || fail "IPv4 routes left after tear-down: $r4"
expect_not_in "route -6 after" "$r6" "fd50|fd99"
ok "SIGTERM removed routes and addresses, set the link down, restored mtu 1500"

kill -TERM "$PID"
status=0; wait "$PID" || status=$?
PID=""
[ "$status" -eq 0 ] || fail "selftest exited with $status"
! ip -n "$NS" link show tv0 >/dev/null 2>&1 || fail "tv0 still exists after exit"
ok "clean exit (status 0) and tv0 gone"

# --- error cases: each must exit 1 with the kernel's error, named ------------------------------
expect_error() {  # LABEL EXPECTED-STDERR-LINE ARGS...
  local label=$1 want=$2; shift 2
  local status=0
  ip netns exec "$NS" "$TUNNELD" --selftest-bringup "$@" >"$WORK/out" 2>"$WORK/err" || status=$?
  [ "$status" -eq 1 ] || fail "$label: exit status $status, expected 1"
  grep -qxF -- "$want" "$WORK/err" || fail "$label: expected stderr line: $want"
  ! grep -q ready "$WORK/out" || fail "$label: reported ready"
  ok "$label: $want"
}
expect_error "address twice" "tunneld: netlink: add address 10.99.0.1/24 on tv1: File exists (EEXIST)" \
  tv1 1420 10.99.0.1/24 10.99.0.1/24
expect_error "bad MTU" "tunneld: netlink: set mtu 10 on tv2: Invalid argument (EINVAL)" \
  tv2 10 10.99.0.1/24
expect_error "route inside the subnet" "tunneld: netlink: add route 10.99.0.0/24 dev tv3: File exists (EEXIST)" \
  tv3 1420 10.99.0.1/24 --route 10.99.0.0/24

# A failure late in bring-up (the last route) rolls back the MTU, addresses, link state and routes
# already made; --hold-after-teardown keeps the interface so we can look.
ip netns exec "$NS" "$TUNNELD" --selftest-bringup tv4 1280 10.98.0.1/24 fd98::1/64 \
  --route 10.60.0.0/16 10.98.0.0/24 --hold-after-teardown >"$WORK/out" 2>"$WORK/err" &
PID=$!
wait_for_line "$WORK/out" holding 10 || fail "failed bring-up did not hold"
link=$(ip -n "$NS" -d link show tv4)
expect_in "rollback link" "$link" "mtu 1500 "
expect_not_in "rollback link" "$link" "<[^>]*[,<]UP[,>]"
addr=$(ip -n "$NS" addr show dev tv4)
expect_not_in "rollback addr" "$addr" "inet 10\.98|inet6 fd98"
r4=$(ip -n "$NS" route show dev tv4)
[ -z "$r4" ] || fail "routes left after rollback: $r4"
kill -TERM "$PID"
status=0; wait "$PID" || status=$?
PID=""
[ "$status" -eq 1 ] || fail "rolled-back selftest exited with $status, expected 1"
grep -qxF "tunneld: netlink: add route 10.98.0.0/24 dev tv4: File exists (EEXIST)" "$WORK/err" || fail "rollback: wrong error"
ok "a failed bring-up rolled back mtu, addresses, link state and the route it had added"
left=$(ip -n "$NS" -o link show | grep -c ' tv' || true)
[ "$left" -eq 0 ] || fail "interfaces left behind after failed bring-ups"
ok "failed bring-ups leave no interface behind"

echo "netlink.sh: $pass checks passed"
