#!/usr/bin/env bash
# Builds and runs the TUN offload fuzzer: fuzz/offload/run.sh [SECONDS | libFuzzer options, e.g. -max_total_time=300]
# The harness is compiled with Sources/Packet into one module (it reaches internals); Core comes
# from a static library built by fuzz/lib.sh. Output in .build/fuzz/offload; seeds from make_seeds.py.
. "$(dirname "$0")/../lib.sh"
fuzz_init offload
fuzz_module Core
python3 fuzz/offload/make_seeds.py "$FUZZ_OUT/seeds"
# shellcheck disable=SC2086
fuzz_link "$FUZZ_OUT/offload-fuzz" $FUZZ_SWIFT_FLAGS $FUZZ_IMPORTS -module-name Packet \
  Sources/Packet/*.swift fuzz/offload/OffloadFuzz.swift $FUZZ_LIBS
fuzz_time_args 60 "$@"
exec "$FUZZ_OUT/offload-fuzz" "$FUZZ_OUT/corpus" "$FUZZ_OUT/seeds" -max_len=70000 "${FUZZ_ARGS[@]}"
