#!/usr/bin/env bash
# scripts/install.sh into temporary DESTDIRs: every file lands at its FHS path under PREFIX, the
# unit points at PREFIX's binaries, an existing configuration is never overwritten, a second
# install changes nothing it must not, and --uninstall removes exactly what was installed (an
# edited configuration stays; directories that existed before stay).
#   scripts/tests/test_install.sh [BUILD_DIR]    (default .build/debug: no release build needed)
set -euo pipefail
cd "$(dirname "$0")/../.."
export BUILD_DIR=${1:-.build/debug}
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
not() { ! "$@"; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# The debug build needs /opt/swift's libraries: allowed here (the refusal is tested below).
inst() { DESTDIR=$D PREFIX=${P:-/usr/local} scripts/install.sh --no-build --allow-toolchain-libs "$@"; }

echo "--- PREFIX=/usr/local into an empty DESTDIR"
D=$tmp/a
inst >"$tmp/out1" 2>&1 || { cat "$tmp/out1"; bad "install failed"; }
for f in usr/local/bin/tunneld usr/local/bin/tunnelctl usr/local/lib/tunnelvision/router-nat.sh; do
  check "$f executable" test -x "$D/$f"
done
for f in usr/local/share/man/man8/tunneld.8 usr/local/share/man/man8/tunnelctl.8 usr/local/share/man/man5/tunneld.conf.5 \
         usr/local/share/man/man5/tunnelvision-rules.5 usr/local/share/bash-completion/completions/tunnelctl \
         usr/local/share/zsh/site-functions/_tunnelctl usr/local/share/doc/tunnelvision/README.md \
         usr/local/share/doc/tunnelvision/examples/tunneld.conf etc/systemd/system/tunneld.service \
         usr/local/share/tunnelvision/install-manifest; do
  check "$f installed" test -f "$D/$f"
done
check "the default policies are installed in /etc/tunnelvision/policies" test "$(ls "$D/etc/tunnelvision/policies" | wc -l)" -eq "$(ls policies/*.rules | wc -l)"
check "no tunneld.conf is installed (tunnelctl init writes it)" not test -e "$D/etc/tunnelvision/tunneld.conf"
check "the rules that name peers are examples only" test -f "$D/usr/local/share/doc/tunnelvision/examples/policies/15-admin-ssh.rules"
check "the unit starts /usr/local/bin/tunneld" grep -q '^ExecStart=/usr/local/bin/tunneld ' "$D/etc/systemd/system/tunneld.service"
check "the installed tunnelctl runs" bash -c "'$D/usr/local/bin/tunnelctl' --version | grep -q '^tunnelctl '"
check "nothing outside DESTDIR was written (no manifest at the real PREFIX)" not test -e /usr/local/share/tunnelvision/install-manifest
check "the installed man page renders" bash -c "MANWIDTH=80 man -l '$D/usr/local/share/man/man8/tunnelctl.8' 2>/dev/null | grep -q 'tunnelctl policy test'"

echo "--- an existing configuration is never overwritten"
first=$(ls "$D/etc/tunnelvision/policies" | head -1)
echo "# edited by the operator" >>"$D/etc/tunnelvision/policies/$first"
echo "block to 192.0.2.1" >"$D/etc/tunnelvision/policies/99-mine.rules"
before=$(sha256sum "$D/etc/tunnelvision/policies/$first")
inst >"$tmp/out2" 2>&1 || { cat "$tmp/out2"; bad "second install failed"; }
check "second install keeps the edited $first" test "$(sha256sum "$D/etc/tunnelvision/policies/$first")" = "$before"
check "… and says so" grep -q "policies/$first exists; left as it is" "$tmp/out2"
check "… and keeps the operator's own rule file" test -f "$D/etc/tunnelvision/policies/99-mine.rules"

echo "--- --uninstall"
inst --uninstall >"$tmp/out3" 2>&1 || { cat "$tmp/out3"; bad "uninstall failed"; }
check "the edited $first is kept" test -f "$D/etc/tunnelvision/policies/$first"
check "… and uninstall says so" grep -q "keeping /etc/tunnelvision/policies/$first" "$tmp/out3"
check "the operator's rule file is kept" test -f "$D/etc/tunnelvision/policies/99-mine.rules"
left=$(cd "$D" && find . -mindepth 1 -not -type d | sort | tr '\n' ' ')
check "only those two files are left (got: $left)" test "$left" = "./etc/tunnelvision/policies/$first ./etc/tunnelvision/policies/99-mine.rules "
check "no empty directories of the install are left" test -z "$(cd "$D" && find usr -type d -empty 2>/dev/null)"

echo "--- PREFIX=/opt/tv, a DESTDIR with a file of someone else's"
D=$tmp/b; P=/opt/tv
mkdir -p "$D/opt/tv/bin"; echo other >"$D/opt/tv/bin/other-tool"
inst >"$tmp/out4" 2>&1 || { cat "$tmp/out4"; bad "install to /opt/tv failed"; }
check "binaries in /opt/tv/bin" test -x "$D/opt/tv/bin/tunneld"
check "the unit starts /opt/tv/bin/tunneld" grep -q '^ExecStart=/opt/tv/bin/tunneld ' "$D/etc/systemd/system/tunneld.service"
check "the unit's ExecStartPre uses /opt/tv/bin too" grep -q '^ExecStartPre=/opt/tv/bin/tunneld --check-config' "$D/etc/systemd/system/tunneld.service"
check "no /usr/local left in the unit" not grep -q /usr/local "$D/etc/systemd/system/tunneld.service"
inst --uninstall >/dev/null
left=$(cd "$D" && find . -mindepth 1 | sort | tr '\n' ' ')
check "uninstall leaves exactly what was there before (got: $left)" test "$left" = "./opt ./opt/tv ./opt/tv/bin ./opt/tv/bin/other-tool "

echo "--- binaries that need the Swift toolchain"
out=$(DESTDIR=$tmp/t scripts/install.sh --no-build 2>&1) && bad "a build needing /opt/swift was installed without --allow-toolchain-libs" \
  || check "a build needing /opt/swift is refused, naming the library" grep -q "refusing to install.*libswiftCore" <(tr '\n' ' ' <<<"$out")
check "… and says how to build it static or override" grep -q "scripts/build-static.sh.*--allow-toolchain-libs" <<<"$out"
check "… and installs nothing" not test -e "$tmp/t/usr/local/bin/tunneld"
out=$(DESTDIR=$tmp/t scripts/install.sh --no-build --allow-toolchain-libs 2>&1) || bad "--allow-toolchain-libs install failed"
check "--allow-toolchain-libs installs, with a warning" grep -q "WARNING: installing binaries that need libraries outside the system" <<<"$out"
out=$(scripts/install.sh --help)
check "--help is the header only (no code line)" not grep -q "set -euo" <<<"$out"
check "--help names --allow-toolchain-libs" grep -q -- "--allow-toolchain-libs" <<<"$out"

echo "--- errors"
out=$(DESTDIR=$tmp/c scripts/install.sh --bogus 2>&1) && bad "--bogus accepted" || check "an unknown argument is a usage error" grep -q "unknown argument '--bogus'" <<<"$out"
out=$(DESTDIR=$tmp/c scripts/install.sh --uninstall 2>&1) && bad "uninstall without a manifest succeeded" || check "uninstall without a manifest says where it looked" grep -q "no manifest at" <<<"$out"
out=$(DESTDIR=$tmp/c PREFIX=relative scripts/install.sh --no-build 2>&1) && bad "relative PREFIX accepted" || check "a relative PREFIX is refused" grep -q "absolute" <<<"$out"

out=$(DESTDIR=$tmp/c BUILD_DIR=$tmp/nobuild scripts/install.sh 2>&1) && bad "a BUILD_DIR without binaries was accepted" || check "a given BUILD_DIR without binaries is an error, not a build elsewhere" grep -q "nobuild/tunneld missing" <<<"$out"

[ $fails -eq 0 ] && echo "install: all passed" || { echo "install: $fails failed"; exit 1; }
