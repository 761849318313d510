#!/usr/bin/env bash
# Runs every test: installs missing Debian packages, builds, runs `swift test`, the checks of
# scripts/tests/ (man pages, completion, install.sh, the Debian package), the fuzz smoke run (fuzz/smoke.sh), then the
# end-to-end scripts in scripts/e2e/ (root only: they create their own network namespaces).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH
scripts/deps.sh
bash scripts/check-layering.sh   # no module import cycle, no folder-level type-reference cycle
swift build --build-tests
# The shared-store tests (issue 19) run against a throw-away PostgreSQL cluster: an unprivileged
# user, a Unix socket in a temporary directory, no TCP listener; removed on exit, also on failure.
source scripts/lib/pg.sh
if [ -z "${TUNNELVISION_TEST_PG:-}" ] && [ "$(id -u)" -eq 0 ]; then
  PG_TEST_DIR=$(mktemp -d /tmp/tunnelvision-pg.XXXXXX)
  trap 'pg_cluster_stop "$PG_TEST_DIR"' EXIT
  pg_cluster_start "$PG_TEST_DIR"
  export TUNNELVISION_TEST_PG="$PG_CONNINFO" TUNNELVISION_REQUIRE_PG=1
fi
swift test --skip-build 2>&1 | tee /tmp/tunnelvision-swift-test.log | grep -vE '^(◇|↳)' || { tail -50 /tmp/tunnelvision-swift-test.log; exit 1; }
# Man pages, completion scripts, install.sh (no root needed; they use the debug build), and the
# Debian package (root: it builds the static release and a clean Debian root, cached).
for t in scripts/tests/test_*.sh; do
  echo "=== $t"
  bash "$t" .build/debug | grep -v '^ok ' || { echo "FAILED: $t"; exit 1; }
done
# Every libFuzzer harness under fuzz/*/ for ~20 s from its corpus (FUZZ_SMOKE_SECONDS): fails on any crash.
bash fuzz/smoke.sh "${FUZZ_SMOKE_SECONDS:-20}"
if [ "$(id -u)" -eq 0 ] && [ -d scripts/e2e ]; then
  swift build -c release
  pass=0; fail=0
  for t in scripts/e2e/*.sh; do
    [ -e "$t" ] || continue
    echo "=== e2e: $t"
    if bash "$t"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAILED: $t"; fi
  done
  echo "e2e: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]
fi
