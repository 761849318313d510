#!/usr/bin/env bash
# Builds the Debian package with Debian's tools (dpkg-buildpackage, debhelper; Depends computed by
# dpkg-shlibdeps): OUTDIR/tunnelvision_VERSION_ARCH.deb and tunnelvision-dbgsym_VERSION_ARCH.deb
# (the debug symbols dh_strip took out of the binaries, found through their build IDs).
#
#   scripts/package.sh [OUTDIR]       default .build/deb; prints the .deb's path on its last line
#
# Environment:
#   TV_BIN_DIR=DIR        take tunneld and tunnelctl (unstripped, static) from DIR instead of
#                         building them with scripts/build-static.sh
#   TV_VERSION_SUFFIX=S   appended to the version, e.g. +rebuild1: a newer package of the same
#                         commit without compiling again (the upgrade test uses it)
#
# VERSION comes from `git describe` (a tag vX.Y.Z: X.Y.Z, or X.Y.Z+gitN.gHASH N commits later;
# no tag: Core's ProductVersion + gitN.gHASH, N = commits in HEAD), `+dirty` for uncommitted
# changes, then TV_VERSION_SUFFIX. ARCH is `dpkg --print-architecture`: nothing here is specific
# to amd64 (docs/packaging.md: building on arm64). The Debian files are packaging/debian/; this
# script stages them with the built files under OUTDIR/src and runs dpkg-buildpackage there.
set -euo pipefail
cd "$(dirname "$0")/.."
ME=package
out=${1:-.build/deb}
mkdir -p "$out"
out=$(cd "$out" && pwd)

for t in dpkg-buildpackage dh dpkg-shlibdeps objcopy; do
  command -v "$t" >/dev/null || { echo "$ME: $t missing (apt-get install build-essential debhelper binutils)" >&2; exit 1; }
done

# The version (Debian's rules: digits first; letters, digits, . + ~ only in a native version).
if d=$(git describe --tags --long --match 'v[0-9]*' 2>/dev/null); then
  tag=${d%-*-g*}; rest=${d#"$tag"-}; n=${rest%%-*}; hash=${rest#*-}
  version=${tag#v}
  [ "$n" = 0 ] || version="$version+git$n.$hash"
else
  base=$(sed -n 's/.*static let current = "\([^"]*\)".*/\1/p' Sources/Core/ProductVersion.swift)
  version="$base+git$(git rev-list --count HEAD).g$(git rev-parse --short=7 HEAD)"
fi
[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || version="$version+dirty"
version=$(printf '%s' "$version${TV_VERSION_SUFFIX:-}" | tr -- '-_' '~~')
dpkg --validate-version "$version" >/dev/null 2>&1 && [[ $version =~ ^[0-9][A-Za-z0-9.+~]*$ ]] \
  || { echo "$ME: '$version' is not a Debian version (TV_VERSION_SUFFIX may hold letters, digits, . + ~)" >&2; exit 2; }
arch=$(dpkg --print-architecture)

# The binaries: static Swift runtime, nothing from the toolchain (checked again here).
if [ -n "${TV_BIN_DIR:-}" ]; then
  bin=$TV_BIN_DIR
else
  bin=$(bash scripts/build-static.sh | tail -1)
fi
bash scripts/lib/check-libs.sh "$bin/tunneld" "$bin/tunnelctl" \
  || { echo "$ME: $bin has binaries that need the Swift toolchain; build them with scripts/build-static.sh" >&2; exit 1; }

# The source tree dpkg-buildpackage works in: packaging/debian as debian/, the binaries in bin/,
# and the files debian/rules installs.
src=$out/src
rm -rf "$src"
mkdir -p "$src/bin" "$src/scripts"
cp -R packaging/debian "$src/debian"
cp "$bin/tunneld" "$bin/tunnelctl" "$src/bin/"
cp scripts/router-nat.sh "$src/scripts/"
cp -R README.md docs man completion etc policies "$src/"
[ ! -d examples ] || cp -R examples "$src/"
epoch=$(git log -1 --format=%ct)
cat >"$src/debian/changelog" <<EOF
tunnelvision ($version) bookworm; urgency=medium

  * Built from commit $(git rev-parse --short=12 HEAD) by scripts/package.sh.

 -- $(sed -n 's/^Maintainer: //p' packaging/debian/control)  $(LC_ALL=C date -u -R -d "@$epoch")
EOF

rm -f "$out"/tunnelvision_*.deb "$out"/tunnelvision-dbgsym_*.deb "$out"/tunnelvision_*.changes "$out"/tunnelvision_*.buildinfo
echo "$ME: building tunnelvision $version ($arch)" >&2
(cd "$src" && SOURCE_DATE_EPOCH=$epoch dpkg-buildpackage -b --no-sign >"$out/build.log" 2>&1) \
  || { tail -40 "$out/build.log" >&2; echo "$ME: dpkg-buildpackage failed (log: $out/build.log)" >&2; exit 1; }

deb=$out/tunnelvision_${version}_${arch}.deb
[ -f "$deb" ] || { echo "$ME: $deb was not built (log: $out/build.log)" >&2; exit 1; }
{
  echo "$ME: $(basename "$deb"): $(du -k "$deb" | cut -f1) KiB, installed size $(dpkg-deb -f "$deb" Installed-Size) KiB"
  echo "$ME: Depends: $(dpkg-deb -f "$deb" Depends)"
  dbg=$out/tunnelvision-dbgsym_${version}_${arch}.deb
  [ ! -f "$dbg" ] || echo "$ME: $(basename "$dbg"): $(du -k "$dbg" | cut -f1) KiB (debug symbols)"
} >&2
echo "$deb"
