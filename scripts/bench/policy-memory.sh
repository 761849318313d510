#!/usr/bin/env bash
# Policy memory (issue 18, deliverable 5: 100,000 CIDR+port rules in ≤ 64 MB RSS, ≤ 2 s to compile).
# Writes the 100,000-rule blocklist of `tunnelbench policy` (--write-blocklist: one generator) and a
# one-rule policy, then RUNS times each: the peak RSS (VmHWM, GNU time's %M) of
# `tunnelctl policy test` on both — what the operator's command costs, parse included, and the
# process's floor — and `tunnelbench policy --blocklist` (parse and compile time, in-process RSS).
# Prints each run and the median with min–max (MiB = 1024 kB, as GNU time counts).     Usage: scripts/bench/policy-memory.sh [RUNS]
# TV_NO_BUILD=1 skips the release build.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:-3}
export PATH=/opt/swift/usr/bin:$PATH
[ -n "${TV_NO_BUILD:-}" ] || { swift build -c release --product tunnelctl >/dev/null; swift build -c release --product tunnelbench >/dev/null; }
BIN=$(swift build -c release --show-bin-path)
DIR=$(mktemp -d /tmp/tv-policy-memory.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
"$BIN/tunnelbench" policy --write-blocklist "$DIR/big"
mkdir -p "$DIR/small" && printf 'default allow\ndefault in block\nblock proto tcp port 25 name smtp\n' >"$DIR/small/50-one.rules"
FLOW='tcp 10.99.0.2:40000 -> 198.51.100.7:443'
echo "== $(date -u +%FT%TZ) on $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); release build"
echo "$(grep -c . "$DIR/big/50-blocklist.rules") lines, $(($(stat -c %s "$DIR/big/50-blocklist.rules") / 1024)) KiB of rule text"
peak() {  # peak RSS in kB of one tunnelctl policy test run on $1
  /usr/bin/time -f %M -o "$DIR/time" "$BIN/tunnelctl" policy test --policies "$1" "$FLOW" >"$DIR/out" 2>&1 || true
  grep -q '^verdict' "$DIR/out" || { cat "$DIR/out" >&2; exit 1; }
  cat "$DIR/time"
}
big="" small="" compile="" parse=""
for r in $(seq "$RUNS"); do
  b=$(peak "$DIR/big"); s=$(peak "$DIR/small")
  line=$("$BIN/tunnelbench" policy --blocklist)
  c=$(sed -E 's/.*compile ([0-9]+) ms CPU.*/\1/' <<<"$line"); p=$(sed -E 's/.*parse ([0-9]+) ms CPU.*/\1/' <<<"$line")
  echo "run $r: tunnelctl policy test peak RSS: 100,000 rules $b kB, 1 rule $s kB; $line"
  big+="$b " small+="$s " compile+="$c " parse+="$p "
done
python3 - "$big" "$small" "$compile" "$parse" <<'PY'
import statistics, sys
big, small, comp, parse = ([float(x) for x in a.split()] for a in sys.argv[1:5])
def mb(v): return f"{statistics.median(v) / 1024:.1f} MiB ({min(v) / 1024:.1f}-{max(v) / 1024:.1f}; {statistics.median(v):.0f} kB)"
def ms(v): return f"{statistics.median(v):.0f} ms ({min(v):.0f}-{max(v):.0f})"
print(f"runs: {len(big)}")
print(f"tunnelctl policy test peak RSS: 100,000 rules {mb(big)} (bar <= 64 MiB); 1 rule {mb(small)}; difference {statistics.median(big) / 1024 - statistics.median(small) / 1024:.1f} MiB")
print(f"100,000 rules: parse {ms(parse)} CPU, compile {ms(comp)} CPU (bar <= 2000 ms)")
PY
