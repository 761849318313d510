#!/usr/bin/env bash
# The man pages: each renders with man -l without a warning; tunnelctl.8 is what the command table
# generates; tunneld.8 describes every option `tunneld --help` prints; the examples in
# tunnelvision-rules.5 and tunneld.conf.5 are accepted by the real parsers.
#   scripts/tests/test_man.sh [BUILD_DIR]    (default .build/debug, after swift build --build-tests)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-.build/debug}
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

for page in man/*.[1-8]; do
  w=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
  [ -z "$w" ] && ok "$page renders without warnings" || bad "$page: $w"
  MANWIDTH=80 man -l "$page" 2>/dev/null | grep -q "^NAME" && ok "$page has a NAME section" || bad "$page: no NAME"
done

"$BIN/tunnelctl" help --man | cmp -s - man/tunnelctl.8 && ok "man/tunnelctl.8 = tunnelctl help --man" \
  || bad "man/tunnelctl.8 differs from 'tunnelctl help --man' (run scripts/gen-docs.sh)"

# Every option of tunneld's usage is in tunneld.8 (written as \-\-name in roff).
opts=$("$BIN/tunneld" --help | grep -o -- '--[a-z][a-z-]*' | sort -u)
[ -n "$opts" ] || bad "tunneld --help printed no options"
for o in $opts; do
  grep -qF -- "${o//-/\\-}" man/tunneld.8 && ok "tunneld.8 describes $o" || bad "tunneld.8 does not describe $o (tunneld --help prints it)"
done

# The EXAMPLE block (between .nf and .fi under .SH EXAMPLE) of a page, roff escapes undone.
example() { awk '/^\.SH EXAMPLE/ { on = 1 } on && /^\.fi/ { exit } on && p { print } on && /^\.nf/ { p = 1 }' "$1" | sed 's/\\-/-/g; s/\\e/\\/g'; }
mkdir "$tmp/policies"
example man/tunnelvision-rules.5 >"$tmp/policies/10-example.rules"
if out=$("$BIN/tunnelctl" policy check "$tmp/policies" 2>&1); then ok "tunnelvision-rules.5's example passes policy check"; else bad "tunnelvision-rules.5 example: $out"; fi
example man/tunneld.conf.5 >"$tmp/tunneld.conf"
if out=$("$BIN/tunnelctl" peers --names --config "$tmp/tunneld.conf" 2>&1) && [ "$out" = alice ]; then
  ok "tunneld.conf.5's example parses (peer alice)"
else
  bad "tunneld.conf.5 example: $out"
fi

[ $fails -eq 0 ] && echo "man pages: all passed" || { echo "man pages: $fails failed"; exit 1; }
