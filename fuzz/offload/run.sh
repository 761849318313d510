#!/usr/bin/env bash
# Builds and runs the TUN offload fuzzer: fuzz/offload/run.sh [libFuzzer options, e.g. -max_total_time=300]
# The harness is compiled with Sources/Packet into one module (.build/offload-fuzz); seeds come
# from make_seeds.py, the growing corpus stays in .build/offload-corpus.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/opt/swift/usr/bin:$PATH
mkdir -p .build/offload-corpus
python3 fuzz/offload/make_seeds.py .build/offload-seeds
swiftc -parse-as-library -sanitize=fuzzer,address -O -module-name Packet \
  Sources/Packet/*.swift fuzz/offload/OffloadFuzz.swift -o .build/offload-fuzz
.build/offload-fuzz .build/offload-corpus .build/offload-seeds -max_len=70000 "${@:--max_total_time=60}"
