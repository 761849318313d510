#!/usr/bin/env bash
# The layering check (run by scripts/test.sh): the script's own tests, then the real tree.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m unittest -q scripts/tests/test_check_layering.py
python3 scripts/check-layering.py "$@"
# The shipped binaries link FoundationEssentials only: `import Foundation` would bring
# FoundationInternationalization and ICU's 34 MB of data into them (docs/packaging.md). Allowed in
# tunnelbench and as the #else of `#if canImport(FoundationEssentials)` (platforms without it).
bad=$(find Sources -name '*.swift' -not -path 'Sources/tunnelbench/*' -print0 | xargs -0 awk '
  FNR == 1 { prev = "" }
  /^[[:space:]]*(@[A-Za-z_]+[[:space:]]+)*import[[:space:]]+(Foundation|FoundationInternationalization)[[:space:]]*$/ && prev !~ /^#else/ { print FILENAME ":" FNR ": " $0 }
  { prev = $0 }')
if [ -n "$bad" ]; then
  echo "layering: these files import Foundation (use FoundationEssentials; see docs/packaging.md):" >&2
  echo "$bad" >&2
  exit 1
fi
