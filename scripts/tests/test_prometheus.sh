#!/usr/bin/env bash
# The Prometheus side of /metrics (docs/operations.md): the example alert rules pass
# `promtool check rules`, and every tunnelvision_* metric the rules and the Grafana dashboard use
# is one MetricsText renders (the golden list of MetricsTextTests), so neither rots when a metric
# is renamed. (A real scrape passes `promtool check metrics` in scripts/e2e/metrics.sh.)
#   scripts/tests/test_prometheus.sh [BUILD_DIR]   (BUILD_DIR unused)
set -euo pipefail
cd "$(dirname "$0")/../.."
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
RULES=etc/prometheus/tunnelvision.rules.yml
DASH=etc/grafana/tunnelvision-dashboard.json

out=$(promtool check rules "$RULES" 2>&1) && ok "promtool check rules $RULES" || bad "promtool check rules: $out"
python3 -m json.tool "$DASH" >/dev/null 2>&1 && ok "$DASH is JSON" || bad "$DASH is not JSON"
known=$(grep -o '"tunnelvision_[a-z_]*"' Sources/Daemon/Observe/MetricsText.swift | tr -d '"' | sort -u)
for f in "$RULES" "$DASH"; do
  for m in $(grep -o 'tunnelvision_[a-z_]*' "$f" | sort -u); do
    grep -qx "$m" <<<"$known" && ok "$f: $m is rendered" || bad "$f uses $m, which MetricsText does not render"
  done
done
# A summary line, as the other scripts/tests print: scripts/test.sh filters the ok lines with
# grep -v, which fails (pipefail) when nothing else is printed.
if [ "$fails" -eq 0 ]; then echo "prometheus: all passed"; else echo "prometheus: $fails failed"; exit 1; fi
