#!/usr/bin/env bash
# Builds and runs the policy fuzzer: fuzz/policy/run.sh [SECONDS]   (default 60)
# The Packet and Policy sources are compiled with the harness into one module (their
# `import Packet` lines dropped), instrumented for libFuzzer and AddressSanitizer.
set -euo pipefail
cd "$(dirname "$0")"
export PATH=/opt/swift/usr/bin:$PATH
work=.build
mkdir -p "$work/src" corpus
rm -f "$work"/src/*.swift
for f in ../../Sources/Packet/*.swift ../../Sources/Policy/*.swift; do
  grep -v '^import Packet$' "$f" > "$work/src/$(basename "$(dirname "$f")")-$(basename "$f")"
done
swiftc -parse-as-library -sanitize=fuzzer,address -O -module-name PolicyFuzz PolicyFuzz.swift "$work"/src/*.swift -o "$work/policy-fuzz"
"$work/policy-fuzz" corpus seeds -max_total_time="${1:-60}" -max_len=4096 -dict=policy.dict
