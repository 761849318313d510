#!/usr/bin/env bash
# Live ring, two processes: a producer and a consumer (`tunnelbench ring stress`) exchange 10
# million records carrying sequence numbers and checksums; the consumer fails on any torn,
# corrupt or reordered record, or when received + dropped != sent. Needs no root and no network.
# Run once dropping when full (the daemon's behaviour) and once lossless (ring throughput).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/opt/swift/usr/bin:$PATH
[ -x .build/release/tunnelbench ] || swift build -c release --product tunnelbench
.build/release/tunnelbench ring stress --count 10000000
.build/release/tunnelbench ring stress --count 10000000 --lossless
