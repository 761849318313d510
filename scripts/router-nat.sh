#!/usr/bin/env bash
# Router setup around tunneld: IP forwarding, NAT and forward rules so peers reach the LAN and the
# Internet through the router's uplink. tunneld itself never touches the firewall.
#
#   scripts/router-nat.sh up        [OPTIONS]   apply the ruleset now (one atomic `nft -f`)
#   scripts/router-nat.sh down      [--state FILE]  undo exactly what `up` did, forwarding included
#   scripts/router-nat.sh show                  the table and the rules `up` added elsewhere
#   scripts/router-nat.sh print     [OPTIONS]   the nft script `up` would apply (changes nothing)
#   scripts/router-nat.sh install   [OPTIONS] [--dest FILE] [--sysctl-dest FILE] [--unit-dest FILE]
#                                               persist across reboots
#   scripts/router-nat.sh uninstall [--dest FILE] [--sysctl-dest FILE] [--unit-dest FILE]
#
# Options:
#   --out IFACE       the uplink to masquerade out of (default: the interface of the default route)
#   --subnet CIDR     an IPv4 tunnel subnet (repeatable; default 10.99.0.0/24)
#   --subnet6 CIDR    an IPv6 tunnel subnet (repeatable; default none: no IPv6 forwarding)
#   --mtu N           the tunnel MTU the TCP MSS is clamped to (default: the MTU of the route to
#                     the first subnet, else 1420)
#   --own-table-only  do not add accept rules to other tables' forward chains (see below)
#   --state FILE      where `up` records what it changed for `down` (default /run/tunnelvision-nat.state)
#   --dest FILE       the ruleset `install` writes (default /etc/nftables.d/tunnelvision.nft)
#   --sysctl-dest FILE  the forwarding settings `install` writes (default /etc/sysctl.d/90-tunnelvision.conf)
#   --unit-dest FILE  the systemd unit `install` writes (default /etc/systemd/system/tunnelvision-nat.service)
#
# What `up` applies, in one transaction: table `inet tunnelvision` (masquerade of the subnets out
# of the uplink, v4 and v6; forward accept from the subnets and of established/related return
# traffic to them; TCP MSS clamp: SYNs from the subnets to MTU-40 (v4) / MTU-60 (v6), SYNs toward
# them to the route MTU). An nftables accept only ends its own chain: a forward chain of another
# table whose policy is drop (OpenWrt fw4, firewalld, a hardened nftables.conf) still drops the
# packet. So `up` also inserts the two accept rules, tagged with the comment "tunnelvision-nat",
# at the top of every such chain (never flushing or changing anything else there);
# --own-table-only leaves other tables alone. `down` deletes the table and exactly the tagged
# rules, and puts net.ipv4.ip_forward / net.ipv6.conf.all.forwarding back to what they were.
# `install` writes the table as an nftables file, the forwarding as a sysctl.d file, and a unit
# (tunnelvision-nat.service: `up` with the same options at boot, after nftables.service; `down`
# on stop) — the unit is what brings back the accept rules in other tables' drop chains.
set -euo pipefail

TABLE="inet tunnelvision"
TAG="tunnelvision-nat"
ME=router-nat

die() { echo "$ME: $*" >&2; exit 2; }
fail() { echo "$ME: $*" >&2; exit 1; }
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

cmd=${1:-}
case "$cmd" in
  -h|--help|help) usage; exit 0 ;;
  up|down|show|print|install|uninstall) shift ;;
  "") usage >&2; exit 2 ;;
  *) die "unknown command '$cmd' (up, down, show, print, install, uninstall; --help explains them)" ;;
esac

OUT=""; SUBNETS=(); SUBNETS6=(); MTU=""; OWN_ONLY=0
STATE=/run/tunnelvision-nat.state
DEST=/etc/nftables.d/tunnelvision.nft
SYSCTL_DEST=/etc/sysctl.d/90-tunnelvision.conf
UNIT_DEST=/etc/systemd/system/tunnelvision-nat.service
ARGS=()   # the options as given, for the unit's `up`

# The value of option $1, which must be present and not look like another option.
value() {
  [ "$2" -ge 2 ] && [ -n "$3" ] && [[ $3 != --* ]] || die "$1 needs a value ($1 $4)"
}
while [ $# -gt 0 ]; do
  case "$1" in
    --out) value "$1" $# "${2:-}" IFACE; OUT=$2; ARGS+=("$1" "$2"); shift 2 ;;
    --subnet) value "$1" $# "${2:-}" CIDR; SUBNETS+=("$2"); ARGS+=("$1" "$2"); shift 2 ;;
    --subnet6) value "$1" $# "${2:-}" CIDR; SUBNETS6+=("$2"); ARGS+=("$1" "$2"); shift 2 ;;
    --mtu) value "$1" $# "${2:-}" N; MTU=$2; ARGS+=("$1" "$2"); shift 2 ;;
    --state) value "$1" $# "${2:-}" FILE; STATE=$2; ARGS+=("$1" "$2"); shift 2 ;;
    --dest) value "$1" $# "${2:-}" FILE; DEST=$2; shift 2 ;;
    --sysctl-dest) value "$1" $# "${2:-}" FILE; SYSCTL_DEST=$2; shift 2 ;;
    --unit-dest) value "$1" $# "${2:-}" FILE; UNIT_DEST=$2; shift 2 ;;
    --own-table-only) OWN_ONLY=1; ARGS+=("$1"); shift ;;
    --out=*|--subnet=*|--subnet6=*|--mtu=*|--state=*|--dest=*|--sysctl-dest=*|--unit-dest=*) set -- "${1%%=*}" "${1#*=}" "${@:2}" ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' for '$cmd' (--help lists the options)" ;;
  esac
done

command -v nft >/dev/null || fail "nft not found; install nftables (apt-get install nftables)"
command -v ip >/dev/null || fail "ip not found; install iproute2 (apt-get install iproute2)"

# --- checking and deriving the settings -------------------------------------------------------

v4cidr() { [[ $1 =~ ^([0-9]{1,3}\.){3}[0-9]{1,3}(/([0-9]|[12][0-9]|3[0-2]))?$ ]]; }
v6cidr() { [[ $1 =~ ^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*(/([0-9]{1,2}|1[01][0-9]|12[0-8]))?$ ]]; }

settings() {
  [ ${#SUBNETS[@]} -gt 0 ] || SUBNETS=(10.99.0.0/24)
  local s
  for s in "${SUBNETS[@]}"; do v4cidr "$s" || die "--subnet '$s' is not an IPv4 CIDR (e.g. 10.99.0.0/24)"; done
  for s in "${SUBNETS6[@]}"; do v6cidr "$s" || die "--subnet6 '$s' is not an IPv6 CIDR (e.g. fd99::/64)"; done
  if [ -z "$OUT" ]; then
    OUT=$(ip -o route show default 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "dev") { print $(i+1); exit }}')
    [ -n "$OUT" ] || OUT=$(ip -o -6 route show default 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "dev") { print $(i+1); exit }}')
    [ -n "$OUT" ] || die "no default route to take the uplink from; give --out IFACE (ip route shows the interfaces)"
  fi
  [[ $OUT =~ ^[A-Za-z0-9_.=+-]{1,15}$ ]] || die "--out '$OUT' is not an interface name"
  if [ "$cmd" = up ] && ! ip link show dev "$OUT" >/dev/null 2>&1; then
    die "--out $OUT: no such interface here (ip -br link lists them)"
  fi
  if [ -z "$MTU" ]; then
    # An on-link route to the first subnet's .1 leads to the tunnel interface (tunneld sets its
    # MTU); a route via a gateway (tunneld not up yet) says nothing about it.
    local first=${SUBNETS[0]%/*} route dev
    route=$(ip -o route get "${first%.*}.1" 2>/dev/null || true)
    dev=$(awk '{for (i = 1; i < NF; i++) if ($i == "dev") { print $(i+1); exit }}' <<<"$route")
    if [ -n "$dev" ] && [ "$dev" != lo ] && [[ $route != *" via "* ]]; then MTU=$(cat "/sys/class/net/$dev/mtu" 2>/dev/null || true); fi
    [ -n "$MTU" ] || MTU=1420
  fi
  [[ $MTU =~ ^[0-9]+$ ]] && [ "$MTU" -ge 576 ] && [ "$MTU" -le 65535 ] || die "--mtu '$MTU' is not an MTU (576 to 65535; tunneld.conf's MTU, usually 1420)"
}

set4() { local IFS=,; echo "{ ${SUBNETS[*]} }"; }
set6() { local IFS=,; echo "{ ${SUBNETS6[*]} }"; }

# Our table, complete. Loading it replaces any previous copy in the same transaction.
ruleset() {
  local s4 s6 mss4=$((MTU - 40)) mss6=$((MTU - 60))
  s4=$(set4)
  echo "# TunnelVision router rules (scripts/router-nat.sh): masquerade, forward accept, MSS clamp."
  echo "# Subnets: ${SUBNETS[*]}${SUBNETS6[*]:+ ${SUBNETS6[*]}}; uplink $OUT; tunnel MTU $MTU."
  echo "table $TABLE {}"
  echo "delete table $TABLE"
  echo "table $TABLE {"
  echo "  chain forward {"
  echo "    type filter hook forward priority mangle; policy accept;"
  echo "    ip saddr $s4 tcp flags syn / syn,rst tcp option maxseg size > $mss4 tcp option maxseg size set $mss4"
  echo "    ip daddr $s4 tcp flags syn / syn,rst tcp option maxseg size set rt mtu"
  echo "    ip saddr $s4 accept"
  echo "    ip daddr $s4 ct state established,related accept"
  if [ ${#SUBNETS6[@]} -gt 0 ]; then
    s6=$(set6)
    echo "    ip6 saddr $s6 tcp flags syn / syn,rst tcp option maxseg size > $mss6 tcp option maxseg size set $mss6"
    echo "    ip6 daddr $s6 tcp flags syn / syn,rst tcp option maxseg size set rt mtu"
    echo "    ip6 saddr $s6 accept"
    echo "    ip6 daddr $s6 ct state established,related accept"
  fi
  echo "  }"
  echo "  chain postrouting {"
  echo "    type nat hook postrouting priority srcnat; policy accept;"
  echo "    ip saddr $s4 oifname \"$OUT\" masquerade"
  [ ${#SUBNETS6[@]} -eq 0 ] || echo "    ip6 saddr $s6 oifname \"$OUT\" masquerade"
  echo "  }"
  echo "}"
}

# Forward-hook base chains of other tables with policy drop: "FAMILY TABLE CHAIN" per line.
drop_chains() {
  nft list chains 2>/dev/null | awk '
    $1 == "table" { fam = $2; tab = $3 }
    $1 == "chain" { ch = $2 }
    /hook forward/ && /policy drop/ && !(fam == "inet" && tab == "tunnelvision") { print fam, tab, ch }'
}

# `delete rule` lines for the rules tagged $TAG in other tables.
tagged_deletes() {
  nft -a list ruleset 2>/dev/null | awk -v tag="\"$TAG\"" '
    $1 == "table" { fam = $2; tab = $3 }
    $1 == "chain" { ch = $2 }
    index($0, "comment " tag) && match($0, /# handle [0-9]+/) {
      print "delete rule", fam, tab, ch, "handle", substr($0, RSTART + 9, RLENGTH - 9) }'
}

# The accept rules for one other table's chain ($1 family, $2 table, $3 chain).
accept_rules() {
  local fam=$1 tab=$2 ch=$3 s4 s6
  s4=$(set4)
  if [ "$fam" = ip ] || [ "$fam" = inet ]; then
    echo "insert rule $fam $tab $ch ip daddr $s4 ct state established,related accept comment \"$TAG\""
    echo "insert rule $fam $tab $ch ip saddr $s4 accept comment \"$TAG\""
  fi
  if [ ${#SUBNETS6[@]} -gt 0 ] && { [ "$fam" = ip6 ] || [ "$fam" = inet ]; }; then
    s6=$(set6)
    echo "insert rule $fam $tab $ch ip6 daddr $s6 ct state established,related accept comment \"$TAG\""
    echo "insert rule $fam $tab $ch ip6 saddr $s6 accept comment \"$TAG\""
  fi
}

# Everything `up` applies, as one nft script.
up_script() {
  ruleset
  tagged_deletes
  if [ "$OWN_ONLY" -eq 0 ]; then
    local fam tab ch
    while read -r fam tab ch; do
      [ -n "$fam" ] || continue
      echo "# $fam $tab $ch has policy drop: let the tunnel subnets through it too"
      accept_rules "$fam" "$tab" "$ch"
    done < <(drop_chains)
  fi
}

sysctl_get() { sysctl -n "$1" 2>/dev/null || echo ""; }

case "$cmd" in
  print)
    settings
    up_script
    ;;
  up)
    [ "$(id -u)" -eq 0 ] || fail "up needs root (or CAP_NET_ADMIN)"
    settings
    script=$(up_script)
    printf '%s\n' "$script" | nft -f - || fail "nft refused the ruleset (nothing was changed); '$0 print' shows it"
    # Record the forwarding settings before the first `up` only, so `down` restores the original.
    if [ ! -e "$STATE" ]; then
      mkdir -p "$(dirname "$STATE")"
      { echo "ipv4=$(sysctl_get net.ipv4.ip_forward)"; echo "ipv6=$(sysctl_get net.ipv6.conf.all.forwarding)"; } >"$STATE.tmp"
      mv "$STATE.tmp" "$STATE"
    fi
    sysctl -qw net.ipv4.ip_forward=1
    [ ${#SUBNETS6[@]} -eq 0 ] || sysctl -qw net.ipv6.conf.all.forwarding=1
    others=$(printf '%s\n' "$script" | awk '/^insert rule/ { print $3 " " $4 " " $5 }' | sort -u | tr '\n' ';')
    echo "$ME: forwarding on; ${SUBNETS[*]}${SUBNETS6[*]:+ ${SUBNETS6[*]}} masqueraded out of $OUT, MSS clamped to MTU $MTU (table $TABLE)"
    [ -z "$others" ] || echo "$ME: accept rules (comment \"$TAG\") added to forward chains with policy drop: ${others%;}"
    ;;
  down)
    [ "$(id -u)" -eq 0 ] || fail "down needs root (or CAP_NET_ADMIN)"
    script=$( { nft list table $TABLE >/dev/null 2>&1 && echo "delete table $TABLE"; tagged_deletes; } || true)
    if [ -n "$script" ]; then
      printf '%s\n' "$script" | nft -f - || fail "nft could not remove the rules; '$0 show' lists them"
      echo "$ME: table $TABLE and the \"$TAG\" rules removed"
    else
      echo "$ME: no rules to remove"
    fi
    if [ -e "$STATE" ]; then
      v4=$(sed -n 's/^ipv4=//p' "$STATE"); v6=$(sed -n 's/^ipv6=//p' "$STATE")
      [ -z "$v4" ] || sysctl -qw net.ipv4.ip_forward="$v4"
      [ -z "$v6" ] || sysctl -qw net.ipv6.conf.all.forwarding="$v6"
      rm -f "$STATE"
      echo "$ME: forwarding restored (net.ipv4.ip_forward=${v4:-unchanged}, net.ipv6.conf.all.forwarding=${v6:-unchanged})"
    else
      echo "$ME: no record of the forwarding settings before 'up' ($STATE); left as they are"
    fi
    ;;
  show)
    [ "$(id -u)" -eq 0 ] || fail "show needs root (or CAP_NET_ADMIN) to read the ruleset"
    nft list table $TABLE 2>/dev/null || echo "$ME: table $TABLE is not loaded"
    nft -a list ruleset 2>/dev/null | grep -F "comment \"$TAG\"" || true
    ;;
  install)
    settings
    mkdir -p "$(dirname "$DEST")" "$(dirname "$SYSCTL_DEST")"
    ruleset >"$DEST.tmp" && mv "$DEST.tmp" "$DEST"
    {
      echo "# TunnelVision (scripts/router-nat.sh install): forwarding for the tunnel subnets."
      echo "net.ipv4.ip_forward = 1"
      [ ${#SUBNETS6[@]} -eq 0 ] || echo "net.ipv6.conf.all.forwarding = 1"
    } >"$SYSCTL_DEST.tmp" && mv "$SYSCTL_DEST.tmp" "$SYSCTL_DEST"
    self=$(readlink -f "$0")
    # The unit runs before tunneld has made its interface: it gets the MTU found now.
    [[ " ${ARGS[*]} " == *" --mtu "* ]] || ARGS+=(--mtu "$MTU")
    mkdir -p "$(dirname "$UNIT_DEST")"
    {
      echo "# TunnelVision router rules at boot (written by router-nat.sh install)."
      echo "[Unit]"
      echo "Description=TunnelVision forwarding, NAT and MSS clamp (nftables table inet tunnelvision)"
      echo "Documentation=file://$self"
      echo "After=nftables.service network-online.target"
      echo "Wants=network-online.target"
      echo "Before=tunneld.service"
      echo ""
      echo "[Service]"
      echo "Type=oneshot"
      echo "RemainAfterExit=yes"
      args=""; [ ${#ARGS[@]} -eq 0 ] || args=$(printf ' %q' "${ARGS[@]}")
      echo "ExecStart=$self up$args"
      echo "ExecStop=$self down$(printf ' %q' "--state" "$STATE")"
      echo ""
      echo "[Install]"
      echo "WantedBy=multi-user.target"
    } >"$UNIT_DEST.tmp" && mv "$UNIT_DEST.tmp" "$UNIT_DEST"
    echo "$ME: wrote $DEST, $SYSCTL_DEST and $UNIT_DEST (uplink $OUT, MSS clamped for tunnel MTU $MTU; --mtu N to change)"
    echo "$ME: at boot: systemctl enable tunnelvision-nat (re-applies all of 'up', also in other tables' drop chains)"
    if [ "$DEST" = /etc/nftables.d/tunnelvision.nft ] && ! grep -qs 'include "/etc/nftables.d/' /etc/nftables.conf; then
      echo "$ME: /etc/nftables.conf does not include /etc/nftables.d: add the line" >&2
      echo "    include \"/etc/nftables.d/*.nft\"" >&2
      echo "  to it and enable nftables.service, so the ruleset loads at boot" >&2
    fi
    chains=$(drop_chains || true)
    if [ -n "$chains" ] && [ "$OWN_ONLY" -eq 0 ]; then
      echo "$ME: these forward chains have policy drop and are not ours: enable tunnelvision-nat.service," >&2
      echo "  or add the accept rules to their own configuration so they persist:" >&2
      while read -r fam tab ch; do
        echo "  table $fam $tab, chain $ch (at its top):" >&2
        accept_rules "$fam" "$tab" "$ch" | sed 's/^insert rule [^ ]* [^ ]* [^ ]* /    /' >&2
      done <<<"$chains"
    fi
    ;;
  uninstall)
    for f in "$DEST" "$SYSCTL_DEST" "$UNIT_DEST"; do
      if [ -e "$f" ]; then
        grep -qs 'router-nat.sh' "$f" || fail "$f was not written by $ME; not removing it"
        rm -f "$f"; echo "$ME: removed $f"
      fi
    done
    echo "$ME: the running rules stay until '$0 down' (or a reboot)"
    ;;
esac
