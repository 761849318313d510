#!/usr/bin/env bash
# Builds and runs the corrupt-state.db fuzzer: fuzz/statedb/run.sh [SECONDS | libFuzzer options…]
# Core, Runtime, Packet and Store (with SQLite) are built as static libraries (fuzz/lib.sh);
# seeds are real stores in fuzz/statedb/seeds (make_seeds.py). Output in .build/fuzz/statedb.
. "$(dirname "$0")/../lib.sh"
fuzz_init statedb
fuzz_module Core
fuzz_cshims
fuzz_module Runtime
fuzz_module Packet
fuzz_module Store -I Sources/CSQLite
# shellcheck disable=SC2086
fuzz_link "$FUZZ_OUT/statedb-fuzz" $FUZZ_SWIFT_FLAGS $FUZZ_IMPORTS -I Sources/CSQLite fuzz/statedb/StateDBFuzz.swift $FUZZ_LIBS -lsqlite3
fuzz_time_args 60 "$@"
exec "$FUZZ_OUT/statedb-fuzz" "$FUZZ_OUT/corpus" fuzz/statedb/seeds -max_len=32768 "${FUZZ_ARGS[@]}"
