#!/usr/bin/env bash
# Installs TunnelVision to the usual FHS paths, or removes exactly what an earlier run installed.
#
#   scripts/install.sh [--no-build]      build (release, static) if needed, then install
#   scripts/install.sh --uninstall       remove what the manifest lists (changed config kept)
#   --allow-toolchain-libs               install binaries that need the Swift toolchain's libraries
#                                        (a `swift build` dev build): they run only while /opt/swift
#                                        is there. Without it, such binaries are refused.
#
# On a router, prefer the Debian package (scripts/package.sh, docs/packaging.md). This script is
# for source installs: its default build is scripts/build-static.sh (Swift runtime linked in,
# only Debian's libraries dynamic), so the installed binaries outlive the toolchain.
#
# Environment, as packagers expect:
#   PREFIX=/usr/local   where bin/, share/man, share/doc, completions go
#   DESTDIR=            staging root prepended to every path (nothing is run from it)
#   SYSCONFDIR=/etc     where tunnelvision/ (configuration, policies) goes
#   BUILD_DIR=.build/static/release   where tunneld and tunnelctl are taken from
#
# What goes where (PREFIX=/usr/local):
#   bin/tunneld, bin/tunnelctl                      the binaries
#   share/man/man8/tunneld.8, tunnelctl.8           man pages (man5: tunneld.conf.5, tunnelvision-rules.5)
#   share/bash-completion/completions/tunnelctl     bash completion
#   share/zsh/site-functions/_tunnelctl             zsh completion (share/zsh/vendor-completions for /usr)
#   share/doc/tunnelvision/                         README.md, docs/*.md, examples/ (a full tunneld.conf,
#                                                   rules naming peers), grafana/ dashboard, prometheus/ alert rules
#   lib/tunnelvision/router-nat.sh                  forwarding/NAT helper (router-nat.sh --help)
#   /etc/systemd/system/tunneld.service             the unit, paths set to PREFIX (lib/systemd/system for /usr)
#   SYSCONFDIR/tunnelvision/policies/               the default policy set, only when absent: an existing
#                                                   set is never overwritten (`tunnelctl init` writes the
#                                                   configuration and key)
# The manifest share/tunnelvision/install-manifest lists every file with its SHA-256 and every
# directory the install created; --uninstall removes those files (a configuration file that was
# edited since is kept, and said so), then the directories it created if they are empty.
set -euo pipefail
cd "$(dirname "$0")/.."
ME=install
PREFIX=${PREFIX:-/usr/local}
PREFIX=${PREFIX%/}
DESTDIR=${DESTDIR:-}
DESTDIR=${DESTDIR%/}
SYSCONFDIR=${SYSCONFDIR:-/etc}
SYSCONFDIR=${SYSCONFDIR%/}
BUILD_DIR_GIVEN=${BUILD_DIR:+1}
BUILD_DIR=${BUILD_DIR:-.build/static/release}
MANIFEST=$PREFIX/share/tunnelvision/install-manifest

mode=install; build=1; toolchain_libs=0
for a in "$@"; do
  case "$a" in
    --uninstall) mode=uninstall ;;
    --no-build) build=0 ;;
    --allow-toolchain-libs) toolchain_libs=1 ;;
    # The comment block at the top, without the shebang and without the code after it.
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "$ME: unknown argument '$a' (--uninstall, --no-build, --allow-toolchain-libs, --help)" >&2; exit 2 ;;
  esac
done
[[ $PREFIX == /* ]] || { echo "$ME: PREFIX must be an absolute path (got '$PREFIX')" >&2; exit 2; }

if [ "$PREFIX" = /usr ]; then
  UNITDIR=/usr/lib/systemd/system; ZSHDIR=$PREFIX/share/zsh/vendor-completions
else
  UNITDIR=/etc/systemd/system; ZSHDIR=$PREFIX/share/zsh/site-functions
fi

sha() { sha256sum "$1" | cut -d' ' -f1; }

if [ "$mode" = uninstall ]; then
  m=$DESTDIR$MANIFEST
  [ -f "$m" ] || { echo "$ME: no manifest at $m: nothing installed there (same PREFIX and DESTDIR as the install?)" >&2; exit 1; }
  dirs=()
  while IFS=' ' read -r kind sum path; do
    case "$kind" in
      file|conf)
        f=$DESTDIR$path
        [ -e "$f" ] || continue
        if [ "$kind" = conf ] && [ "$(sha "$f")" != "$sum" ]; then
          echo "$ME: keeping $path (changed since it was installed)"
          continue
        fi
        rm -f "$f" ;;
      dir) dirs+=("$DESTDIR$path") ;;
    esac
  done <"$m"
  rm -f "$m"
  # Deepest first; only the directories the install created, and only when empty.
  for ((i = ${#dirs[@]} - 1; i >= 0; i--)); do rmdir "${dirs[i]}" 2>/dev/null || true; done
  echo "$ME: removed what $MANIFEST listed${DESTDIR:+ (under $DESTDIR)}"
  exit 0
fi

if [ ! -x "$BUILD_DIR/tunneld" ] || [ ! -x "$BUILD_DIR/tunnelctl" ]; then
  if [ "$build" -eq 0 ] || [ -n "$BUILD_DIR_GIVEN" ]; then
    for b in tunneld tunnelctl; do
      [ -x "$BUILD_DIR/$b" ] || { echo "$ME: $BUILD_DIR/$b missing (build with: scripts/build-static.sh)" >&2; exit 1; }
    done
  fi
  echo "$ME: building tunneld and tunnelctl (release, static Swift runtime)" >&2
  BUILD_DIR=$(bash scripts/build-static.sh | tail -1)
fi
# Binaries that load libswiftCore.so & co. from /opt/swift die (exit 127) once the toolchain is
# gone or on a router that never had it: refused unless asked for.
if ! libs=$(bash scripts/lib/check-libs.sh "$BUILD_DIR/tunneld" "$BUILD_DIR/tunnelctl" 2>&1); then
  if [ "$toolchain_libs" -eq 1 ]; then
    echo "$ME: WARNING: installing binaries that need libraries outside the system (--allow-toolchain-libs):" >&2
    printf '%s\n' "$libs" | sed 's/^/  /' >&2
  else
    echo "$ME: refusing to install $BUILD_DIR/tunneld and tunnelctl: they need libraries outside the system:" >&2
    printf '%s\n' "$libs" | sed 's/^/  /' >&2
    echo "$ME: build them with scripts/build-static.sh (the default when BUILD_DIR is not set), or pass --allow-toolchain-libs" >&2
    exit 1
  fi
fi

entries=()
old_conf=()
[ -f "$DESTDIR$MANIFEST" ] && mapfile -t old_conf < <(grep '^conf ' "$DESTDIR$MANIFEST" || true)
newdirs=()
[ -f "$DESTDIR$MANIFEST" ] && mapfile -t newdirs < <(grep '^dir ' "$DESTDIR$MANIFEST" | cut -d' ' -f3- || true)

[ -z "$DESTDIR" ] || mkdir -p "$DESTDIR"
# Creates directory $1 (a path without DESTDIR) and the missing ones above it, recording them.
mkdirs() {
  local d=$1 missing=()
  while [ "$d" != / ] && [ ! -d "$DESTDIR$d" ]; do missing=("$d" "${missing[@]}"); d=$(dirname "$d"); done
  for d in "${missing[@]}"; do mkdir -m "${2:-0755}" "$DESTDIR$d"; newdirs+=("$d"); done
}

# put MODE SOURCE TARGET: installs a file (target without DESTDIR), replacing an earlier copy.
put() {
  mkdirs "$(dirname "$3")"
  install -m "$1" "$2" "$DESTDIR$3"
  entries+=("file $(sha "$DESTDIR$3") $3")
}

# conf MODE SOURCE TARGET: a configuration file, installed only when none exists.
conf() {
  if [ -e "$DESTDIR$3" ]; then
    local e
    for e in "${old_conf[@]}"; do [ "${e##* }" = "$3" ] && entries+=("$e"); done
    echo "$ME: $3 exists; left as it is"
    return
  fi
  mkdirs "$(dirname "$3")" 0750
  install -m "$1" "$2" "$DESTDIR$3"
  entries+=("conf $(sha "$DESTDIR$3") $3")
}

put 0755 "$BUILD_DIR/tunneld" "$PREFIX/bin/tunneld"
put 0755 "$BUILD_DIR/tunnelctl" "$PREFIX/bin/tunnelctl"
put 0755 scripts/router-nat.sh "$PREFIX/lib/tunnelvision/router-nat.sh"
for p in man/*.8; do put 0644 "$p" "$PREFIX/share/man/man8/$(basename "$p")"; done
for p in man/*.5; do put 0644 "$p" "$PREFIX/share/man/man5/$(basename "$p")"; done
put 0644 completion/tunnelctl.bash "$PREFIX/share/bash-completion/completions/tunnelctl"
put 0644 completion/_tunnelctl "$ZSHDIR/_tunnelctl"
put 0644 README.md "$PREFIX/share/doc/tunnelvision/README.md"
for p in docs/*.md; do put 0644 "$p" "$PREFIX/share/doc/tunnelvision/docs/$(basename "$p")"; done
put 0644 examples/tunneld.conf "$PREFIX/share/doc/tunnelvision/examples/tunneld.conf"
for p in examples/policies/*.rules; do put 0644 "$p" "$PREFIX/share/doc/tunnelvision/examples/policies/$(basename "$p")"; done
put 0644 etc/grafana/tunnelvision-dashboard.json "$PREFIX/share/doc/tunnelvision/grafana/tunnelvision-dashboard.json"
put 0644 etc/prometheus/tunnelvision.rules.yml "$PREFIX/share/doc/tunnelvision/prometheus/tunnelvision.rules.yml"

# The unit, with the binaries and documentation where this PREFIX puts them.
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
sed "s|/usr/local/|$PREFIX/|g; s|/etc/tunnelvision/|$SYSCONFDIR/tunnelvision/|g" etc/tunneld.service >"$tmp"
put 0644 "$tmp" "$UNITDIR/tunneld.service"

if [ -e "$DESTDIR$SYSCONFDIR/tunnelvision/policies" ] && ! grep -q "^conf .* $SYSCONFDIR/tunnelvision/policies/" <(printf '%s\n' "${old_conf[@]}"); then
  echo "$ME: $SYSCONFDIR/tunnelvision/policies exists; left as it is"
else
  for p in policies/*.rules; do conf 0644 "$p" "$SYSCONFDIR/tunnelvision/policies/$(basename "$p")"; done
fi

mkdirs "$(dirname "$MANIFEST")"
{
  printf '%s\n' "${entries[@]}"
  # Every directory created by this or an earlier install, once, in creation order.
  printf '%s\n' "${newdirs[@]}" | awk 'NF && !seen[$0]++ { print "dir - " $0 }'
} >"$DESTDIR$MANIFEST"
echo "$ME: installed under ${DESTDIR}${PREFIX} (manifest $MANIFEST)"
if [ -z "$DESTDIR" ]; then
  cat <<EOF
next:
  tunnelctl init --config $SYSCONFDIR/tunnelvision/tunneld.conf    (key, configuration; --help)
  systemctl daemon-reload && systemctl enable --now tunneld
  tunnelctl peer add phone --qr
EOF
fi
