#!/usr/bin/env bash
# wg-quick server files (Tests/ControlTests/Golden/wgquick: pivpn, wg-easy, hand-written with
# iptables PostUp) pass `tunneld --check-config` (exit 0, OK line) with the notes that say what
# tunneld does with their wg-quick keys and where peer names came from; `tunnelctl import` of each
# passes too, with every peer named by a Name line (no name notes left).
#   scripts/tests/test_wgquick_check.sh [BUILD_DIR]    (default .build/debug)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=$PWD/${1:-.build/debug}
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/policies"
for f in pivpn wg-easy hand; do
  sed "s#^\[Interface\]#[Interface]\nPolicyDirectory = $tmp/policies#" "Tests/ControlTests/Golden/wgquick/$f.conf" >"$tmp/$f.conf"
  if out=$("$BIN/tunneld" --check-config --config "$tmp/$f.conf" 2>&1) && grep -q "$f.conf: OK — interface tv0, 2 peer(s)" <<<"$out"; then
    ok "$f: check-config OK"
  else
    bad "$f: check-config: $out"
  fi
  grep -q "^note: .*Name: peer named" <<<"$out" && ok "$f: names noted" || bad "$f: no name notes: $out"
  "$BIN/tunnelctl" import "$tmp/$f.conf" -o "$tmp/$f.imported.conf" >/dev/null
  if out2=$("$BIN/tunneld" --check-config --config "$tmp/$f.imported.conf" 2>&1) && ! grep -q "Name: peer named" <<<"$out2"; then
    ok "$f: imported file checks, every peer named by its Name line"
  else
    bad "$f: imported: $out2"
  fi
done
grep -q "^note: .*PostUp: runs as root through /bin/sh" <<<"$("$BIN/tunneld" --check-config --config "$tmp/hand.conf" 2>&1)" \
  && ok "hand: PostUp noted" || bad "hand: PostUp not noted"
((fails == 0)) || { echo "$fails failure(s)"; exit 1; }
echo "wgquick check: all ok"
