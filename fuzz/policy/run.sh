#!/usr/bin/env bash
# Builds and runs the policy fuzzer: fuzz/policy/run.sh [SECONDS | libFuzzer options]   (default 60 s)
# The Packet and Policy sources are compiled with the harness into one module (their
# `import Packet` lines dropped; the harness reaches internals); Core and Runtime (rule files are
# read through Sys) come from static libraries built by fuzz/lib.sh. Output in .build/fuzz/policy.
. "$(dirname "$0")/../lib.sh"
fuzz_init policy
fuzz_module Core
fuzz_cshims
fuzz_module Runtime
src=$FUZZ_OUT/src
mkdir -p "$src"
rm -f "$src"/*.swift
for f in Sources/Packet/*.swift Sources/Policy/*.swift; do
  grep -v '^import Packet$' "$f" > "$src/$(basename "$(dirname "$f")")-$(basename "$f")"
done
# shellcheck disable=SC2086
fuzz_link "$FUZZ_OUT/policy-fuzz" $FUZZ_SWIFT_FLAGS $FUZZ_IMPORTS -I Sources/CIDN2 -module-name PolicyFuzz fuzz/policy/PolicyFuzz.swift "$src"/*.swift \
  $FUZZ_LIBS -lidn2
fuzz_time_args 60 "$@"
exec "$FUZZ_OUT/policy-fuzz" "$FUZZ_OUT/corpus" fuzz/policy/seeds -max_len=4096 -dict=fuzz/policy/policy.dict "${FUZZ_ARGS[@]}"
