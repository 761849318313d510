#!/usr/bin/env bash
# Builds and runs the capture flow-index fuzzer: fuzz/flowindex/run.sh [SECONDS | libFuzzer options…]
# Core, Runtime, Packet and Capture (with libpcap) are built as static libraries (fuzz/lib.sh);
# seeds are fuzz/flowindex/seeds (make_seeds.py regenerates them). Output in .build/fuzz/flowindex.
. "$(dirname "$0")/../lib.sh"
fuzz_init flowindex
fuzz_module Core
fuzz_cshims
fuzz_module Runtime
fuzz_module Packet
fuzz_module Capture -I Sources/CPcap
# shellcheck disable=SC2086
fuzz_link "$FUZZ_OUT/flowindex-fuzz" $FUZZ_SWIFT_FLAGS $FUZZ_IMPORTS -I Sources/CPcap fuzz/flowindex/FlowIndexFuzz.swift $FUZZ_LIBS -lpcap
fuzz_time_args 60 "$@"
exec "$FUZZ_OUT/flowindex-fuzz" "$FUZZ_OUT/corpus" fuzz/flowindex/seeds -max_len=1024 "${FUZZ_ARGS[@]}"
