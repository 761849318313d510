# Assertion helpers for the end-to-end scripts. Source after topology.sh.
TV_PASS=0; TV_FAIL=0
tv_ok()   { TV_PASS=$((TV_PASS+1)); printf '  ok    %s\n' "$1"; }
tv_bad()  { TV_FAIL=$((TV_FAIL+1)); printf '  FAIL  %s\n' "$1"; [ -z "${2:-}" ] || printf '%s\n' "$2" | sed 's/^/        /'; }
# check NAME CMD...: passes when CMD exits 0.
check() { local name=$1; shift; local out; if out=$("$@" 2>&1); then tv_ok "$name"; else tv_bad "$name" "$(printf '%s' "$out" | tail -n 8)"; fi; }
# check_output NAME REGEX CMD...: passes when CMD's output (stdout+stderr) matches REGEX (exit code ignored).
check_output() { local name=$1 re=$2; shift 2; local out; out=$("$@" 2>&1 || true); if printf '%s' "$out" | grep -Eq -- "$re"; then tv_ok "$name"; else tv_bad "$name" "expected /$re/, got: $(printf '%s' "$out" | tail -n 8)"; fi; }
# check_exit NAME CODE CMD...: passes when CMD exits with CODE.
check_exit() { local name=$1 want=$2; shift 2; local out rc=0; out=$("$@" 2>&1) || rc=$?; if [ "$rc" = "$want" ]; then tv_ok "$name"; else tv_bad "$name" "exit $rc, wanted $want: $(printf '%s' "$out" | tail -n 5)"; fi; }
# wait_for SECS CMD...: retries CMD every 0.5 s until it succeeds or SECS pass.
wait_for() { local secs=$1; shift; local end=$((SECONDS+secs)); while [ $SECONDS -lt $end ]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done; "$@"; }
# The result line names the script that was run: TV_SCRIPT when one script runs another's checks.
tv_summary() { echo "${TV_SCRIPT:-$(basename "$0")}: $TV_PASS passed, $TV_FAIL failed"; [ "$TV_FAIL" -eq 0 ]; }
