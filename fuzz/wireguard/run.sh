#!/usr/bin/env bash
# Builds and runs the WireGuard receive fuzzer (libFuzzer + ASan).
#   fuzz/wireguard/run.sh [SECONDS | libFuzzer args]   e.g. fuzz/wireguard/run.sh -runs=200000  or  -max_total_time=60
# Core, Packet and WireGuard are built as static libraries (fuzz/lib.sh) in .build/fuzz/wireguard.
. "$(dirname "$0")/../lib.sh"
fuzz_init wireguard
fuzz_module Core
fuzz_module Packet
fuzz_ctarget CAEAD tv_aead.h
C="-I Sources/CSodium -I Sources/CBlake2"
# shellcheck disable=SC2086
fuzz_module WireGuard $C
# shellcheck disable=SC2086
fuzz_link "$FUZZ_OUT/fuzz-receive" $FUZZ_SWIFT_FLAGS $FUZZ_IMPORTS $C fuzz/wireguard/FuzzReceive.swift $FUZZ_LIBS -lsodium -lb2 -lcrypto
fuzz_time_args 60 "$@"
exec "$FUZZ_OUT/fuzz-receive" "$FUZZ_OUT/corpus" "${FUZZ_ARGS[@]}"
