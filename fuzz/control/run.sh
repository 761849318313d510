#!/usr/bin/env bash
# Builds the config and control-protocol fuzz harness with libFuzzer + AddressSanitizer and runs it.
#   fuzz/control/run.sh [SECONDS | libFuzzer options…]   e.g. fuzz/control/run.sh -max_total_time=60
# Core, CShims, Runtime, Packet, ControlProtocol and Config are built as static libraries (fuzz/lib.sh) in .build/fuzz/control.
. "$(dirname "$0")/../lib.sh"
fuzz_init control
fuzz_module Core
fuzz_cshims
fuzz_module Runtime
fuzz_module Packet
fuzz_module ControlProtocol
fuzz_module Config
# shellcheck disable=SC2086
fuzz_link "$FUZZ_OUT/control-fuzz" $FUZZ_SWIFT_FLAGS $FUZZ_IMPORTS fuzz/control/ControlFuzz.swift $FUZZ_LIBS
fuzz_time_args 60 "$@"
exec "$FUZZ_OUT/control-fuzz" "$FUZZ_OUT/corpus" fuzz/control/corpus "${FUZZ_ARGS[@]}"
