#!/usr/bin/env bash
# The release build that ships: tunneld and tunnelctl with the Swift runtime, FoundationEssentials
# and Dispatch linked statically (--static-swift-stdlib), so they run without /opt/swift; only
# Debian's libraries stay dynamic. Unstripped, with a GNU build ID (scripts/package.sh strips them
# and keeps the debug symbols apart) and full RELRO (-z relro -z now, as Debian's hardening flags).
# Its own build tree, so `swift build` dev builds stay dynamic.
#
#   scripts/build-static.sh            -> .build/static/release/{tunneld,tunnelctl}
#   STATIC_BUILD_DIR=DIR               another scratch directory (default .build/static)
#
# Prints the directory holding the two binaries on its last line. Fails when either binary needs
# a library from the Swift toolchain (scripts/lib/check-libs.sh says which).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH
scratch=${STATIC_BUILD_DIR:-.build/static}
for p in tunneld tunnelctl; do
  swift build -c release --scratch-path "$scratch" --static-swift-stdlib --disable-local-rpath --product "$p" \
    -Xlinker --build-id=sha1 -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now >&2
done
bin=$(swift build -c release --scratch-path "$scratch" --show-bin-path)
bash scripts/lib/check-libs.sh "$bin/tunneld" "$bin/tunnelctl" >&2
echo "$bin"
