#!/bin/sh
# Builds and runs the WireGuard receive fuzzer (libFuzzer + ASan). Usage: fuzz/wireguard/run.sh [libFuzzer args]
# e.g. fuzz/wireguard/run.sh -runs=200000   or   fuzz/wireguard/run.sh -max_total_time=60
set -eu
cd "$(dirname "$0")/../.."
export PATH=/opt/swift/usr/bin:$PATH
OUT=.build/fuzz-wireguard
mkdir -p "$OUT/corpus"
FLAGS="-parse-as-library -sanitize=fuzzer,address -O -g"
swiftc $FLAGS -wmo -module-name Packet -emit-module -emit-module-path "$OUT/Packet.swiftmodule" \
    -c Sources/Packet/*.swift -o "$OUT/Packet.o"
swiftc $FLAGS -wmo -module-name WireGuard -I "$OUT" -I Sources/CSodium -I Sources/CBlake2 -emit-module \
    -emit-module-path "$OUT/WireGuard.swiftmodule" -c Sources/WireGuard/*.swift -o "$OUT/WireGuard.o"
swiftc $FLAGS -I "$OUT" -I Sources/CSodium -I Sources/CBlake2 fuzz/wireguard/FuzzReceive.swift \
    "$OUT/Packet.o" "$OUT/WireGuard.o" -lsodium -lb2 -o "$OUT/fuzz-receive"
exec "$OUT/fuzz-receive" "$OUT/corpus" "$@"
