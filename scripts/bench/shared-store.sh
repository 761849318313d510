#!/usr/bin/env bash
# Shared-store benchmark (issue 19): a throw-away PostgreSQL cluster (Unix socket only, removed on
# exit), then `tunnelbench shared`: window-open latency p50/p99 next to a bare SELECT 1, and history
# rows/s from the local journal into PostgreSQL.   Usage: scripts/bench/shared-store.sh [ROWS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/opt/swift/usr/bin:$PATH
source scripts/lib/pg.sh
[ -n "${TV_NO_BUILD:-}" ] || { scripts/deps.sh; swift build -c release --product tunnelbench >/dev/null; }
PG_BENCH_DIR=$(mktemp -d /tmp/tunnelvision-pg.XXXXXX)
trap 'pg_cluster_stop "$PG_BENCH_DIR"' EXIT
pg_cluster_start "$PG_BENCH_DIR"
TUNNELVISION_BENCH_PG="$PG_CONNINFO" .build/release/tunnelbench shared --rows "${1:-200000}" --opens 2000 --rounds "${2:-3}"
