#!/usr/bin/env bash
# Whether binaries need only the system's libraries: exits 1, naming each binary and library,
# when one of them needs a shared library that is not found or is found outside /lib, /usr/lib
# (and their multiarch directories), e.g. libswiftCore.so from /opt/swift. Also looks at DT_RUNPATH /
# DT_RPATH, which would make the result depend on where the binary runs.
#   scripts/lib/check-libs.sh BINARY…
set -uo pipefail
bad=0
for b in "$@"; do
  if [ ! -f "$b" ]; then echo "check-libs: $b: no such file" >&2; bad=1; continue; fi
  # ld.so's own answer (ldd), without the toolchain on LD_LIBRARY_PATH.
  while read -r line; do
    case "$line" in
      *"=> not found"*) echo "check-libs: $b needs ${line%% *}, which is not found" >&2; bad=1 ;;
      *" => /"*)
        path=${line#* => }; path=${path%% (*}
        case "$path" in
          /lib/*|/usr/lib/*|/lib64/*|/usr/lib64/*) ;;
          *) echo "check-libs: $b needs $path (not a system library: install the Debian package, or build with scripts/build-static.sh)" >&2; bad=1 ;;
        esac ;;
    esac
  done < <(env -u LD_LIBRARY_PATH ldd "$b" 2>/dev/null)
  rpath=$(readelf -d "$b" 2>/dev/null | grep -E '\((RUNPATH|RPATH)\)' | sed 's/.*\[\(.*\)\]/\1/')
  if [ -n "$rpath" ]; then echo "check-libs: $b has a run path ($rpath): it finds libraries where it was built" >&2; bad=1; fi
done
exit $bad
