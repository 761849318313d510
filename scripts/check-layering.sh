#!/usr/bin/env bash
# The layering check (run by scripts/test.sh): the script's own tests, then the real tree.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m unittest -q scripts/tests/test_check_layering.py
python3 scripts/check-layering.py "$@"
