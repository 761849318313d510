#!/usr/bin/env bash
# Builds and runs the time-zone fuzzer: fuzz/tzif/run.sh [SECONDS | libFuzzer options…]
# Core is built as a static library (fuzz/lib.sh); seeds are fuzz/tzif/seeds (TZif files from
# Debian's tzdata and POSIX TZ rules). Output in .build/fuzz/tzif.
. "$(dirname "$0")/../lib.sh"
fuzz_init tzif
fuzz_module Core
# shellcheck disable=SC2086
fuzz_link "$FUZZ_OUT/tzif-fuzz" $FUZZ_SWIFT_FLAGS $FUZZ_IMPORTS fuzz/tzif/TZifFuzz.swift $FUZZ_LIBS
fuzz_time_args 60 "$@"
exec "$FUZZ_OUT/tzif-fuzz" "$FUZZ_OUT/corpus" fuzz/tzif/seeds -max_len=8192 "${FUZZ_ARGS[@]}"
