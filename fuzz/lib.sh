# Shared build steps for the fuzz harnesses (source it from a fuzz/*/run.sh, under bash).
#
#   . "$(dirname "$0")/../lib.sh"     # cds to the repository root, puts the toolchain on PATH
#   fuzz_init ring                    # output directory: .build/fuzz/ring (sets $FUZZ_OUT)
#   fuzz_cshims                       # CShims' C files -> libCShims.a + a module map
#   fuzz_module Core                  # Sources/Core/*.swift -> libCore.a + Core.swiftmodule
#   fuzz_module Runtime
#   swiftc $FUZZ_SWIFT_FLAGS $FUZZ_IMPORTS harness.swift … $FUZZ_LIBS -o "$FUZZ_OUT/x"
#   fuzz_time_args 30 "$@"            # -> FUZZ_ARGS: a first numeric argument N becomes
#                                     #    -max_total_time=N; no arguments -> the default
#
# Modules must be built in dependency order (Core, CShims, Runtime, Packet, …): each is compiled
# against the ones before it. Everything is instrumented for libFuzzer and AddressSanitizer.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH=/opt/swift/usr/bin:$PATH

FUZZ_SWIFT_FLAGS="-parse-as-library -sanitize=fuzzer,address -O -g"
FUZZ_LIBS=""        # static libraries built so far, dependents first (the order ld wants)
FUZZ_IMPORTS=""     # -I / module-map flags so later modules and the harness can import them

fuzz_init() {
    FUZZ_OUT=.build/fuzz/$1
    mkdir -p "$FUZZ_OUT/corpus"
    FUZZ_IMPORTS="-I $FUZZ_OUT"
    FUZZ_LIBS=""
}

# CShims: compile every C file with ASan (+ fuzzer coverage), archive them, and expose the
# umbrella header through a module map in the output directory.
fuzz_cshims() {
    local c objs=()
    for c in Sources/CShims/*.c; do
        clang -O1 -g -fsanitize=address,fuzzer-no-link -I Sources/CShims/include \
            -c "$c" -o "$FUZZ_OUT/$(basename "$c" .c).o"
        objs+=("$FUZZ_OUT/$(basename "$c" .c).o")
    done
    rm -f "$FUZZ_OUT/libCShims.a"
    ar rcs "$FUZZ_OUT/libCShims.a" "${objs[@]}"
    mkdir -p "$FUZZ_OUT/cshims"
    printf 'module CShims {\n  header "%s/Sources/CShims/include/CShims.h"\n  export *\n}\n' "$PWD" \
        > "$FUZZ_OUT/cshims/module.modulemap"
    FUZZ_IMPORTS="$FUZZ_IMPORTS -Xcc -fmodule-map-file=$FUZZ_OUT/cshims/module.modulemap"
    FUZZ_LIBS="$FUZZ_OUT/libCShims.a $FUZZ_LIBS"
}

# A Swift module from Sources/NAME (Swift 6 mode, as Package.swift builds it). Extra arguments
# go to swiftc (e.g. -I Sources/CSodium).
fuzz_module() {
    local name=$1; shift
    # shellcheck disable=SC2086
    swiftc $FUZZ_SWIFT_FLAGS -swift-version 6 -enable-upcoming-feature ExistentialAny -wmo \
        $FUZZ_IMPORTS "$@" \
        -emit-library -static -emit-module -module-name "$name" \
        -emit-module-path "$FUZZ_OUT/$name.swiftmodule" \
        Sources/"$name"/*.swift -o "$FUZZ_OUT/lib$name.a"
    FUZZ_LIBS="$FUZZ_OUT/lib$name.a $FUZZ_LIBS"
}

# FUZZ_ARGS from a run.sh's arguments: `N` -> -max_total_time=N (rest passed through);
# none -> -max_total_time=DEFAULT; otherwise the arguments as given (libFuzzer options).
fuzz_time_args() {
    local default=$1; shift
    if [ $# -eq 0 ]; then
        FUZZ_ARGS=(-max_total_time="$default")
    elif [[ $1 =~ ^[0-9]+$ ]]; then
        FUZZ_ARGS=(-max_total_time="$1" "${@:2}")
    else
        FUZZ_ARGS=("$@")
    fi
}
