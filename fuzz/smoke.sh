#!/usr/bin/env bash
# The fuzz smoke run (issue 13): builds every harness fuzz/*/run.sh once, then runs each for
# SECONDS (default 20) from its corpus and seeds, two at a time, and fails if any crashed, timed
# out or did not build. One line per harness: name, executions, result. A new harness is picked
# up by itself: any fuzz/NAME/run.sh that calls `fuzz_time_args` after building (fuzz/lib.sh).
#   fuzz/smoke.sh [SECONDS]          JOBS=1 fuzz/smoke.sh 5   (one at a time)
# Logs and crash artifacts: .build/fuzz-smoke/NAME.{build,run}.log, .build/fuzz-smoke/NAME-crash-*.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
jobs=${JOBS:-2}
out=.build/fuzz-smoke
rm -rf "$out"; mkdir -p "$out"
names=()
for r in fuzz/*/run.sh; do names+=("$(basename "$(dirname "$r")")"); done
[ ${#names[@]} -gt 0 ] || { echo "fuzz smoke: no harness under fuzz/*/run.sh"; exit 1; }
start=$(date +%s)

# Phase 1: build (shared modules are cached by fuzz/lib.sh, so the first harness to need Core
# builds it and the others reuse it).
build_one() {
    local name=$1 t0; t0=$(date +%s)
    if FUZZ_BUILD_ONLY=1 bash "fuzz/$name/run.sh" > "$out/$name.build.log" 2>&1; then
        echo "ok $(( $(date +%s) - t0 ))" > "$out/$name.build"
    else
        echo "failed $(( $(date +%s) - t0 ))" > "$out/$name.build"
    fi
}
# Phase 2: run from the corpus for $seconds; a crash, leak, timeout or OOM exits non-zero.
run_one() {
    local name=$1
    grep -q '^ok' "$out/$name.build" || return 0
    timeout -k 10 $(( seconds * 3 + 60 )) bash "fuzz/$name/run.sh" "$seconds" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$out/$name-" > "$out/$name.run.log" 2>&1
    echo $? > "$out/$name.rc"
}
export -f build_one run_one
export out seconds
printf '%s\n' "${names[@]}" | xargs -P "$jobs" -I{} bash -c 'build_one {}'
built=$(date +%s)
printf '%s\n' "${names[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one {}'

failed=0
for name in "${names[@]}"; do
    read -r bstatus bsecs < "$out/$name.build"
    if [ "$bstatus" != ok ]; then
        printf 'fuzz %-10s build FAILED after %ss (see %s)\n' "$name" "$bsecs" "$out/$name.build.log"
        tail -5 "$out/$name.build.log" | sed 's/^/    /'
        failed=$((failed + 1)); continue
    fi
    rc=$(cat "$out/$name.rc" 2>/dev/null || echo 1)
    log=$out/$name.run.log
    execs=$(grep -oE '^Done [0-9]+ runs' "$log" | grep -oE '[0-9]+' | tail -1)
    [ -n "$execs" ] || execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
    if [ "$rc" = 0 ] && ! grep -qE '==ERROR|deadly signal|Program crashed' "$log"; then
        printf 'fuzz %-10s %10s executions in %ss: ok\n' "$name" "${execs:-0}" "$seconds"
    else
        what=$(grep -m1 -oE 'ERROR: [A-Za-z]+: [a-z-]+|deadly signal|Program crashed: [^*]*|timeout|out-of-memory' "$log" || echo "exit $rc")
        printf 'fuzz %-10s %10s executions: FAILED (%s); input %s\n' "$name" "${execs:-0}" "$what" \
            "$(ls "$out/$name"-* 2>/dev/null | head -1)"
        failed=$((failed + 1))
    fi
done
end=$(date +%s)
echo "fuzz smoke: ${#names[@]} harnesses, build $((built - start))s, runs $((end - built))s; $(( ${#names[@]} - failed )) passed, $failed failed"
[ "$failed" -eq 0 ]
