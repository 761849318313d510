#!/usr/bin/env bash
# The main job: for now, checks the shipped policies and asks them about a few flows.
# (The gateway issue turns this into the full namespace demo.)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH
scripts/deps.sh
swift build -c release --product tunnelctl >/dev/null
ctl=.build/release/tunnelctl
echo "\$ tunnelctl policy check policies"
$ctl policy check policies || true
for flow in 'tcp 10.99.0.2:40000 -> 93.184.216.34:443' \
            'tcp 10.99.0.2:40001 -> 192.168.1.5:22' \
            'tcp 10.99.0.2:40002 -> 203.0.113.9:25' \
            'udp 10.99.0.3:51000 -> 198.51.100.7:6881 tier free' \
            'tcp 10.99.0.2:40003 -> 198.51.100.8:443 host ads.doubleclick.net'; do
  echo "\$ tunnelctl policy test '$flow'"
  $ctl policy test --policies policies "$flow" || true
done
