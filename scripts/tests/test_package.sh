#!/usr/bin/env bash
# The Debian package on a clean Debian 12 without the Swift toolchain: scripts/package.sh builds
# it (lintian: no errors), mmdebstrap makes a minbase root from Debian's archive (no /opt/swift),
# and in that root (chroot, in a private mount namespace) `apt install ./tunnelvision_*.deb`
# works, both binaries run and need only Debian's libraries, the files are where Debian puts
# them, the unit is not enabled before a configuration exists; an upgrade keeps an edited
# conffile and tunneld.conf; `remove` keeps /etc/tunnelvision and /var/lib/tunnelvision, `purge`
# removes both; installing onto an existing configuration enables the unit.
#
#   scripts/tests/test_package.sh [IGNORED]    (root; scripts/test.sh passes a build directory)
#
# Environment:
#   TV_DEB=FILE          test this .deb instead of building one (scripts/package.sh)
#   TV_TEST_CACHE=DIR    where the root tarball is cached (default /var/cache/tunnelvision-test),
#                        one per package list: the tarball holds minbase plus the package's
#                        Depends and Recommends, so `apt install ./…deb` needs no network.
#   TV_MIRROR=URL        Debian mirror (default http://deb.debian.org/debian, as the host's apt)
# The first run downloads about 60 MB and builds the tarball (a few minutes); later runs reuse it.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ "$(id -u)" -eq 0 ] || { echo "skip test_package.sh (needs root: chroot, mounts)"; exit 0; }
# Everything below runs in a private mount namespace: its mounts go away with it, also on failure.
if [ -z "${TV_PKG_TEST_NS:-}" ]; then
  exec env TV_PKG_TEST_NS=1 unshare --mount --propagation private bash "$0" "$@"
fi

fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
check() { local what=$1; shift; if "$@" >/dev/null 2>&1; then ok "$what"; else bad "$what"; fi; }
not() { ! "$@"; }
t0=$(date +%s); tlast=$t0
timing() { local now; now=$(date +%s); echo "time $1: $((now - tlast)) s (total $((now - t0)) s)"; tlast=$now; }

work=$(mktemp -d /tmp/tv-pkgtest.XXXXXX)
root=$work/root
cleanup() {
  for m in "$root/sys" "$root/run" "$root/tmp" "$root/dev" "$root/proc"; do
    while mountpoint -q "$m" 2>/dev/null; do umount -l "$m"; done
  done
  # --one-file-system: never into a mount that is somehow still there.
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

# Tools (a fresh CI machine has none of them): mmdebstrap, debhelper, lintian via scripts/deps.sh.
bash scripts/deps.sh
timing deps

# --- the packages: this build, and a "newer" one of the same binaries (version + suffix)
if [ -n "${TV_DEB:-}" ]; then
  deb=$(readlink -f "$TV_DEB")
else
  deb=$(bash scripts/package.sh "$work/deb1" | tail -1)
fi
[ -f "$deb" ] || { echo "FAIL no package at '$deb'"; exit 1; }
v1=$(dpkg-deb -f "$deb" Version)
timing "package $v1"
mkdir -p "$work/x" "$work/bin"
dpkg-deb -x "$deb" "$work/x"
cp "$work/x/usr/sbin/tunneld" "$work/x/usr/bin/tunnelctl" "$work/bin/"
deb2=$(TV_BIN_DIR=$work/bin TV_VERSION_SUFFIX=+upgradetest bash scripts/package.sh "$work/deb2" | tail -1)
v2=$(dpkg-deb -f "$deb2" Version)
check "the rebuilt package's version $v2 is newer than $v1" dpkg --compare-versions "$v2" gt "$v1"
timing "package $v2 (no compile)"

# --- lintian: no errors; the warnings are listed (and explained in docs/packaging.md)
lintian --fail-on error --tag-display-limit 0 "$deb" >"$work/lintian.txt" 2>&1 && lint=0 || lint=$?
sed 's/^/     lintian: /' "$work/lintian.txt"
check "lintian reports no errors" test "$lint" -eq 0
check "… and only the warnings docs/packaging.md explains" \
  bash -c "! grep -E '^W: ' '$work/lintian.txt' | awk '{print \$3}' | sort -u | grep -vxF -f <(sed -n 's/^| \`\([a-z0-9-]*\)\` .*/\1/p' docs/packaging.md)"
timing lintian

# --- the clean root: minbase + the package's dependencies, cached per package list
arch=$(dpkg --print-architecture)
mirror=${TV_MIRROR:-http://deb.debian.org/debian}
deps=$( { dpkg-deb -f "$deb" Depends; echo ","; dpkg-deb -f "$deb" Recommends; } | tr ',|' '\n\n' \
  | sed 's/(.*)//; s/:any//; s/[[:space:]]//g' | grep -v '^$' | sort -u | tr '\n' ',' | sed 's/,$//')
cache=${TV_TEST_CACHE:-/var/cache/tunnelvision-test}
key=$(echo "bookworm $arch $mirror minbase $deps" | sha256sum | cut -c1-16)
tarball=$cache/bookworm-$arch-$key.tar
mkdir -p "$cache"
if [ ! -s "$tarball" ]; then
  echo "building the root tarball $tarball (minbase + $deps)"
  mmdebstrap --variant=minbase --format=tar --include="$deps" --architectures="$arch" bookworm "$cache/tmp-$key.tar" \
    "deb $mirror bookworm main" "deb $mirror bookworm-updates main" "deb ${mirror%/debian}/debian-security bookworm-security main" \
    >"$work/mmdebstrap.log" 2>&1 || { tail -30 "$work/mmdebstrap.log"; echo "FAIL mmdebstrap"; exit 1; }
  mv "$cache/tmp-$key.tar" "$tarball"
  # Roots for other package lists (an older Depends) are not used again.
  find "$cache" -maxdepth 1 -name "bookworm-$arch-*.tar" ! -name "$(basename "$tarball")" -delete
fi
mkdir -p "$root"
tar -C "$root" -xf "$tarball"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
cp "$deb" "$deb2" scripts/lib/check-libs.sh "$root/tmp/"
# Nothing may start in the root (there is no systemd running in it anyway).
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"; chmod +x "$root/usr/sbin/policy-rc.d"
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }
apt_get() { in_root apt-get -y -q --no-install-recommends -o APT::Sandbox::User=root "$@" </dev/null; }
check "the root has no /opt/swift" not test -e "$root/opt/swift"
check "the root has no swift toolchain library anywhere" test -z "$(find "$root" -xdev -name 'libswiftCore.so*' -print -quit)"
timing "root ($(du -sm "$tarball" | cut -f1) MB tarball)"

# --- install
apt_get install "/tmp/$(basename "$deb")" >"$work/install.log" 2>&1 || { tail -20 "$work/install.log"; bad "apt install ./$(basename "$deb")"; }
check "apt installed tunnelvision $v1" test "$(in_root dpkg-query -W -f '${Status} ${Version}' tunnelvision)" = "install ok installed $v1"
check "tunneld --version runs" in_root /usr/sbin/tunneld --version
check "tunnelctl --version runs" in_root /usr/bin/tunnelctl --version
echo "     $(in_root /usr/sbin/tunneld --version 2>&1 | head -1); $(in_root /usr/bin/tunnelctl --version 2>&1 | head -1)"
check "tunnelctl help runs" in_root /usr/bin/tunnelctl help
check "tunneld --help lists --version" bash -c "chroot '$root' /usr/sbin/tunneld --help | grep -q -- '--version, -V'"
check "ldd: both binaries need only libraries under /lib and /usr/lib" in_root bash /tmp/check-libs.sh /usr/sbin/tunneld /usr/bin/tunnelctl
echo "     ldd tunneld: $(in_root ldd /usr/sbin/tunneld | awk '$1 !~ /^linux-vdso/ {print $1}' | tr '\n' ' ')"
check "the binaries are stripped" bash -c "file -L '$root/usr/sbin/tunneld' '$root/usr/bin/tunnelctl' | grep -c ', stripped' | grep -qx 2"
for f in usr/share/man/man8/tunneld.8.gz usr/share/man/man8/tunnelctl.8.gz usr/share/man/man5/tunneld.conf.5.gz \
         usr/share/man/man5/tunnelvision-rules.5.gz usr/share/bash-completion/completions/tunnelctl \
         usr/share/zsh/vendor-completions/_tunnelctl usr/lib/tunnelvision/router-nat.sh lib/systemd/system/tunneld.service \
         usr/share/doc/tunnelvision/README.md usr/share/doc/tunnelvision/examples/tunneld.conf usr/share/doc/tunnelvision/copyright; do
  check "/$f installed" test -e "$root/$f"
done
check "router-nat.sh runs (--help)" in_root bash /usr/lib/tunnelvision/router-nat.sh --help
conffiles=$(in_root dpkg-query -W -f '${Conffiles}' tunnelvision | grep -c ' /etc/tunnelvision/policies/.*\.rules ' || true)
check "every shipped policy file is a conffile ($conffiles)" test "$conffiles" -gt 0 -a "$conffiles" -eq "$(ls "$root"/etc/tunnelvision/policies/*.rules | wc -l)"
check "no tunneld.conf or private.key shipped" not test -e "$root/etc/tunnelvision/tunneld.conf" -o -e "$root/etc/tunnelvision/private.key"
unit=$root/lib/systemd/system/tunneld.service
check "the unit starts /usr/sbin/tunneld" grep -q '^ExecStart=/usr/sbin/tunneld --foreground' "$unit"
check "the unit checks the config with /usr/sbin/tunneld" grep -q '^ExecStartPre=/usr/sbin/tunneld --check-config' "$unit"
check "no /usr/local in the unit" not grep -q /usr/local "$unit"
wants=$root/etc/systemd/system/multi-user.target.wants/tunneld.service
check "not enabled: there is no configuration yet" not test -e "$wants"
check "/var/lib/tunnelvision is 0750 root:root" test "$(stat -c '%a %U:%G' "$root/var/lib/tunnelvision")" = "750 root:root"
check "/etc/tunnelvision is 0750 (the private key goes there)" test "$(stat -c '%a' "$root/etc/tunnelvision")" = 750
echo "     installed: tunneld $(du -k "$root/usr/sbin/tunneld" | cut -f1) KiB, tunnelctl $(du -k "$root/usr/bin/tunnelctl" | cut -f1) KiB, package Installed-Size $(dpkg-deb -f "$deb" Installed-Size) KiB"
timing install

# --- the first run, with the installed tunnelctl: init, then the installed tunneld checks it
out=$(in_root /usr/bin/tunnelctl init --endpoint gw.example.org 2>&1) && ok "tunnelctl init writes the configuration" \
  || bad "tunnelctl init: $out"
printf '%s\n' "$out" | sed 's/^/     | /'
check "init wrote private.key, mode 0600" test "$(stat -c %a "$root/etc/tunnelvision/private.key" 2>/dev/null)" = 600
check "init wrote tunneld.conf" test -s "$root/etc/tunnelvision/tunneld.conf"
check "init kept the packaged policies (conffiles)" grep -q "kept" <<<"$out"
check "a second init refuses to overwrite" not in_root /usr/bin/tunnelctl init --endpoint gw.example.org
out=$(in_root /usr/sbin/tunneld --check-config --config /etc/tunnelvision/tunneld.conf 2>&1) \
  && ok "tunneld --check-config passes on what init wrote, with the packaged default policies and no peers" || bad "tunneld --check-config: $out"
check "… without a warning" not grep -qi warning <<<"$out"
out=$(in_root /usr/bin/tunnelctl policy test 'tcp 10.99.0.2:40000 -> 192.168.1.5:22' 2>&1 || true)
check "policy test without --config reads the default configuration (the README's example answers)" grep -q "private-v4" <<<"$out"
check "tunnelctl policy check passes on the packaged policies" in_root /usr/bin/tunnelctl policy check --config /etc/tunnelvision/tunneld.conf
# Local times come from the system's tzdata (no ICU in the binaries): 12:00 in Paris is 10:00Z in June.
at=$(in_root env TUNNELCTL_TZ=Europe/Paris /usr/bin/tunnelctl policy test 'tcp 10.99.0.2:1 -> 192.0.2.1:443 at 2025-06-30T12:00' \
  --config /etc/tunnelvision/tunneld.conf --json 2>&1 || true)
check "a local time in Europe/Paris is read with tzdata's offset" grep -q '2025-06-30T10:00:00.000Z' <<<"$at"
timing "init"

# --- upgrade: an edited conffile and the edited tunneld.conf stay
first=$(ls "$root"/etc/tunnelvision/policies/*.rules | head -1)
echo "# edited by the operator" >>"$first"
echo "# edited by the operator" >>"$root/etc/tunnelvision/tunneld.conf"
sum_rules=$(sha256sum <"$first"); sum_conf=$(sha256sum <"$root/etc/tunnelvision/tunneld.conf")
apt_get install "/tmp/$(basename "$deb2")" >"$work/upgrade.log" 2>&1 || { tail -20 "$work/upgrade.log"; bad "apt install the newer package"; }
check "upgraded to $v2" test "$(in_root dpkg-query -W -f '${Version}' tunnelvision)" = "$v2"
check "the edited conffile $(basename "$first") is kept" test "$(sha256sum <"$first")" = "$sum_rules"
check "the edited tunneld.conf is kept" test "$(sha256sum <"$root/etc/tunnelvision/tunneld.conf")" = "$sum_conf"
check "private.key is kept" test -s "$root/etc/tunnelvision/private.key"
check "dpkg asked nothing (no .dpkg-new / .dpkg-dist left)" test -z "$(find "$root/etc/tunnelvision" -name '*.dpkg-*')"
check "tunneld from the new package runs" in_root /usr/sbin/tunneld --version
timing upgrade

# --- end to end from the installed files: scripts/e2e/first-run.sh with the root's tunneld and
# tunnelctl (chroot; the test's /tmp, /run and the namespace's /sys bound in), wg-quick on the host
if [ -n "${TV_PKG_NO_E2E:-}" ]; then echo "skip end to end from the installed files (TV_PKG_NO_E2E)"; else
  for b in usr/sbin/tunneld usr/bin/tunnelctl; do
    cat >"$work/bin/installed-$(basename $b)" <<SH
#!/bin/sh
# The installed $(basename $b), run inside the clean root: the Swift toolchain is not there.
for d in tmp run; do mountpoint -q "$root/\$d" || mount --bind "/\$d" "$root/\$d"; done
mount --bind /sys "$root/sys"
exec chroot "$root" /$b "\$@"
SH
    chmod 755 "$work/bin/installed-$(basename $b)"
  done
  TV_TUNNELD=$work/bin/installed-tunneld TV_TUNNELCTL=$work/bin/installed-tunnelctl TV_INSTALLED_ROOT=$root bash scripts/e2e/first-run.sh \
    >"$work/first-run.log" 2>&1 && ok "first-run.sh from the installed files ($(grep -c '^  ok' "$work/first-run.log") checks)" \
    || { sed 's/^/     | /' "$work/first-run.log" | tail -40; bad "first-run.sh from the installed files"; }
  # The wrappers run outside a namespace too (tunnelctl on the host): each stacked a /sys bind.
  for d in sys run tmp; do while mountpoint -q "$root/$d"; do umount -l "$root/$d"; done; done
  tail -1 "$work/first-run.log" | sed 's/^/     /'
  check "… and it ran the root's binaries" grep -q "^first-run: tunneld $work/bin/installed-tunneld, tunnelctl $work/bin/installed-tunnelctl" "$work/first-run.log"
  timing "end to end from the installed files"
fi

# --- remove keeps configuration and state; purge removes both
echo "state" >"$root/var/lib/tunnelvision/state.db"
apt_get remove tunnelvision >"$work/remove.log" 2>&1 || { tail -20 "$work/remove.log"; bad "apt remove"; }
check "remove: the binaries are gone" not test -e "$root/usr/sbin/tunneld"
check "remove: /var/lib/tunnelvision is kept" test -f "$root/var/lib/tunnelvision/state.db"
check "remove: tunneld.conf and private.key are kept" test -f "$root/etc/tunnelvision/tunneld.conf" -a -f "$root/etc/tunnelvision/private.key"
check "remove: the edited conffile is kept" test -f "$first"
apt_get purge tunnelvision >"$work/purge.log" 2>&1 || { tail -20 "$work/purge.log"; bad "apt purge"; }
check "purge: /etc/tunnelvision is gone" not test -e "$root/etc/tunnelvision"
check "purge: /var/lib/tunnelvision is gone" not test -e "$root/var/lib/tunnelvision"
check "purge: dpkg has forgotten the package" not in_root dpkg-query -W -f '${Status}' tunnelvision
timing "remove, purge"

# --- installing onto an existing configuration enables the unit (never starts it in a chroot)
mkdir -p "$root/etc/tunnelvision"
cp "$work/x/usr/share/doc/tunnelvision/examples/tunneld.conf" "$root/etc/tunnelvision/tunneld.conf"
apt_get install "/tmp/$(basename "$deb")" >"$work/install2.log" 2>&1 || { tail -20 "$work/install2.log"; bad "apt install onto a configuration"; }
check "configured before install: the unit is enabled" test -L "$wants"
apt_get purge tunnelvision >/dev/null 2>&1 || bad "second purge"
check "purge removes the enablement" not test -e "$wants"
timing "install onto a configuration"

[ $fails -eq 0 ] && echo "package: all passed in $(( $(date +%s) - t0 )) s" || { echo "package: $fails failed"; exit 1; }
