#!/usr/bin/env bash
# Builds and runs the capture-file reader fuzzer: fuzz/pcap/run.sh [SECONDS | libFuzzer options…]
# Core, Runtime, Packet and Capture (with libpcap) are built as static libraries (fuzz/lib.sh);
# seeds are fuzz/pcap/seeds (make_seeds.py regenerates them). Output in .build/fuzz/pcap.
. "$(dirname "$0")/../lib.sh"
fuzz_init pcap
fuzz_module Core
fuzz_cshims
fuzz_module Runtime
fuzz_module Packet
fuzz_module Capture -I Sources/CPcap
# shellcheck disable=SC2086
fuzz_link "$FUZZ_OUT/pcap-fuzz" $FUZZ_SWIFT_FLAGS $FUZZ_IMPORTS -I Sources/CPcap fuzz/pcap/PcapFuzz.swift $FUZZ_LIBS -lpcap
fuzz_time_args 60 "$@"
exec "$FUZZ_OUT/pcap-fuzz" "$FUZZ_OUT/corpus" fuzz/pcap/seeds -max_len=4096 "${FUZZ_ARGS[@]}"
