# Shared build steps for the fuzz harnesses (source it from a fuzz/*/run.sh, under bash).
#
#   . "$(dirname "$0")/../lib.sh"     # cds to the repository root, puts the toolchain on PATH
#   fuzz_init ring                    # output directory: .build/fuzz/ring (sets $FUZZ_OUT)
#   fuzz_cshims                       # CShims' C files -> libCShims.a + a module map
#   fuzz_ctarget CAEAD tv_aead.h      # any C target likewise
#   fuzz_module Core                  # Sources/Core/*.swift -> libCore.a + Core.swiftmodule
#   fuzz_module Runtime
#   swiftc $FUZZ_SWIFT_FLAGS $FUZZ_IMPORTS harness.swift … $FUZZ_LIBS -o "$FUZZ_OUT/x"
#   fuzz_time_args 30 "$@"            # -> FUZZ_ARGS: a first numeric argument N becomes
#                                     #    -max_total_time=N; no arguments -> the default
#
#   fuzz_link "$FUZZ_OUT/x" ARGS…     # swiftc ARGS… -o x, skipped when x is up to date
#
# Modules must be built in dependency order (Core, CShims, Runtime, Packet, …): each is compiled
# against the ones before it. Everything is instrumented for libFuzzer and AddressSanitizer.
#
# Built modules are cached in .build/fuzz/_modules, keyed by a hash of their sources, the flags
# and the modules built before them, and shared by every harness (a lock makes two harnesses
# building at once wait for one compile). `fuzz_link` likewise skips a harness whose inputs did
# not change. FUZZ_BUILD_ONLY=1 makes `fuzz_time_args` exit after the build (fuzz/smoke.sh uses
# it), so every run.sh must call `fuzz_time_args` after building and before running.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH=/opt/swift/usr/bin:$PATH

FUZZ_SWIFT_FLAGS="-parse-as-library -sanitize=fuzzer,address -O -g"
FUZZ_LIBS=""        # static libraries built so far, dependents first (the order ld wants)
FUZZ_IMPORTS=""     # -I / module-map flags so later modules and the harness can import them
FUZZ_CHAIN=""       # cache keys of the modules built so far (a module's key includes them)
FUZZ_CACHE=.build/fuzz/_modules

# A short hash of stdin.
fuzz_hash() { sha1sum | cut -c1-16; }

# Runs "$@" (a build step that creates everything in directory $2) once per key $1 across all
# harnesses: the directory is marked done when the step succeeds; a lock serialises builders.
fuzz_cached() {
    local dir=$1; shift
    mkdir -p "$FUZZ_CACHE"
    (
        flock 9
        if [ ! -e "$dir/.done" ]; then
            rm -rf "$dir"; mkdir -p "$dir"
            "$@"
            touch "$dir/.done"
        fi
    ) 9>"$dir.lock"
}

fuzz_init() {
    FUZZ_OUT=.build/fuzz/$1
    mkdir -p "$FUZZ_OUT/corpus"
    FUZZ_IMPORTS="-I $FUZZ_OUT"
    FUZZ_LIBS=""
}

# A C target of Package.swift (Sources/NAME/*.c, headers in Sources/NAME/include): every C file
# compiled with ASan (+ fuzzer coverage), archived, and its umbrella header UMBRELLA exposed through
# a module map named NAME in the output directory. Extra arguments go to clang.
fuzz_ctarget() {
    local name=$1 umbrella=$2; shift 2
    local key dir
    key=$( { echo "$name $* $FUZZ_SWIFT_FLAGS"; clang --version; cat Sources/"$name"/*.c Sources/"$name"/include/*.h; } | fuzz_hash)
    dir=$FUZZ_CACHE/$name-$key
    fuzz_cached "$dir" fuzz_build_ctarget "$dir" "$name" "$@"
    cp -f "$dir/lib$name.a" "$FUZZ_OUT/lib$name.a"
    mkdir -p "$FUZZ_OUT/$name.modulemap.d"
    printf 'module %s {\n  header "%s/Sources/%s/include/%s"\n  export *\n}\n' "$name" "$PWD" "$name" "$umbrella" \
        > "$FUZZ_OUT/$name.modulemap.d/module.modulemap"
    FUZZ_IMPORTS="$FUZZ_IMPORTS -Xcc -fmodule-map-file=$FUZZ_OUT/$name.modulemap.d/module.modulemap"
    FUZZ_LIBS="$FUZZ_OUT/lib$name.a $FUZZ_LIBS"
    FUZZ_CHAIN="$FUZZ_CHAIN $name-$key"
}

fuzz_build_ctarget() {
    local dir=$1 name=$2 c objs=(); shift 2
    for c in Sources/"$name"/*.c; do
        clang -O1 -g -fsanitize=address,fuzzer-no-link -I Sources/"$name"/include "$@" \
            -c "$c" -o "$dir/$(basename "$c" .c).o"
        objs+=("$dir/$(basename "$c" .c).o")
    done
    ar rcs "$dir/lib$name.a" "${objs[@]}"
}

# CShims (tiny C for Runtime and LiveFeed).
fuzz_cshims() { fuzz_ctarget CShims CShims.h; }

# A Swift module from Sources/NAME (Swift 6 mode, as Package.swift builds it). Extra arguments
# go to swiftc (e.g. -I Sources/CSodium).
fuzz_module() {
    local name=$1; shift
    local key dir
    [ "$name" != Runtime ] || set -- -I "$PWD/Sources/CSystemd" "$@"
    key=$( { echo "$name|$*|$FUZZ_SWIFT_FLAGS|$FUZZ_CHAIN"; swiftc --version 2>&1; cat Sources/"$name"/*.swift; } | fuzz_hash)
    dir=$FUZZ_CACHE/$name-$key
    # shellcheck disable=SC2086
    fuzz_cached "$dir" swiftc $FUZZ_SWIFT_FLAGS -swift-version 6 -enable-upcoming-feature ExistentialAny -wmo \
        $FUZZ_IMPORTS "$@" \
        -emit-library -static -emit-module -module-name "$name" \
        -emit-module-path "$dir/$name.swiftmodule" \
        Sources/"$name"/*.swift -o "$dir/lib$name.a"
    cp -f "$dir"/"$name".* "$dir/lib$name.a" "$FUZZ_OUT/"
    FUZZ_LIBS="$FUZZ_OUT/lib$name.a $FUZZ_LIBS"
    # Runtime's Logger sends journald events through libsystemd (CSystemd, a system library):
    # whatever imports Runtime needs its module map, and the link needs -lsystemd.
    if [ "$name" = Runtime ]; then
        FUZZ_IMPORTS="$FUZZ_IMPORTS -I $PWD/Sources/CSystemd"
        FUZZ_LIBS="$FUZZ_LIBS -lsystemd"
    fi
    FUZZ_CHAIN="$FUZZ_CHAIN $name-$key"
}

# swiftc "${@:2}" -o "$1", skipped when $1 was built from the same arguments and inputs (every
# argument that is a file is hashed, libraries included).
fuzz_link() {
    local out=$1; shift
    local key a
    key=$( { echo "$* $FUZZ_CHAIN"; for a in "$@"; do if [ -f "$a" ]; then cat "$a"; fi; done; } | fuzz_hash)
    if [ -x "$out" ] && [ "$(cat "$out.key" 2>/dev/null)" = "$key" ]; then return 0; fi
    swiftc "$@" -o "$out"
    echo "$key" > "$out.key"
}

# FUZZ_ARGS from a run.sh's arguments: `N` -> -max_total_time=N (rest passed through);
# none -> -max_total_time=DEFAULT; otherwise the arguments as given (libFuzzer options).
fuzz_time_args() {
    local default=$1; shift
    if [ "${FUZZ_BUILD_ONLY:-}" = 1 ]; then exit 0; fi
    if [ $# -eq 0 ]; then
        FUZZ_ARGS=(-max_total_time="$default")
    elif [[ $1 =~ ^[0-9]+$ ]]; then
        FUZZ_ARGS=(-max_total_time="$1" "${@:2}")
    else
        FUZZ_ARGS=("$@")
    fi
}
