#!/usr/bin/env bash
# Builds and runs the host-learning fuzzer: fuzz/hosts/run.sh [SECONDS | libFuzzer options, e.g. -max_total_time=300]
# The harness is compiled with Sources/Packet/*.swift and Sources/Packet/QUIC/*.swift into one
# module (it reaches internals); Core comes from a static library built by fuzz/lib.sh; libcrypto and libsodium and libsodium
# from the system. Output in .build/fuzz/hosts; seeds are fuzz/hosts/seeds (make_seeds.py regenerates them).
. "$(dirname "$0")/../lib.sh"
fuzz_init hosts
fuzz_module Core
# shellcheck disable=SC2086
fuzz_link "$FUZZ_OUT/hosts-fuzz" $FUZZ_SWIFT_FLAGS $FUZZ_IMPORTS -I Sources/COpenSSL -I Sources/CSodium -module-name Packet \
  Sources/Packet/*.swift Sources/Packet/QUIC/*.swift fuzz/hosts/HostsFuzz.swift $FUZZ_LIBS -lcrypto -lsodium
fuzz_time_args 60 "$@"
exec "$FUZZ_OUT/hosts-fuzz" "$FUZZ_OUT/corpus" fuzz/hosts/seeds -max_len=4096 "${FUZZ_ARGS[@]}"
