#!/usr/bin/env bash
# Regenerates the files made from tunnelctl's command table (Sources/tunnelctl/CommandTable.swift):
#   man/tunnelctl.8            tunnelctl help --man
#   completion/tunnelctl.bash  tunnelctl completion bash
#   completion/_tunnelctl      tunnelctl completion zsh
# GeneratedDocsTests (swift test) fails while a checked-in copy differs from what the table gives.
#   scripts/gen-docs.sh [TUNNELCTL]     (default: builds and uses .build/debug/tunnelctl)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH
ctl=${1:-}
if [ -z "$ctl" ]; then
  swift build --product tunnelctl >/dev/null
  ctl=.build/debug/tunnelctl
fi
mkdir -p man completion
"$ctl" help --man >man/tunnelctl.8
"$ctl" completion bash >completion/tunnelctl.bash
"$ctl" completion zsh >completion/_tunnelctl
echo "gen-docs: wrote man/tunnelctl.8 completion/tunnelctl.bash completion/_tunnelctl"
