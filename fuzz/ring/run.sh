#!/usr/bin/env bash
# Builds and runs the live-ring file fuzzer: fuzz/ring/run.sh [SECONDS | libFuzzer options, e.g. -max_total_time=60]
# The harness is compiled with the LiveFeed sources into one module (it reaches internals);
# Core, CShims and Runtime come from static libraries built by fuzz/lib.sh in .build/fuzz/ring.
. "$(dirname "$0")/../lib.sh"
fuzz_init ring
fuzz_module Core
fuzz_cshims
fuzz_module Runtime
# shellcheck disable=SC2086
fuzz_link "$FUZZ_OUT/ringfuzz" $FUZZ_SWIFT_FLAGS $FUZZ_IMPORTS -module-name LiveFeed \
  fuzz/ring/RingFuzz.swift Sources/LiveFeed/*.swift $FUZZ_LIBS
fuzz_time_args 30 "$@"
rm -rf "$FUZZ_OUT/corpus"; mkdir -p "$FUZZ_OUT/corpus"
exec "$FUZZ_OUT/ringfuzz" "$FUZZ_OUT/corpus" "${FUZZ_ARGS[@]}"
