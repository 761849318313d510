#!/usr/bin/env bash
# Builds and runs the settings-JSON fuzzer: fuzz/settings/run.sh [SECONDS | libFuzzer options…]
# Core, Runtime, Packet and Store (with SQLite) are built as static libraries (fuzz/lib.sh);
# seeds are fuzz/settings/seeds, with settings.dict. Output in .build/fuzz/settings.
. "$(dirname "$0")/../lib.sh"
fuzz_init settings
fuzz_module Core
fuzz_cshims
fuzz_module Runtime
fuzz_module Packet
fuzz_module Store -I Sources/CSQLite
# shellcheck disable=SC2086
fuzz_link "$FUZZ_OUT/settings-fuzz" $FUZZ_SWIFT_FLAGS $FUZZ_IMPORTS -I Sources/CSQLite fuzz/settings/SettingsFuzz.swift $FUZZ_LIBS -lsqlite3
fuzz_time_args 60 "$@"
exec "$FUZZ_OUT/settings-fuzz" "$FUZZ_OUT/corpus" fuzz/settings/seeds -max_len=2048 -dict=fuzz/settings/settings.dict "${FUZZ_ARGS[@]}"
