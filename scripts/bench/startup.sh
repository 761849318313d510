#!/usr/bin/env bash
# Start-up time: tunneld from exec to READY=1 (sd_notify: the interface is up, routes set, the
# UAPI, control and metrics sockets listen) with PEERS peers in its configuration, in a network
# namespace of its own; then SIGTERM and wait for the exit. Two builds are measured alternately,
# round by round, so both see the same machine; prints each run, the medians and their ratio.
#   scripts/bench/startup.sh [ROUNDS] [PEERS]          (defaults 10, 100)
#   STARTUP_A=PATH STARTUP_B=PATH   the two tunneld binaries (default: the static packaging build
#                                   .build/static/release/tunneld and the dev .build/release/tunneld)
# Nothing is built here. Touches /tmp/tv-quiet while it runs (other engineers' benchmarks wait).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-10}; PEERS=${2:-100}
A=${STARTUP_A:-$PWD/.build/static/release/tunneld}
B=${STARTUP_B:-$PWD/.build/release/tunneld}
for b in "$A" "$B"; do [ -x "$b" ] || { echo "startup: $b missing (scripts/build-static.sh, swift build -c release)" >&2; exit 1; }; done
command -v wg >/dev/null || { echo "startup: wg missing (scripts/deps.sh)" >&2; exit 1; }
DIR=$(mktemp -d /tmp/tv-startup.XXXXXX)
NS=tvst$$
touch /tmp/tv-quiet
cleanup() { ip netns del "$NS" 2>/dev/null || true; rm -rf "$DIR"; rm -f /tmp/tv-quiet; }
trap cleanup EXIT

umask 077
wg genkey >"$DIR/gateway.key"
mkdir -p "$DIR/policies" "$DIR/state" "$DIR/run"
echo "default allow" >"$DIR/policies/00-bench.rules"
{
  printf '[Interface]\nName = tvst%s\nPrivateKeyFile = %s/gateway.key\nListenPort = 51999\nAddress = 10.98.0.1/16\n' "$$" "$DIR"
  printf 'StateDirectory = %s/state\nRuntimeDirectory = %s/run\nPolicyDirectory = %s/policies\n' "$DIR" "$DIR" "$DIR"
  for i in $(seq 1 "$PEERS"); do
    printf '\n[Peer]\nName = p%d\nPublicKey = %s\nAllowedIPs = 10.98.%d.%d/32\nTier = premium\n' \
      "$i" "$(wg genkey | wg pubkey)" $((i / 250)) $((i % 250 + 2))
  done
} >"$DIR/tunneld.conf"

# One start: exec -> READY=1 (ms), then SIGTERM -> exit; python runs inside the namespace so
# `ip netns exec` is not counted.
cat >"$DIR/start.py" <<'PY'
import os, socket, subprocess, sys, time, signal
binary, conf, sock = sys.argv[1:4]
try: os.unlink(sock)
except FileNotFoundError: pass
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(sock); s.settimeout(30)
env = dict(os.environ, NOTIFY_SOCKET=sock)
t0 = time.monotonic()
p = subprocess.Popen([binary, "--config", conf, "--foreground"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
ready = None
try:
    while ready is None:
        msg = s.recv(4096).decode(errors="replace")
        if "READY=1" in msg.split("\n"): ready = time.monotonic()
except socket.timeout:
    p.kill(); print("no READY=1 in 30 s:", p.stderr.read().decode()[-2000:], file=sys.stderr); sys.exit(1)
p.send_signal(signal.SIGTERM); p.wait(timeout=30)
print(f"{(ready - t0) * 1000:.1f}")
PY

ip netns add "$NS"
ip netns exec "$NS" ip link set lo up
echo "startup: $PEERS peers, $ROUNDS rounds, A=$A B=$B; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -a ta=() tb=()
for r in $(seq 1 "$ROUNDS"); do
  for w in A B; do
    bin=$A; [ "$w" = A ] || bin=$B
    ms=$(ip netns exec "$NS" python3 "$DIR/start.py" "$bin" "$DIR/tunneld.conf" "$DIR/notify.sock")
    if [ "$w" = A ]; then ta+=("$ms"); else tb+=("$ms"); fi
    echo "round $r $w ${ms} ms"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "${ta[*]}" "${tb[*]}" <<'PY'
import statistics, sys
a = [float(x) for x in sys.argv[1].split()]; b = [float(x) for x in sys.argv[2].split()]
ma, mb = statistics.median(a), statistics.median(b)
print(f"median to READY: A {ma:.1f} ms (min {min(a):.1f}, max {max(a):.1f}), B {mb:.1f} ms (min {min(b):.1f}, max {max(b):.1f})")
print(f"speed ratio B/A (>= 1: A starts at least as fast): {mb / ma:.3f}")
PY
