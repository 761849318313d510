#!/usr/bin/env bash
# Installs the Debian packages TunnelVision needs to build and test, only those that are missing.
# Safe to run repeatedly; needs root (or sudo) only when something must be installed.
set -euo pipefail
PKGS=(pkg-config libsqlite3-dev sqlite3 libmnl-dev libpcap-dev libsodium-dev libb2-dev libssl-dev libidn2-dev libqrencode-dev libpng-dev zbar-tools
      wireguard-go wireguard-tools iproute2 iperf3 tcpdump iputils-ping bc python3 python3-cryptography procps ethtool
      faketime libfaketime
      nftables man-db groff-base zsh   # router-nat.sh and its test; man -l checks; zsh -n of the completion
      iptables                         # scripts/e2e/import.sh runs the PostUp iptables lines of imported wg-quick files
      libmicrohttpd-dev libsystemd-dev prometheus curl    # /metrics (promtool checks it), journald events
      libpq-dev postgresql             # Store = postgresql://…; tests run a throw-away cluster
      dnsmasq-base                     # scripts/e2e/first-run.sh, client-dns.sh: the router's resolver
      build-essential debhelper lintian mmdebstrap file)   # scripts/package.sh and its test (a clean Debian root)
missing=()
for p in "${PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq "${missing[@]}" >/dev/null
fi
