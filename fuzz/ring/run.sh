#!/usr/bin/env bash
# Builds and runs the live-ring file fuzzer: fuzz/ring/run.sh [libFuzzer options, e.g. -max_total_time=60]
# The harness is compiled with the LiveFeed sources into one module; CShims' C file is compiled
# with clang and its header exposed through a throw-away module map.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/opt/swift/usr/bin:$PATH
out=$(mktemp -d /tmp/ringfuzz.XXXXXX)
trap 'rm -rf "$out"' EXIT
clang -O1 -g -fsanitize=address,fuzzer-no-link -I Sources/CShims/include -c Sources/CShims/tv_atomic.c -o "$out/tv_atomic.o"
printf 'module CShims {\n  header "%s/Sources/CShims/include/CShims.h"\n  export *\n}\n' "$PWD" > "$out/module.modulemap"
swiftc -parse-as-library -sanitize=fuzzer,address -O -module-name LiveFeed \
  fuzz/ring/RingFuzz.swift Sources/LiveFeed/*.swift \
  -Xcc -fmodule-map-file="$out/module.modulemap" "$out/tv_atomic.o" -o "$out/ringfuzz"
mkdir -p "$out/corpus"
"$out/ringfuzz" "$out/corpus" "${@:--max_total_time=30}"
