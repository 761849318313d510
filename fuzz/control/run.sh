#!/bin/sh
# Builds the Control fuzz harness with libFuzzer + AddressSanitizer and runs it.
#   fuzz/control/run.sh [libFuzzer options…]     e.g. fuzz/control/run.sh -max_total_time=60
set -eu
cd "$(dirname "$0")/../.."
export PATH=/opt/swift/usr/bin:$PATH
out=.build/fuzz-control
mkdir -p "$out" "$out/corpus"
flags="-parse-as-library -sanitize=fuzzer,address -Onone -g -swift-version 6"
swiftc $flags -emit-library -static -emit-module -module-name Packet -emit-module-path "$out/Packet.swiftmodule" \
    Sources/Packet/*.swift -o "$out/libPacket.a"
swiftc $flags -I "$out" -emit-library -static -emit-module -module-name Control -emit-module-path "$out/Control.swiftmodule" \
    Sources/Control/*.swift -o "$out/libControl.a"
swiftc $flags -I "$out" fuzz/control/ControlFuzz.swift "$out/libControl.a" "$out/libPacket.a" -o "$out/control-fuzz"
exec "$out/control-fuzz" "$out/corpus" fuzz/control/corpus "$@"
