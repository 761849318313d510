#!/usr/bin/env bash
# The two-process ring stress with both processes built under ThreadSanitizer:
#   fuzz/ring/tsan-stress.sh [COUNT]     (default 10,000,000 records)
# First the in-process two-thread run (what TSan can see across), then the two processes.
# Any TSan report makes the process exit non-zero (halt_on_error) and the script fail.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/opt/swift/usr/bin:$PATH
out=$(mktemp -d /tmp/ringtsan.XXXXXX)
trap 'rm -rf "$out"' EXIT
clang -O1 -g -fsanitize=thread -I Sources/CShims/include -c Sources/CShims/tv_atomic.c -o "$out/tv_atomic.o"
printf 'module CShims {\n  header "%s/Sources/CShims/include/CShims.h"\n  export *\n}\n' "$PWD" > "$out/module.modulemap"
swiftc -O -sanitize=thread -module-name LiveFeed \
  fuzz/ring/tsan/main.swift Sources/LiveFeed/*.swift \
  -Xcc -fmodule-map-file="$out/module.modulemap" "$out/tv_atomic.o" -o "$out/ring-stress-tsan"
export TSAN_OPTIONS="halt_on_error=1 exitcode=66"
"$out/ring-stress-tsan" threads 1000000
"$out/ring-stress-tsan" stress "${1:-10000000}"
