#!/usr/bin/env bash
# Builds and runs the packet fuzzer: fuzz/packet/run.sh [SECONDS | libFuzzer options, e.g. -max_total_time=300]
# The harness is compiled with Sources/Packet into one module (it reaches internals); Core comes
# from a static library built by fuzz/lib.sh. Output in .build/fuzz/packet; seeds are fuzz/packet/seeds (make_seeds.py regenerates them).
. "$(dirname "$0")/../lib.sh"
fuzz_init packet
fuzz_module Core
# shellcheck disable=SC2086
fuzz_link "$FUZZ_OUT/packet-fuzz" $FUZZ_SWIFT_FLAGS $FUZZ_IMPORTS -module-name Packet \
  Sources/Packet/*.swift fuzz/packet/PacketFuzz.swift $FUZZ_LIBS
fuzz_time_args 60 "$@"
exec "$FUZZ_OUT/packet-fuzz" "$FUZZ_OUT/corpus" fuzz/packet/seeds -max_len=2048 "${FUZZ_ARGS[@]}"
