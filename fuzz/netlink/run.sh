#!/usr/bin/env bash
# Builds and runs the rtnetlink reply fuzzer: fuzz/netlink/run.sh [SECONDS | libFuzzer options…]
# Core, Runtime, Packet and SystemIO (with libmnl) are built as static libraries (fuzz/lib.sh);
# seeds are fuzz/netlink/seeds (make_seeds.py regenerates them). Output in .build/fuzz/netlink.
. "$(dirname "$0")/../lib.sh"
fuzz_init netlink
fuzz_module Core
fuzz_cshims
fuzz_module Runtime
fuzz_module Packet
fuzz_ctarget CHTTP tv_http.h   # SystemIO's HTTPListener (libmicrohttpd glue)
fuzz_module SystemIO -I Sources/CMNL
# shellcheck disable=SC2086
fuzz_link "$FUZZ_OUT/netlink-fuzz" $FUZZ_SWIFT_FLAGS $FUZZ_IMPORTS -I Sources/CMNL fuzz/netlink/NetlinkFuzz.swift $FUZZ_LIBS -lmnl -lmicrohttpd
fuzz_time_args 60 "$@"
exec "$FUZZ_OUT/netlink-fuzz" "$FUZZ_OUT/corpus" fuzz/netlink/seeds -max_len=4096 "${FUZZ_ARGS[@]}"
